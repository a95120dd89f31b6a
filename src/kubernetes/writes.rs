//! Every request the operator sends through its API client passes one layer, which
//! counts the writes (create, update, patch, delete, and exec, which types into a
//! pod) for `overseer_api_writes_total`, and the reads (read, watch) for
//! `overseer_api_reads_total`.
//!
//! The same layer is the crash-injection test mode: with `OVERSEER_CRASH_BEFORE_WRITE=N`
//! the process exits, without unwinding or any further request, just before its Nth
//! write would be sent. Crashing before each write in turn covers every point between
//! two writes, including "the last write landed and its answer was never read", which
//! is the same as a crash before the next one. tests/cluster/crash.rs drives it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use http::{Method, Request};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tower::{Layer, Service};

use crate::metrics::RequestLabels;

/// The environment variable that turns the crash-injection test mode on.
pub const CRASH_BEFORE_WRITE: &str = "OVERSEER_CRASH_BEFORE_WRITE";

/// The exit code of an injected crash, so that a test tells it from a real failure.
pub const CRASH_EXIT_CODE: i32 = 86;

/// What kind of write a request is, or None for a read (get, list, watch).
pub fn write_verb(method: &Method, path: &str) -> Option<&'static str> {
    // Exec is a GET (a websocket upgrade) that delivers input into a pod.
    if path.ends_with("/exec") || path.ends_with("/attach") {
        return Some("exec");
    }
    match *method {
        Method::POST => Some("create"),
        Method::PUT => Some("update"),
        Method::PATCH => Some("patch"),
        Method::DELETE => Some("delete"),
        _ => None,
    }
}

/// What kind of read a request that is not a write is: a watch, or a read (get, list).
fn read_verb(query: Option<&str>) -> &'static str {
    let watching = query.is_some_and(|q| q.split('&').any(|pair| pair == "watch=true"));
    if watching { "watch" } else { "read" }
}

/// The shared count of writes, and the write to crash before, if any.
struct WriteLog {
    count: AtomicU64,
    crash_before: Option<u64>,
    metric: Family<RequestLabels, Counter>,
    reads: Family<RequestLabels, Counter>,
}

impl WriteLog {
    fn record(&self, verb: &'static str, path: &str) {
        let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        if self.crash_before == Some(n) {
            eprintln!("crash injection: exiting before API write {n} ({verb} {path})");
            std::process::exit(CRASH_EXIT_CODE);
        }
        self.metric.get_or_create(&RequestLabels { verb }).inc();
    }
}

/// The layer that wraps the client's service stack.
#[derive(Clone)]
pub struct CountWrites {
    log: Arc<WriteLog>,
}

impl CountWrites {
    /// Counts writes into `metric` and reads into `reads`; crashes before write
    /// `crash_before` when it is set.
    pub fn new(
        metric: Family<RequestLabels, Counter>,
        reads: Family<RequestLabels, Counter>,
        crash_before: Option<u64>,
    ) -> Self {
        CountWrites {
            log: Arc::new(WriteLog {
                count: AtomicU64::new(0),
                crash_before,
                metric,
                reads,
            }),
        }
    }

    /// As `new`, with the crash point read from `OVERSEER_CRASH_BEFORE_WRITE`.
    pub fn from_env(
        metric: Family<RequestLabels, Counter>,
        reads: Family<RequestLabels, Counter>,
    ) -> crate::Result<Self> {
        let crash_before = match std::env::var(CRASH_BEFORE_WRITE) {
            Ok(value) => Some(value.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                crate::Error::Usage(format!(
                    "{CRASH_BEFORE_WRITE} must be a write number of at least 1, not {value:?}"
                ))
            })?),
            Err(_) => None,
        };
        Ok(CountWrites::new(metric, reads, crash_before))
    }
}

impl<S> Layer<S> for CountWrites {
    type Service = WriteCounter<S>;

    fn layer(&self, inner: S) -> WriteCounter<S> {
        WriteCounter {
            inner,
            log: self.log.clone(),
        }
    }
}

#[derive(Clone)]
pub struct WriteCounter<S> {
    inner: S,
    log: Arc<WriteLog>,
}

impl<S, B> Service<Request<B>> for WriteCounter<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> S::Future {
        match write_verb(request.method(), request.uri().path()) {
            Some(verb) => self.log.record(verb, request.uri().path()),
            None => {
                let verb = read_verb(request.uri().query());
                self.log.reads.get_or_create(&RequestLabels { verb }).inc();
            }
        }
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_verb_table() {
        let pods = "/api/v1/namespaces/n/pods";
        let rows = [
            (Method::GET, pods, None),
            (Method::GET, "/api/v1/namespaces/n/pods/p/log", None),
            (Method::POST, pods, Some("create")),
            (
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/n/leases/l",
                Some("update"),
            ),
            (
                Method::PATCH,
                "/apis/overseer.dev/v1alpha1/namespaces/n/goals/g/status",
                Some("patch"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/n/pods/p",
                Some("delete"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/n/pods/p/exec",
                Some("exec"),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/n/pods/p/exec",
                Some("exec"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/n/pods/p/attach",
                Some("exec"),
            ),
        ];
        for (method, path, want) in rows {
            assert_eq!(write_verb(&method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn read_verb_table() {
        let rows = [
            (None, "read"),
            (Some("labelSelector=a%3Db"), "read"),
            (Some("watch=true&resourceVersion=5"), "watch"),
            (Some("resourceVersion=5&watch=true"), "watch"),
            (Some("watch=false"), "read"),
            (Some("x=watch=true"), "read"),
        ];
        for (query, want) in rows {
            assert_eq!(read_verb(query), want, "{query:?}");
        }
    }

    #[test]
    fn writes_are_counted_by_verb_and_reads_are_not() {
        let metric = Family::<RequestLabels, Counter>::default();
        let layer = CountWrites::new(metric.clone(), Family::default(), None);
        for (verb, path) in [("create", "/p"), ("create", "/q"), ("exec", "/p/exec")] {
            layer.log.record(verb, path);
        }
        assert_eq!(layer.log.count.load(Ordering::SeqCst), 3);
        assert_eq!(
            metric
                .get_or_create(&RequestLabels { verb: "create" })
                .get(),
            2
        );
        assert_eq!(
            metric.get_or_create(&RequestLabels { verb: "exec" }).get(),
            1
        );
    }
}
