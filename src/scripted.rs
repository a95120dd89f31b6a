//! A scripted API server for the reconcilers' unit tests (controller-rs's fixtures):
//! every request is recorded, and answered by what the test's `answer` says.

use std::sync::{Arc, Mutex};

use http::{Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};

/// The requests seen, in order: method, path and body.
pub type Seen = Arc<Mutex<Vec<(String, String, Value)>>>;

/// A client for namespace `team` whose API server records each request and answers it
/// with `answer(method, path, body)`.
pub fn client<F>(answer: F) -> (kube::Client, Seen)
where
    F: Fn(&str, &str, Value) -> (StatusCode, Value) + Clone + Send + Sync + 'static,
{
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (record, answer) = (record.clone(), answer.clone());
        async move {
            let (parts, body) = request.into_parts();
            let bytes = body.collect_bytes().await.unwrap_or_default();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let (method, path) = (parts.method.to_string(), parts.uri.path().to_string());
            record
                .lock()
                .unwrap()
                .push((method.clone(), path.clone(), body.clone()));
            let (code, answer) = answer(&method, &path, body);
            let response = Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(&answer).unwrap()))
                .unwrap();
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    (kube::Client::new(service, "team"), seen)
}

/// The operator's shared context with its default settings (`overseer run`), talking to
/// `client`.
pub fn context(client: kube::Client) -> Arc<crate::controller::Context> {
    use clap::Parser;
    let cli = crate::cli::Cli::parse_from(["overseer", "run"]);
    let crate::cli::Command::Run(args) = cli.command else {
        unreachable!("parsed `run`")
    };
    crate::operator::context(&args, client, Arc::default())
}

/// The requests of `seen` whose method is `method` and whose path holds `path`.
pub fn requests(seen: &Seen, method: &str, path: &str) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(m, p, _)| m == method && p.contains(path))
        .map(|(_, _, body)| body.clone())
        .collect()
}

/// A `Status` failure as the API server sends it.
pub fn failure(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
        "reason": reason, "code": code, "message": message})
}

/// The object `body` written at `path`, as the API server returns it: named after the
/// path, with `uid` and a new resourceVersion.
pub fn as_written(path: &str, mut body: Value, uid: &str, version: &str) -> Value {
    body["metadata"]["name"] = json!(path.rsplit('/').nth(usize::from(path.ends_with("/status"))));
    body["metadata"]["uid"] = json!(uid);
    body["metadata"]["resourceVersion"] = json!(version);
    body
}
