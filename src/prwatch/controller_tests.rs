//! The PRWatch reconciler's requests against a scripted API server (controller-rs's
//! fixtures): what it reads, what it writes and what it never sends anywhere.
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::StatusCode;
use serde_json::{Value, json};

use super::*;
use crate::scripted::{self, Seen};

const WATCH: &str = "/apis/overseer.dev/v1alpha1/namespaces/team/prwatches/pr-7";
const AGENT: &str = "/apis/overseer.dev/v1alpha1/namespaces/team/agents/builder";
const SECRET: &str = "/api/v1/namespaces/team/secrets/github";
const TOKEN: &str = "ghp_do-not-send-me-anywhere";

/// An API server holding `objects` by path: a read answers the object (or 404), a
/// status apply takes the applied status into the object and answers it, anything
/// else (Events) is answered as written.
fn scripted_client(objects: Vec<(&'static str, Value)>) -> (kube::Client, Seen) {
    let objects: Arc<Mutex<BTreeMap<String, Value>>> = Arc::new(Mutex::new(
        objects
            .into_iter()
            .map(|(p, o)| (p.to_string(), o))
            .collect(),
    ));
    scripted::client(move |method, path, body| {
        let mut objects = objects.lock().unwrap();
        match (method, path.strip_suffix("/status")) {
            ("GET", _) => match objects.get(path) {
                Some(object) => (StatusCode::OK, object.clone()),
                None => (
                    StatusCode::NOT_FOUND,
                    scripted::failure(404, "NotFound", "not found"),
                ),
            },
            ("PATCH", Some(object_path)) => match objects.get_mut(object_path) {
                Some(object) => {
                    object["status"] = body["status"].clone();
                    (StatusCode::OK, object.clone())
                }
                None => (
                    StatusCode::NOT_FOUND,
                    scripted::failure(404, "NotFound", "not found"),
                ),
            },
            _ => (
                StatusCode::CREATED,
                scripted::as_written(path, body, "e-uid", "1"),
            ),
        }
    })
}

fn watch_context(client: kube::Client) -> Arc<WatchContext> {
    let (again, _delivered) = futures::channel::mpsc::unbounded();
    Arc::new(WatchContext {
        ctx: scripted::context(client),
        github: github::GitHub::new(),
        delivering: crate::delivery::slots::Running::new(again),
    })
}

/// A watch of a pull request for agent `builder`, its token in Secret `github`, with
/// `status`.
fn watch(status: Value) -> Value {
    json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "PRWatch",
        "metadata": {"name": "pr-7", "namespace": "team", "uid": "w-uid", "generation": 1,
            "resourceVersion": "3"},
        "spec": {"url": "https://github.com/acme/app/pull/7", "agent": "builder",
            "github": {"tokenSecretRef": {"name": "github", "key": "token"}}},
        "status": status,
    })
}

/// The Secret `github` holding the token, with `annotations`.
fn secret(annotations: Value) -> Value {
    use k8s_openapi::ByteString;
    let data = BTreeMap::from([("token".to_string(), ByteString(TOKEN.into()))]);
    let mut secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "github", "namespace": "team", "annotations": annotations},
    });
    secret["data"] = serde_json::to_value(data).unwrap();
    secret
}

async fn reconcile_watch(wc: &Arc<WatchContext>, object: &Value) -> Action {
    let cached: PRWatch = serde_json::from_value(object.clone()).unwrap();
    reconcile(Arc::new(cached), wc.clone()).await.unwrap()
}

/// Every request body, as text, for looking for what must never be in one.
fn everything_sent(seen: &Seen) -> String {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(method, path, body)| format!("{method} {path} {body}\n"))
        .collect()
}

/// The Secret's owner says where its token may go: a Secret not marked for the watch's
/// API origin is read for that mark once, its token never taken, and the watch says
/// why in a condition; a second reconcile before the next poll writes nothing.
#[tokio::test]
async fn a_secret_not_marked_for_the_origin_never_gives_its_token_and_a_quiet_watch_writes_nothing()
{
    let (client, seen) = scripted_client(vec![
        (WATCH, watch(Value::Null)),
        (SECRET, secret(json!({}))),
    ]);
    let wc = watch_context(client);

    reconcile_watch(&wc, &watch(Value::Null)).await;
    assert_eq!(
        scripted::requests(&seen, "GET", SECRET).len(),
        1,
        "read once for its mark: {}",
        everything_sent(&seen)
    );
    let written = scripted::requests(&seen, "PATCH", WATCH);
    assert_eq!(written.len(), 1, "{}", everything_sent(&seen));
    let polling = written[0]["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Polling"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(polling["status"], "False", "{polling}");
    assert_eq!(polling["reason"], reasons::POLL_FAILED, "{polling}");
    let message = polling["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Secret github is not marked")
            && message.contains(TOKEN_ORIGINS_ANNOTATION),
        "{message}"
    );
    assert!(
        written[0]["status"]["nextPollTime"].is_string(),
        "{}",
        written[0]
    );

    // Reconciled again from what it wrote, before its next poll: only the watch and its
    // agent are read.
    let before = seen.lock().unwrap().len();
    let mut now_cached = watch(Value::Null);
    now_cached["status"] = written[0]["status"].clone();
    reconcile_watch(&wc, &now_cached).await;
    // (The first reconcile's Event is published behind it, and may land meanwhile.)
    let after: Vec<String> = seen.lock().unwrap()[before..]
        .iter()
        .filter(|(_, path, _)| !path.ends_with("/events"))
        .map(|(method, path, _)| format!("{method} {path}"))
        .collect();
    assert_eq!(after, [format!("GET {WATCH}"), format!("GET {AGENT}")]);
    assert!(
        !everything_sent(&seen).contains(TOKEN),
        "{}",
        everything_sent(&seen)
    );
}

/// A wake claimed in status by an operator that stopped before it knew the outcome is
/// settled by the next one: with its agent gone it cannot be delivered, so the claim is
/// released (never left to block the watch) and a Warning says so; nothing is typed
/// and the watch is not polled while its claim is settled.
#[tokio::test]
async fn a_wake_claimed_before_a_restart_is_released_with_a_warning_when_its_agent_is_gone() {
    let status = json!({
        "phase": "Watching", "wakes": 1, "reported": ["checks:abc123"],
        "wakeInFlight": {"id": "prwatch/pr-7/1", "message": "CI settled on abc123"},
    });
    let (client, seen) = scripted_client(vec![(WATCH, watch(status.clone()))]);
    let wc = watch_context(client);

    let action = reconcile_watch(&wc, &watch(status)).await;
    assert_eq!(
        action,
        Action::await_change(),
        "its task asks for the watch again"
    );
    // Settled out of the reconcile, in a delivery task.
    let settled = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let warned = scripted::requests(&seen, "POST", "/events")
                .into_iter()
                .any(|e| e["reason"] == reasons::WAKE_FAILED);
            if warned {
                return scripted::requests(&seen, "PATCH", WATCH);
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("never settled: {}", everything_sent(&seen)));
    assert_eq!(settled.len(), 1, "{settled:?}");
    let written = &settled[0]["status"];
    assert!(written.get("wakeInFlight").is_none(), "released: {written}");
    assert_eq!(written["wakes"], 1, "the wake stays counted: {written}");
    assert_eq!(written["reported"], json!(["checks:abc123"]), "{written}");
    assert!(
        scripted::requests(&seen, "GET", SECRET).is_empty(),
        "not polled: {}",
        everything_sent(&seen)
    );
    let event = scripted::requests(&seen, "POST", "/events")
        .into_iter()
        .find(|e| e["reason"] == reasons::WAKE_FAILED)
        .unwrap();
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["regarding"]["name"], "pr-7");
}
