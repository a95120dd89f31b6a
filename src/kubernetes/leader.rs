//! Leader election on a coordination Lease, so that two replicas never act at once.
//!
//! Like client-go's leader election, expiry is judged by when *this* replica last saw
//! the Lease change, never by comparing another replica's clock with ours.
//!
//! A replica that was paused (SIGSTOP, a frozen VM, a long GC-like stall) wakes up with
//! reconciles half done and writes ready to go, while a standby may already hold the
//! Lease. The renewal loop notices only when it next runs, so every write also passes a
//! [`Fence`]: it is refused once the time this replica may act (the start of its last
//! successful renewal plus the Lease duration) has run out, before the standby can
//! have taken over.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use http::Request;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::time::{Instant, sleep};
use tower::{Layer, Service};
use tracing::{info, warn};

use crate::{Error, Result};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Until when this replica may write. Without leader election it always may.
#[derive(Clone, Debug)]
pub struct Fence(Option<Arc<Mutex<Option<Instant>>>>);

impl Fence {
    /// No election: every write is let through.
    pub fn open() -> Fence {
        Fence(None)
    }

    /// Elected: no write until leadership is won.
    pub fn closed() -> Fence {
        Fence(Some(Arc::new(Mutex::new(None))))
    }

    /// Whether a write may be sent at `now`.
    pub fn admits(&self, now: Instant) -> bool {
        match &self.0 {
            None => true,
            Some(until) => until
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .is_some_and(|until| now < until),
        }
    }

    fn set(&self, until: Option<Instant>) {
        if let Some(shared) = &self.0 {
            *shared
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = until;
        }
    }
}

/// The Lease writes of the election itself, which the fence must let through.
fn is_lease_write(path: &str) -> bool {
    path.starts_with("/apis/coordination.k8s.io/")
}

/// The client layer that holds every write (exec included) to the fence.
#[derive(Clone)]
pub struct FenceWrites(pub Fence);

impl<S> Layer<S> for FenceWrites {
    type Service = Fenced<S>;

    fn layer(&self, inner: S) -> Fenced<S> {
        Fenced {
            inner,
            fence: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Fenced<S> {
    inner: S,
    fence: Fence,
}

impl<S, B> Service<Request<B>> for Fenced<S>
where
    S: Service<Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<'static, std::result::Result<S::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let path = request.uri().path();
        let write = crate::kubernetes::writes::write_verb(request.method(), path);
        if let Some(verb) = write
            && !is_lease_write(path)
            && !self.fence.admits(Instant::now())
        {
            warn!(
                verb,
                path, "not sending a write: this replica's leadership has run out"
            );
            let refused = Error::LeadershipLost(format!(
                "{verb} {path} refused: this replica's leadership has run out"
            ));
            return Box::pin(std::future::ready(Err(refused.into())));
        }
        let answer = self.inner.call(request);
        Box::pin(async move { answer.await.map_err(Into::into) })
    }
}

/// Timing of the election.
#[derive(Clone, Copy, Debug)]
pub struct LeaseTiming {
    /// How long a Lease stays valid without renewal.
    pub duration: Duration,
    /// How often the holder renews (well under `duration`).
    pub renew_every: Duration,
    /// How often a standby retries.
    pub retry_every: Duration,
}

impl LeaseTiming {
    pub fn from_duration(duration: Duration) -> Self {
        LeaseTiming {
            duration,
            renew_every: duration / 3,
            retry_every: (duration / 7).max(Duration::from_millis(200)),
        }
    }
}

/// What a replica does with the Lease it sees.
#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// Nobody holds it, it is ours, or its holder stopped renewing: take or renew it.
    Take,
    /// Someone else holds it and renewed it recently.
    Wait,
}

/// The election rule: take the Lease when it is free, ours, or unrenewed for longer
/// than its duration since we last saw it change.
pub fn claim(spec: &LeaseSpec, me: &str, unchanged_for: Duration) -> Claim {
    match spec.holder_identity.as_deref() {
        None | Some("") => Claim::Take,
        Some(holder) if holder == me => Claim::Take,
        Some(_) => {
            let duration =
                Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64);
            if unchanged_for > duration {
                Claim::Take
            } else {
                Claim::Wait
            }
        }
    }
}

/// What identifies one renewal of a Lease: its holder and renew time.
type LeaseRecord = (Option<String>, Option<MicroTime>);

/// One replica's view of the election.
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timing: LeaseTiming,
    /// The Lease record last seen, and when we first saw it.
    observed: Option<(LeaseRecord, Instant)>,
    /// When the last successful take or renewal of the Lease started: the standby
    /// counts the Lease's duration from a moment after that, so ours ends first.
    renewed: Instant,
    /// Opened by each successful renewal until the Lease would run out.
    fence: Fence,
}

impl LeaderElector {
    pub fn new(
        api: Api<Lease>,
        name: &str,
        identity: &str,
        timing: LeaseTiming,
        fence: Fence,
    ) -> Self {
        LeaderElector {
            api,
            name: name.into(),
            identity: identity.into(),
            timing,
            observed: None,
            renewed: Instant::now(),
            fence,
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Waits until this replica holds the Lease.
    pub async fn acquire(&mut self) {
        loop {
            // A transient error (the API server restarting, a 429) is one more wait,
            // not the end of the replica.
            let started = Instant::now();
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    self.renewed_at(started);
                    info!(lease = %self.name, identity = %self.identity, "acquired leadership");
                    return;
                }
                Ok(false) => {}
                Err(error) => warn!(%error, lease = %self.name, "trying the leader Lease failed"),
            }
            sleep(self.timing.retry_every).await;
        }
    }

    /// Renews the Lease until that fails for longer than its duration or another
    /// replica took it; returns the reason leadership was lost, with the fence closed.
    pub async fn hold(&mut self) -> Error {
        let lost = self.renew_until_lost().await;
        self.fence.set(None);
        lost
    }

    fn renewed_at(&mut self, started: Instant) {
        self.renewed = started;
        self.fence.set(Some(started + self.timing.duration));
    }

    async fn renew_until_lost(&mut self) -> Error {
        loop {
            sleep(self.timing.renew_every).await;
            // A renewal that hangs past the Lease's validity must not let this replica
            // go on acting while a standby takes over: each try has that deadline.
            let deadline = self.renewed + self.timing.duration;
            let started = Instant::now();
            let renewed = match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await
            {
                Ok(renewed) => renewed,
                Err(_) => {
                    return Error::LeadershipLost(format!(
                        "renewing Lease {} did not finish within its duration",
                        self.name
                    ));
                }
            };
            match renewed {
                Ok(true) => self.renewed_at(started),
                Ok(false) => {
                    return Error::LeadershipLost(format!(
                        "Lease {} taken by another replica",
                        self.name
                    ));
                }
                Err(error) => {
                    warn!(%error, "renewing the leader Lease failed");
                    if self.renewed.elapsed() >= self.timing.duration {
                        return Error::LeadershipLost(format!(
                            "could not renew Lease {}: {error}",
                            self.name
                        ));
                    }
                }
            }
        }
    }

    /// Gives the Lease up so that a standby takes over at once.
    pub async fn release(&mut self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        self.fence.set(None);
        spec.holder_identity = None;
        spec.renew_time = None;
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => info!(lease = %self.name, "released leadership"),
            Err(error) => warn!(%error, "releasing the leader Lease failed"),
        }
    }

    /// One round: returns whether this replica holds the Lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> Result<bool> {
        let now = MicroTime(jiff::Timestamp::now());
        let duration_secs = self.timing.duration.as_secs().max(1) as i32;
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(duration_secs),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return conflict_is_false(self.api.create(&PostParams::default(), &lease).await);
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        let seen = (spec.holder_identity.clone(), spec.renew_time.clone());
        let unchanged_for = match &self.observed {
            Some((last, since)) if *last == seen => since.elapsed(),
            _ => {
                self.observed = Some((seen, Instant::now()));
                Duration::ZERO
            }
        };
        if claim(spec, &self.identity, unchanged_for) == Claim::Wait {
            return Ok(false);
        }
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            spec.holder_identity = Some(self.identity.clone());
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        spec.lease_duration_seconds = Some(duration_secs);
        spec.renew_time = Some(now);
        // The replace carries the resourceVersion we read: a concurrent writer makes it fail.
        conflict_is_false(
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await,
        )
    }
}

fn conflict_is_false(result: kube::Result<Lease>) -> Result<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http::Method;

    use super::*;

    /// The API server behind the fence: counts what reaches it.
    #[derive(Clone, Default)]
    struct Server(Arc<AtomicUsize>);

    impl Service<Request<()>> for Server {
        type Response = ();
        type Error = BoxError;
        type Future = std::future::Ready<std::result::Result<(), BoxError>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<()>) -> Self::Future {
            self.0.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(()))
        }
    }

    /// Sends each request through `fence`; returns which reached the server.
    async fn reached(fence: &Fence, requests: &[(Method, &str)]) -> Vec<bool> {
        let server = Server::default();
        let mut fenced = FenceWrites(fence.clone()).layer(server.clone());
        let mut reached = Vec::new();
        for (method, path) in requests {
            let before = server.0.load(Ordering::SeqCst);
            let request = Request::builder()
                .method(method.clone())
                .uri(*path)
                .body(())
                .unwrap();
            let answer = fenced.call(request).await;
            let arrived = server.0.load(Ordering::SeqCst) > before;
            assert_eq!(answer.is_ok(), arrived, "{method} {path}");
            reached.push(arrived);
        }
        reached
    }

    #[tokio::test]
    async fn the_fence_holds_back_writes_outside_the_lease_and_lets_reads_and_the_election_through()
    {
        let requests = [
            (Method::GET, "/api/v1/namespaces/n/pods"),
            (Method::POST, "/api/v1/namespaces/n/pods"),
            (
                Method::PATCH,
                "/apis/overseer.dev/v1alpha1/namespaces/n/goals/g/status",
            ),
            (Method::GET, "/api/v1/namespaces/n/pods/p/exec"),
            (
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/n/leases/l",
            ),
        ];
        let everything = vec![true; requests.len()];
        let reads_and_election = vec![true, false, false, false, true];

        assert_eq!(
            reached(&Fence::open(), &requests).await,
            everything,
            "no election"
        );
        let fence = Fence::closed();
        assert_eq!(
            reached(&fence, &requests).await,
            reads_and_election,
            "leadership not won yet"
        );
        fence.set(Some(Instant::now() + Duration::from_secs(60)));
        assert_eq!(
            reached(&fence, &requests).await,
            everything,
            "within the Lease"
        );
        fence.set(Some(Instant::now()));
        assert_eq!(
            reached(&fence, &requests).await,
            reads_and_election,
            "the Lease ran out"
        );
        fence.set(None);
        assert_eq!(
            reached(&fence, &requests).await,
            reads_and_election,
            "leadership lost"
        );
    }

    fn held_by(holder: Option<&str>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(String::from),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }
    }

    #[test]
    fn claim_table() {
        let secs = Duration::from_secs;
        let rows = [
            ("free lease", held_by(None), secs(0), Claim::Take),
            ("empty holder", held_by(Some("")), secs(0), Claim::Take),
            ("ours", held_by(Some("me")), secs(0), Claim::Take),
            (
                "ours, long unchanged",
                held_by(Some("me")),
                secs(60),
                Claim::Take,
            ),
            (
                "other, just renewed",
                held_by(Some("other")),
                secs(0),
                Claim::Wait,
            ),
            (
                "other, at the duration",
                held_by(Some("other")),
                secs(15),
                Claim::Wait,
            ),
            (
                "other, past the duration",
                held_by(Some("other")),
                secs(16),
                Claim::Take,
            ),
        ];
        for (name, spec, unchanged_for, expected) in rows {
            assert_eq!(claim(&spec, "me", unchanged_for), expected, "{name}");
        }
    }
}
