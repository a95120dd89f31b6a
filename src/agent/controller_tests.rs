//! The reconciler's I/O paths against a scripted API server (controller-rs's
//! fixtures): each request is answered by what `answer` says and recorded.
use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};

use super::*;
use crate::kubernetes::fresh::{Applied, Deleting};
use crate::scripted::{self, Seen};

/// A client whose API server refuses every new pod as invalid and every exec as
/// forbidden, keeps `objects` (by `<plural>/<name>`) and answers their reads (404
/// for any other), merges a status apply into the object's status (the operator's
/// fields replaced, the others kept, as server-side apply does for them), and
/// echoes any other write back as written.
fn scripted_client(objects: Vec<(&'static str, Value)>) -> (kube::Client, Seen) {
    let objects = Arc::new(Mutex::new(objects));
    scripted::client(move |method, path, body| {
        let mut kept = objects.lock().unwrap();
        let stored = kept
            .iter_mut()
            .find(|(at, _)| path.trim_end_matches("/status").ends_with(at))
            .map(|(_, object)| object);
        match (method, path, stored) {
            ("POST", p, _) if p.ends_with("/pods") => (
                StatusCode::UNPROCESSABLE_ENTITY,
                scripted::failure(
                    422,
                    "Invalid",
                    "Pod \"builder-1\" is invalid: spec.containers[0].image: Required value",
                ),
            ),
            ("GET", p, _) if p.ends_with("/exec") => (
                StatusCode::FORBIDDEN,
                scripted::failure(
                    403,
                    "Forbidden",
                    "pods \"builder-1\" is forbidden: exec refused",
                ),
            ),
            ("GET", _, Some(object)) => (StatusCode::OK, object.clone()),
            ("GET", _, None) => (
                StatusCode::NOT_FOUND,
                scripted::failure(404, "NotFound", "not found"),
            ),
            // An apply onto a version the object has moved past.
            ("PATCH", p, Some(object))
                if p.ends_with("/status")
                    && body["metadata"]["resourceVersion"]
                        .as_str()
                        .is_some_and(|v| !v.is_empty())
                    && body["metadata"]["resourceVersion"]
                        != object["metadata"]["resourceVersion"] =>
            {
                (
                    StatusCode::CONFLICT,
                    scripted::failure(409, "Conflict", "the object has been modified"),
                )
            }
            ("PATCH", p, Some(object)) if p.ends_with("/status") => {
                for (field, value) in body["status"].as_object().into_iter().flatten() {
                    object["status"][field] = value.clone();
                }
                (StatusCode::OK, object.clone())
            }
            (_, _, _) => {
                let mut written =
                    scripted::as_written(path, body, "0b5e6f0e-1111-2222-3333-444455556666", "7");
                // The whole object comes back, as the API server returns it.
                if path.contains("/agents/") && written.get("spec").is_none() {
                    written["spec"] = json!({"runtime": {}});
                }
                (StatusCode::OK, written)
            }
        }
    })
}

fn agent_context(client: kube::Client) -> AgentContext {
    let ctx = scripted::context(client);
    AgentContext {
        ctx,
        store: reflector::store().0,
        overseen: Index::default(),
        members: Index::default(),
        pods: reflector::store().0,
        roles: Default::default(),
        pods_of: Index::default(),
        swarms: reflector::store().0,
        versions: Default::default(),
        applied: Applied::default(),
        deleting: Deleting::default(),
        wake_locks: Mutex::default(),
        dispatch: crate::delivery::slots::Running::new(futures::channel::mpsc::unbounded().0),
    }
}

#[tokio::test]
async fn a_refused_pod_is_reported_on_the_agent_and_no_attempt_is_recorded() {
    let (client, seen) = scripted_client(Vec::new());
    let ac = agent_context(client.clone());
    let shell = Shell {
        ac: &ac,
        agents: Api::namespaced(client.clone(), "team"),
        pods: Api::namespaced(client, "team"),
    };
    let agent: Agent = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": "builder", "namespace": "team",
            "uid": "0b5e6f0e-1111-2222-3333-444455556666", "generation": 1},
        "spec": {"runtime": {"name": "claude", "image": "example.com/claude:1"}}
    }))
    .unwrap();
    let observed = Observed {
        effective: Effective {
            spec: agent.spec.clone(),
            swarm: None,
        },
        pods: Vec::new(),
        overseen: Vec::new(),
        fleet: None,
        acts_as_overseer: false,
        overseer: OverseerState::Unset,
    };
    let created = create_pod(&shell, &agent, &observed, 1).await.unwrap();
    assert!(!created, "a refused pod is not taken for created");
    let seen = seen.lock().unwrap().clone();
    let posted: Vec<&str> = seen
        .iter()
        .filter(|(method, _, _)| method == "POST")
        .map(|(_, path, _)| path.as_str())
        .collect();
    assert!(
        posted.contains(&"/api/v1/namespaces/team/pods"),
        "the pod was asked for: {posted:?}"
    );
    let status = seen
        .iter()
        .find(|(method, path, _)| {
            method == "PATCH"
                && path == "/apis/overseer.dev/v1alpha1/namespaces/team/agents/builder/status"
        })
        .map(|(_, _, body)| body["status"].clone())
        .expect("the refusal is written to the agent's status");
    let ready = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "PodRefused");
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("the API server refused the pod: Pod \"builder-1\" is invalid"),
        "{ready}"
    );
    assert_eq!(status["phase"], "Pending");
    assert!(
        status.get("attempt").is_none(),
        "no attempt recorded: {status}"
    );
}

/// A nudge whose exec the API server refuses: claimed in status before the exec,
/// then settled as failed (the claim cleared, the count unchanged), and counted.
#[tokio::test]
async fn a_refused_exec_leaves_the_nudge_claimed_then_settled_as_failed() {
    let uid = "0b5e6f0e-1111-2222-3333-444455556666";
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "builder-1", "namespace": "team",
            "labels": {"overseer.dev/agent": "builder", "overseer.dev/attempt": "1"},
            "ownerReferences": [{"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
                "name": "builder", "uid": uid, "controller": true}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
    let agent_json = json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": "builder", "namespace": "team", "uid": uid, "generation": 1},
        "spec": {"runtime": {"name": "claude", "image": "example.com/claude:1"},
            "loop": {"enabled": true}},
        "status": {"phase": "Running", "attempt": 1, "podName": "builder-1",
            "activity": {"state": "idle", "attempt": 1,
                "since": "2026-12-01T10:00:00Z", "lastActivityTime": "2026-12-01T10:00:00Z"}}
    });
    let agent: Agent = serde_json::from_value(agent_json.clone()).unwrap();
    let (client, seen) = scripted_client(vec![
        ("/pods/builder-1", pod),
        ("/agents/builder", agent_json),
    ]);
    let ac = agent_context(client.clone());
    let agents: Api<Agent> = Api::namespaced(client.clone(), "team");
    let pods: Api<Pod> = Api::namespaced(client, "team");
    let courier = super::delivery::Courier {
        ac: &ac,
        agents: &agents,
        pods: &pods,
    };
    let delivered = courier.nudge(&agent, &agent.spec).await.unwrap();
    assert!(!delivered, "a refused exec is no delivery");
    let seen = seen.lock().unwrap().clone();
    let status_writes: Vec<&Value> = seen
        .iter()
        .filter(|(method, path, _)| method == "PATCH" && path.ends_with("/agents/builder/status"))
        .map(|(_, _, body)| &body["status"])
        .collect();
    let exec_at = seen
        .iter()
        .position(|(_, path, _)| path.ends_with("/pods/builder-1/exec"))
        .expect("the exec was tried");
    let claim_at = seen
        .iter()
        .position(|(method, path, body)| {
            method == "PATCH"
                && path.ends_with("/status")
                && body["status"]["loop"]["inFlight"].is_object()
        })
        .expect("the nudge was claimed in status");
    assert!(claim_at < exec_at, "claimed before the exec: {seen:?}");
    let settled = status_writes.last().expect("a status write after the exec");
    assert!(
        settled["loop"]["inFlight"].is_null(),
        "the claim is cleared: {settled}"
    );
    assert_ne!(
        settled["loop"]["nudges"],
        json!(1),
        "no nudge counted: {settled}"
    );
    let failed = ac
        .ctx
        .metrics
        .deliveries
        .get_or_create(&crate::metrics::DeliveryLabels {
            kind: "nudge",
            outcome: "failed",
        })
        .get();
    assert_eq!(failed, 1);
}

/// A status decided on a version someone has written past (a courier's claim, the
/// shim) is not applied over that write, and nothing of the plan is acted on: the
/// write's own watch event brings the agent back to be decided again.
#[tokio::test]
async fn a_plan_decided_on_an_outdated_agent_writes_nothing_and_acts_on_nothing() {
    let uid = "0b5e6f0e-1111-2222-3333-444455556666";
    let agent_json = |version: &str| {
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
            "metadata": {"name": "builder", "namespace": "team", "uid": uid,
                "generation": 1, "resourceVersion": version},
            "spec": {"runtime": {"name": "claude", "image": "example.com/claude:1"}},
            "status": {"phase": "Running", "attempt": 1, "podName": "builder-1"}
        })
    };
    let (client, seen) = scripted_client(vec![("/agents/builder", agent_json("8"))]);
    let ac = agent_context(client.clone());
    let shell = Shell {
        ac: &ac,
        agents: Api::namespaced(client.clone(), "team"),
        pods: Api::namespaced(client, "team"),
    };
    let mut agent: Agent = serde_json::from_value(agent_json("7")).unwrap();
    let observed = Observed {
        effective: Effective {
            spec: agent.spec.clone(),
            swarm: None,
        },
        pods: Vec::new(),
        overseen: Vec::new(),
        fleet: None,
        acts_as_overseer: false,
        overseer: OverseerState::Unset,
    };
    let mut status = agent.status.clone().unwrap();
    status.phase = Some(crate::agent::AgentPhase::Pending);
    let plan = decide::Plan {
        status,
        actions: vec![decide::Action::DeletePod {
            name: "builder-1".into(),
        }],
        requeue_after: None,
    };
    let outcome = apply(&shell, &mut agent, &observed, &plan).await.unwrap();
    assert!(outcome.is_none(), "decided again, not acted on");
    let seen = seen.lock().unwrap().clone();
    let applied = seen
        .iter()
        .find(|(method, path, _)| method == "PATCH" && path.ends_with("/agents/builder/status"))
        .expect("the status was applied");
    assert_eq!(
        applied.2["metadata"]["resourceVersion"], "7",
        "onto the version decided on"
    );
    assert!(
        !seen.iter().any(|(method, _, _)| method == "DELETE"),
        "no pod deleted: {seen:?}"
    );
}

/// After a restart (nothing applied in memory), an agent whose status records the
/// digest of the instructions it should have is not read again; one without it, or
/// with another digest, is read and written, and the digest returned for its status.
#[tokio::test]
async fn instructions_recorded_in_status_are_not_read_again_after_a_restart() {
    let agent_with = |digest: Option<&str>| -> Agent {
        serde_json::from_value(json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
            "metadata": {"name": "builder", "namespace": "team",
                "uid": "0b5e6f0e-1111-2222-3333-444455556666", "generation": 1},
            "spec": {"runtime": {"name": "claude", "image": "example.com/claude:1"}},
            "status": {"instructionsDigest": digest}
        }))
        .unwrap()
    };
    let sync = |agent: Agent| async move {
        let (client, seen) = scripted_client(Vec::new());
        let ac = agent_context(client);
        let effective = Effective {
            spec: agent.spec.clone(),
            swarm: None,
        };
        let digest = sync_instructions(&ac, &agent, &effective, false)
            .await
            .unwrap();
        let requests: Vec<String> = (seen.lock().unwrap().iter())
            .map(|(method, path, _)| format!("{method} {path}"))
            .collect();
        (digest, requests)
    };
    let map = "/api/v1/namespaces/team/configmaps/builder-instructions";
    let (digest, first) = sync(agent_with(None)).await;
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first[0].starts_with(&format!("GET {map}")), "{first:?}");
    assert!(first[1].starts_with(&format!("PATCH {map}")), "{first:?}");

    let (again, requests) = sync(agent_with(Some(&digest))).await;
    assert_eq!(again, digest, "the same instructions, the same digest");
    assert!(
        requests.is_empty(),
        "recorded: no read, no write: {requests:?}"
    );

    let other = format!("sha256:{}", "0".repeat(64));
    let (_, requests) = sync(agent_with(Some(&other))).await;
    assert_eq!(
        requests.len(),
        2,
        "another digest: read and written: {requests:?}"
    );
}
