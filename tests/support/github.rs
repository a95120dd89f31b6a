//! A local stand-in for GitHub's GraphQL endpoint: it answers the operator's poll
//! with scripted replies in GitHub's shape (the fixtures of tests/github/fixtures/,
//! with times set to now), checks the token and that each poll is the one query,
//! and counts the polls.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use overseer::prwatch::PRWatch;
use serde_json::{Value, json};

use super::cluster::TestNamespace;

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(body: &Value) -> Reply {
        Reply {
            status: 200,
            headers: vec![],
            body: body.to_string(),
        }
    }
}

#[derive(Default)]
struct Script {
    replies: VecDeque<Reply>,
    /// Answered again once the script runs out.
    last: Option<Reply>,
    polls: usize,
    refused: Vec<String>,
    /// The client ends of the TCP connections polls came over.
    peers: std::collections::BTreeSet<std::net::SocketAddr>,
}

pub struct FakeGitHub {
    pub url: String,
    script: Arc<Mutex<Script>>,
    _server: tokio::task::JoinHandle<()>,
}

pub const TOKEN: &str = "test-token-not-a-secret";

impl FakeGitHub {
    pub async fn start() -> FakeGitHub {
        let script = Arc::new(Mutex::new(Script::default()));
        let app = Router::new()
            .route("/graphql", post(answer))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/graphql", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
            let _ = axum::serve(listener, app).await;
        });
        FakeGitHub {
            url,
            script,
            _server: server,
        }
    }

    /// Queues replies; the last one is repeated after the queue runs out.
    pub fn then(&self, replies: impl IntoIterator<Item = Reply>) {
        let mut script = self.script.lock().unwrap();
        for reply in replies {
            script.last = Some(reply.clone());
            script.replies.push_back(reply);
        }
    }

    pub fn polls(&self) -> usize {
        self.script.lock().unwrap().polls
    }

    /// The TCP connections the polls came over (a client that keeps its connections
    /// makes one for many polls).
    pub fn connections(&self) -> usize {
        self.script.lock().unwrap().peers.len()
    }

    /// Requests that were not one well-formed poll with the token (should be none).
    pub fn refused(&self) -> Vec<String> {
        self.script.lock().unwrap().refused.clone()
    }
}

async fn answer(
    State(script): State<Arc<Mutex<Script>>>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut script = script.lock().unwrap();
    script.peers.insert(peer);
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if auth != format!("bearer {TOKEN}") {
        script.refused.push(format!("authorization {auth:?}"));
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if request["query"].as_str() != Some(overseer::prwatch::github::QUERY) {
        script.refused.push("not the poll query".into());
        return StatusCode::BAD_REQUEST.into_response();
    }
    script.polls += 1;
    let reply = match script.replies.pop_front() {
        Some(reply) => reply,
        None => match &script.last {
            Some(reply) => reply.clone(),
            None => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        },
    };
    let mut response = (StatusCode::from_u16(reply.status).unwrap(), reply.body).into_response();
    for (name, value) in reply.headers {
        response.headers_mut().insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    response
}

/// A fixture with every feedback time set to `at` (the fixtures' own times are fixed).
pub fn fixture(name: &str, at: jiff::Timestamp) -> Value {
    let path = format!(
        "{}/tests/github/fixtures/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    fn retime(value: &mut Value, at: &str) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map.iter_mut() {
                    if (key == "createdAt" || key == "submittedAt") && inner.is_string() {
                        *inner = Value::String(at.to_string());
                    } else {
                        retime(inner, at);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| retime(i, at)),
            _ => {}
        }
    }
    retime(&mut value, &at.to_string());
    value
}

/// The token Secret `gh` and a PRWatch `name` of `pr_url` for `agent`, polling
/// `github` every 10s (the least allowed) with a quiet period of 1s; `extra` adds to
/// or overrides the spec.
pub async fn create_watch(
    ns: &TestNamespace,
    github: &FakeGitHub,
    name: &str,
    pr_url: &str,
    agent: &str,
    extra: Value,
) {
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "gh", "annotations": {"overseer.dev/github-origins": github.url.trim_end_matches("/graphql")}},
        "stringData": {"token": TOKEN}
    }))
    .unwrap();
    // One Secret serves every watch of the namespace.
    match ns
        .api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => panic!("creating the token Secret: {error}"),
    }
    let mut spec = json!({"url": pr_url, "agent": agent, "pollInterval": "10s", "quietPeriod": "1s",
        "github": {"apiURL": github.url, "tokenSecretRef": {"name": "gh", "key": "token"}}});
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let watch: PRWatch = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "PRWatch", "metadata": {"name": name}, "spec": spec
    }))
    .unwrap();
    ns.api::<PRWatch>()
        .create(&PostParams::default(), &watch)
        .await
        .unwrap();
}
