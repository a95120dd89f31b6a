//! The goal reconciler's writes against a scripted API server (controller-rs's
//! fixtures): every request is recorded, and each write is answered as written.
use std::sync::Arc;

use http::StatusCode;
use kube::runtime::watcher;
use serde_json::{Value, json};

use super::*;
use crate::scripted::{self, Seen};

/// A client whose API server answers every write with the object as written (a name,
/// uid and version added) and every read with 404, recording each request.
fn scripted_client() -> (kube::Client, Seen) {
    scripted::client(|method, path, body| {
        if method == "GET" {
            return (
                StatusCode::NOT_FOUND,
                scripted::failure(404, "NotFound", "not found"),
            );
        }
        let mut written =
            scripted::as_written(path, body, "9c2d7b1e-1111-2222-3333-444455556666", "8");
        if path.contains("/goals/") && written.get("spec").is_none() {
            written["spec"] = json!({"steps": []});
        }
        (StatusCode::OK, written)
    })
}

/// The goal's context, its caches empty.
fn goal_context(client: kube::Client) -> GoalContext {
    GoalContext {
        ctx: scripted::context(client),
        store: reflector::store().0,
        pods: reflector::store().0,
        swarms: reflector::store().0,
        versions: Default::default(),
        creating: Arc::default(),
        applied: crate::kubernetes::fresh::Applied::default(),
        progress: ProgressEvents::default(),
    }
}

const GOAL_UID: &str = "9c2d7b1e-0000-2222-3333-444455556666";

/// A goal of three steps, as the operator wrote it with its first step running.
fn first_step_running() -> Goal {
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
        "metadata": {"name": "ship", "namespace": "team", "uid": GOAL_UID,
            "generation": 1, "resourceVersion": "5"},
        "spec": {
            "defaults": {"runtime": {"name": "codex", "image": "example.com/codex:1"}},
            "steps": [{"name": "parse", "action": "Parse"}, {"name": "test", "action": "Test"},
                      {"name": "ship", "action": "Ship"}]
        },
        "status": {
            "observedGeneration": 1, "phase": "Running", "completedSteps": 0,
            "startedAt": jiff::Timestamp::now().to_string(),
            "steps": [
                {"name": "parse", "phase": "Running", "attempts": 1, "podName": "ship-s0-a1",
                 "startedAt": jiff::Timestamp::now().to_string()},
                {"name": "test", "phase": "Pending", "attempts": 0},
                {"name": "ship", "phase": "Pending", "attempts": 0}
            ]
        }
    }))
    .unwrap()
}

/// Step `index`'s first pod, succeeded with `result` just now (well within the pod
/// retention, after which a finished pod is deleted).
fn succeeded_pod(index: usize, step: &str, result: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": format!("ship-s{index}-a1"), "namespace": "team",
            "labels": {"app.kubernetes.io/managed-by": "overseer", "overseer.dev/goal": "ship",
                "overseer.dev/step": step, "overseer.dev/step-index": index.to_string(),
                "overseer.dev/attempt": "1"},
            "ownerReferences": [{"apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
                "name": "ship", "uid": GOAL_UID, "controller": true}]},
        "spec": {"containers": [{"name": "agent", "image": "example.com/codex:1"}]},
        "status": {"phase": "Succeeded", "containerStatuses": [{
            "name": "agent", "image": "example.com/codex:1", "imageID": "", "ready": false,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "message": result,
                "finishedAt": jiff::Timestamp::now().to_string()}}}]}
    }))
    .unwrap()
}

/// Reconciles `goal` with `pods` in the cache; the goal as its status was written.
async fn transition(gc: &mut GoalContext, goal: &Goal, pods: Vec<Pod>) -> Goal {
    let (store, mut writer) = reflector::store();
    for pod in pods {
        writer.apply_watcher_event(&watcher::Event::Apply(pod));
    }
    gc.pods = store;
    let observed = observe(gc, goal).await.unwrap();
    let plan = decide(&gc.ctx, goal, &observed).await;
    apply(gc, goal, &plan, Instant::now()).await.unwrap();
    let mut written = goal.clone();
    written.status = Some(plan.status);
    written
}

/// The writes recorded since `from`, Events aside (they are published behind the
/// reconcile, and folded: src/goal/progress.rs).
fn writes_since(seen: &Seen, from: usize) -> Vec<(String, String, Value)> {
    seen.lock().unwrap()[from..]
        .iter()
        .filter(|(method, path, _)| method != "GET" && !path.contains("/events"))
        .cloned()
        .collect()
}

/// A step transition at steady state writes the status that checkpoints the step
/// just done, then the next pod, which carries the earlier results: two writes, in
/// that order. (The goal's first pod also applies its egress sandbox, once.)
#[tokio::test]
async fn a_step_transition_is_two_writes_the_checkpoint_then_the_pod_with_the_results() {
    let (client, seen) = scripted_client();
    let mut gc = goal_context(client);
    let parsed = succeeded_pod(0, "parse", "parsed 12 files");
    let goal = transition(&mut gc, &first_step_running(), vec![parsed.clone()]).await;
    let first = writes_since(&seen, 0);
    assert!(
        first[1].1.contains("/networkpolicies/"),
        "the sandbox, once: {first:?}"
    );

    let from = seen.lock().unwrap().len();
    let tested = succeeded_pod(1, "test", "tests pass");
    transition(&mut gc, &goal, vec![parsed, tested]).await;
    let writes = writes_since(&seen, from);
    let paths: Vec<(&str, &str)> = writes
        .iter()
        .map(|(method, path, _)| (method.as_str(), path.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            (
                "PATCH",
                "/apis/overseer.dev/v1alpha1/namespaces/team/goals/ship/status"
            ),
            ("POST", "/api/v1/namespaces/team/pods"),
        ]
    );
    let status = &writes[0].2["status"];
    assert_eq!(status["completedSteps"], 2, "{status}");
    assert_eq!(status["steps"][1]["result"], "tests pass");
    let next = &writes[1].2;
    assert_eq!(next["metadata"]["name"], "ship-s2-a1");
    let carried: Value = serde_json::from_str(
        next["metadata"]["annotations"][crate::goal::pod::RESULTS_ANNOTATION]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        carried,
        json!([{"step": "parse", "result": "parsed 12 files"},
               {"step": "test", "result": "tests pass"}])
    );
    assert!(
        !seen
            .lock()
            .unwrap()
            .iter()
            .any(|(_, path, _)| path.contains("/configmaps")),
        "no results ConfigMap for results this small"
    );
}
