//! A chaos proxy in front of the test API server: TLS with the cluster's own serving
//! certificate (kwok's admin certificate, which names 127.0.0.1), every request
//! forwarded by an admin client, except those it answers with a fault. The faults
//! take turns by request number, so a run injects them in the same order every time:
//!
//! - 503 and 500 (a Status body, as the API server gives);
//! - 429 with `Retry-After: 1`;
//! - 410 Gone on a watch (the resourceVersion is too old: the watcher lists again;
//!   the third watch, then one in 6);
//! - half-open: a read of one object (a reconcile's fresh read) or a patch of its
//!   status is taken and never answered (the operator's answer deadline must end it;
//!   the second such request, then one in 24);
//! - an outage: every connection cut and every request refused for a while, as an
//!   API server restart looks to its clients.
//!
//! Upgraded requests (exec) are not proxied: scenarios run through it do not exec.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use kube::Client;

use super::cluster::{client, kubeconfig_path};

/// Every how many requests each fault comes (one of each per cycle of `CYCLE`).
const CYCLE: u64 = 30;
/// How long an outage lasts.
const OUTAGE: Duration = Duration::from_secs(4);

pub struct ChaosProxy {
    pub kubeconfig: std::path::PathBuf,
    state: Arc<State>,
    server: tokio::task::JoinHandle<()>,
}

struct State {
    upstream: Client,
    requests: AtomicU64,
    /// Requests about one object (its GET, its status PATCH) so far.
    one_object: AtomicU64,
    /// Watches so far.
    watches: AtomicU64,
    injected: Mutex<BTreeMap<&'static str, u64>>,
    outage_until: Mutex<Option<Instant>>,
    /// Connections are cut by closing this generation's sender.
    cut: Mutex<tokio::sync::watch::Sender<u64>>,
}

#[derive(Clone, Copy)]
enum Fault {
    Unavailable,
    Internal,
    TooMany,
    Gone,
    HalfOpen,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Unavailable => "503",
            Fault::Internal => "500",
            Fault::TooMany => "429",
            Fault::Gone => "410 on a watch",
            Fault::HalfOpen => "half-open",
        }
    }
}

/// What a request is, for choosing its fault.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Watch,
    /// A GET of one named object (a reconcile's fresh read), or a PATCH of its status.
    OneObject,
    Other,
}

/// Every how many requests about one object one is left half-open.
const HALF_OPEN_EVERY: u64 = 24;
/// Every how many watches one is answered 410 Gone.
const GONE_EVERY: u64 = 6;

/// The fault for request `n`, the `nth_of_kind` of its kind (counted for watches and
/// requests about one object), if any: of each cycle of `CYCLE` requests three carry
/// one each; the third watch and every `GONE_EVERY`th after it gets a 410; the second
/// request about one object and every `HALF_OPEN_EVERY`th after it is left half-open.
fn fault_for(n: u64, kind: Kind, nth_of_kind: u64) -> Option<Fault> {
    match kind {
        Kind::OneObject if nth_of_kind % HALF_OPEN_EVERY == 1 => return Some(Fault::HalfOpen),
        Kind::Watch if nth_of_kind % GONE_EVERY == 2 => return Some(Fault::Gone),
        _ => {}
    }
    match n % CYCLE {
        3 => Some(Fault::Unavailable),
        5 => Some(Fault::TooMany),
        9 => Some(Fault::Internal),
        _ => None,
    }
}

fn kind_of(method: &hyper::Method, path: &str, query: &str) -> Kind {
    if query
        .split('&')
        .any(|p| p == "watch=true" || p == "watch=1")
    {
        return Kind::Watch;
    }
    // /api(s)/.../namespaces/<ns>/<plural>/<name>, and its /status.
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let Some(at) = segments.iter().position(|s| *s == "namespaces") else {
        return Kind::Other;
    };
    let read = method == hyper::Method::GET && segments.len() == at + 4;
    let status_write = method == hyper::Method::PATCH
        && segments.len() == at + 5
        && segments.last() == Some(&"status");
    if read || status_write {
        Kind::OneObject
    } else {
        Kind::Other
    }
}

impl ChaosProxy {
    pub async fn start(name: &str) -> ChaosProxy {
        let pki = kubeconfig_path()
            .parent()
            .unwrap()
            .join("kwok/clusters/overseer/pki");
        let acceptor = super::tls::acceptor(&pki.join("admin.crt"), &pki.join("admin.key"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let kubeconfig = write_kubeconfig(name, port, &pki);
        let (cut, _) = tokio::sync::watch::channel(0);
        let state = Arc::new(State {
            upstream: client().await,
            requests: AtomicU64::new(0),
            one_object: AtomicU64::new(0),
            watches: AtomicU64::new(0),
            injected: Mutex::default(),
            outage_until: Mutex::new(None),
            cut: Mutex::new(cut),
        });
        let serving = state.clone();
        let server = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, state) = (acceptor.clone(), serving.clone());
                let mut cut = state.cut.lock().unwrap().subscribe();
                tokio::spawn(async move {
                    if state.in_outage() {
                        return;
                    }
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |request| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(state.answer(request).await) }
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service);
                    tokio::select! {
                        _ = connection => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        ChaosProxy {
            kubeconfig,
            state,
            server,
        }
    }

    /// Cuts every connection and refuses new ones for `OUTAGE`.
    pub fn outage(&self) {
        *self.state.outage_until.lock().unwrap() = Some(Instant::now() + OUTAGE);
        self.state.cut.lock().unwrap().send_modify(|g| *g += 1);
        self.state.count("outage");
    }

    /// How many of each fault were injected.
    pub fn injected(&self) -> BTreeMap<&'static str, u64> {
        self.state.injected.lock().unwrap().clone()
    }

    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::Relaxed)
    }
}

impl Drop for ChaosProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

type Answer = Response<Either<Full<Bytes>, kube::client::Body>>;

impl State {
    fn in_outage(&self) -> bool {
        self.outage_until
            .lock()
            .unwrap()
            .is_some_and(|until| Instant::now() < until)
    }

    fn count(&self, fault: &'static str) {
        *self.injected.lock().unwrap().entry(fault).or_default() += 1;
    }

    async fn answer(&self, request: Request<Incoming>) -> Answer {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let query = request.uri().query().unwrap_or_default();
        let kind = kind_of(request.method(), request.uri().path(), query);
        let nth_of_kind = match kind {
            Kind::OneObject => self.one_object.fetch_add(1, Ordering::Relaxed),
            Kind::Watch => self.watches.fetch_add(1, Ordering::Relaxed),
            Kind::Other => 0,
        };
        if self.in_outage() {
            return status(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", None);
        }
        if let Some(fault) = fault_for(n, kind, nth_of_kind) {
            self.count(fault.name());
            return match fault {
                Fault::Unavailable => {
                    status(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", None)
                }
                Fault::Internal => status(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", None),
                Fault::TooMany => {
                    status(StatusCode::TOO_MANY_REQUESTS, "TooManyRequests", Some("1"))
                }
                Fault::Gone => status(StatusCode::GONE, "Expired", None),
                Fault::HalfOpen => std::future::pending().await,
            };
        }
        self.forward(request).await
    }

    async fn forward(&self, request: Request<Incoming>) -> Answer {
        let (parts, body) = request.into_parts();
        let Ok(body) = body.collect().await else {
            return status(StatusCode::BAD_REQUEST, "BadRequest", None);
        };
        let mut upstream = http::Request::builder()
            .method(parts.method)
            .uri(parts.uri.path_and_query().map_or("/", |p| p.as_str()));
        for (name, value) in &parts.headers {
            if !matches!(name.as_str(), "host" | "authorization" | "connection") {
                upstream = upstream.header(name, value);
            }
        }
        let upstream = upstream
            .body(kube::client::Body::from(body.to_bytes().to_vec()))
            .unwrap();
        match self.upstream.send(upstream).await {
            Ok(response) => response.map(Either::Right),
            Err(_) => status(StatusCode::BAD_GATEWAY, "BadGateway", None),
        }
    }
}

fn status(code: StatusCode, reason: &str, retry_after: Option<&str>) -> Answer {
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": format!("injected by the chaos proxy: {reason}"),
        "reason": reason, "code": code.as_u16(),
    });
    let mut response = Response::builder()
        .status(code)
        .header("content-type", "application/json");
    if let Some(seconds) = retry_after {
        response = response.header("retry-after", seconds);
    }
    response
        .body(Either::Left(Full::new(Bytes::from(body.to_string()))))
        .unwrap()
}

/// A kubeconfig like the test cluster's, aimed at the proxy.
fn write_kubeconfig(name: &str, port: u16, pki: &std::path::Path) -> std::path::PathBuf {
    let path = super::cluster::repo_root()
        .join("target/test-logs")
        .join(format!("chaos-{name}.kubeconfig"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let pki = pki.display();
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: chaos\n\
         clusters:\n- name: chaos\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority: {pki}/ca.crt\n\
         users:\n- name: chaos\n  user:\n    client-certificate: {pki}/admin.crt\n    client-key: {pki}/admin.key\n\
         contexts:\n- name: chaos\n  context:\n    cluster: chaos\n    user: chaos\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}
