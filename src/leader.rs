//! Leader election on a coordination Lease, so that two replicas never act at once.
//!
//! Like client-go's leader election, expiry is judged by when *this* replica last saw
//! the Lease change, never by comparing another replica's clock with ours.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::time::{Instant, sleep};
use tracing::{info, warn};

use crate::{Error, Result};

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
}

impl LeaderElector {
    pub fn new(api: Api<Lease>, name: &str, identity: &str, timing: LeaseTiming) -> Self {
        LeaderElector {
            api,
            name: name.into(),
            identity: identity.into(),
            timing,
            observed: None,
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
            match self.try_acquire_or_renew().await {
                Ok(true) => {
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
    /// replica took it; returns the reason leadership was lost.
    pub async fn hold(&mut self) -> Error {
        let mut last_renewed = Instant::now();
        loop {
            sleep(self.timing.renew_every).await;
            // A renewal that hangs past the Lease's validity must not let this replica
            // go on acting while a standby takes over: each try has that deadline.
            let deadline = last_renewed + self.timing.duration;
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
                Ok(true) => last_renewed = Instant::now(),
                Ok(false) => {
                    return Error::LeadershipLost(format!(
                        "Lease {} taken by another replica",
                        self.name
                    ));
                }
                Err(error) => {
                    warn!(%error, "renewing the leader Lease failed");
                    if last_renewed.elapsed() >= self.timing.duration {
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
    use super::*;

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
