//! Argo CD's health checks (gitops/argocd/health/) over every branch, on objects in the
//! shape the operator writes (each row's status completed with the conditions
//! src/health.rs sets, as every controller does last); the cluster tests run them on
//! objects it did write, beside kstatus.

#[path = "support/mod.rs"]
mod support;

use serde_json::{Value, json};
use support::health::argocd;

/// An object of `generation` whose status was decided on `observed`.
fn object(generation: i64, observed: i64, status: Value) -> Value {
    let mut status = status;
    status["observedGeneration"] = json!(observed);
    json!({"metadata": {"name": "x", "generation": generation}, "status": status})
}

/// `object` as the operator writes it: its status with `Stalled`, `Reconciling` (and,
/// for a finished agent or swarm run, `Ready`) as src/health.rs sets them.
fn as_written(kind: &str, mut object: Value) -> Value {
    use overseer::health;
    let Some(status) = object.get("status").cloned() else {
        return object;
    };
    let generation = object["metadata"]["generation"].as_i64();
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now());
    let typed = |what: &str| format!("{kind} status {status}: {what}");
    object["status"] = match kind {
        "Agent" => {
            let mut s: overseer::agent::AgentStatus = serde_json::from_value(status.clone())
                .unwrap_or_else(|e| panic!("{}: {e}", typed("an AgentStatus")));
            health::settle_agent("x", &mut s, &[], generation, &now);
            serde_json::to_value(s)
        }
        "Goal" => {
            let mut s: overseer::goal::GoalStatus = serde_json::from_value(status.clone())
                .unwrap_or_else(|e| panic!("{}: {e}", typed("a GoalStatus")));
            let reading = health::goal(&s);
            health::set(&mut s.conditions, &reading, generation, &now);
            serde_json::to_value(s)
        }
        "PRWatch" => {
            let mut s: overseer::kinds::prwatch::PRWatchStatus =
                serde_json::from_value(status.clone())
                    .unwrap_or_else(|e| panic!("{}: {e}", typed("a PRWatchStatus")));
            let reading = health::prwatch(&s);
            health::set(&mut s.conditions, &reading, generation, &now);
            serde_json::to_value(s)
        }
        "Swarm" => {
            let mut s: overseer::kinds::swarm::SwarmStatus = serde_json::from_value(status.clone())
                .unwrap_or_else(|e| panic!("{}: {e}", typed("a SwarmStatus")));
            health::settle_swarm(&mut s, &[], generation, &now);
            serde_json::to_value(s)
        }
        other => panic!("no kind {other}"),
    }
    .unwrap();
    object
}

fn escalation(id: i64, kind: &str, severity: &str, state: &str) -> Value {
    json!({"id": id, "kind": kind, "severity": severity, "state": state, "attempt": 1,
        "openedTime": "2026-12-01T00:00:00Z"})
}

fn condition(type_: &str, status: &str, reason: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": "",
        "lastTransitionTime": "2026-12-01T00:00:00Z"})
}

#[test]
fn every_kind_maps_its_states_to_argo_cd_health() {
    let rows = [
        (
            "Agent",
            json!({"metadata": {"generation": 1}}),
            "Progressing",
        ),
        (
            "Agent",
            object(
                2,
                1,
                json!({"phase": "Running", "conditions": [condition("Ready", "True", "PodReady")]}),
            ),
            "Progressing",
        ),
        (
            "Agent",
            object(
                1,
                1,
                json!({"phase": "Running", "conditions": [condition("Ready", "True", "PodReady")]}),
            ),
            "Healthy",
        ),
        (
            "Agent",
            object(
                1,
                1,
                json!({"phase": "Running", "conditions": [condition("Ready", "False", "PodNotReady")]}),
            ),
            "Progressing",
        ),
        (
            "Agent",
            object(1, 1, json!({"phase": "Pending"})),
            "Progressing",
        ),
        // It asked for help nobody has given: a critical escalation open is Degraded, an
        // acknowledged one or a lesser one is not.
        (
            "Agent",
            object(
                1,
                1,
                json!({"phase": "Running", "conditions": [condition("Ready", "True", "PodReady")],
                    "escalations": [escalation(2, "Requested", "critical", "Open")]}),
            ),
            "Degraded",
        ),
        (
            "Agent",
            object(
                1,
                1,
                json!({"phase": "Running", "conditions": [condition("Ready", "True", "PodReady")],
                    "escalations": [
                        escalation(1, "Requested", "critical", "Acknowledged"),
                        escalation(2, "Waiting", "warning", "Open")]}),
            ),
            "Healthy",
        ),
        // Stuck on its image: Progressing while the kubelet may still pull it, Degraded
        // once the operator says the patience is over.
        (
            "Agent",
            object(
                1,
                1,
                json!({"phase": "Pending", "conditions": [condition("Ready", "False", "PodNotReady")]}),
            ),
            "Progressing",
        ),
        (
            "Agent",
            object(
                1,
                1,
                json!({"phase": "Pending", "conditions": [condition("Ready", "False", "ImageNotPulled")]}),
            ),
            "Degraded",
        ),
        (
            "Agent",
            object(
                1,
                1,
                json!({"phase": "Pending", "conditions": [condition("Ready", "False", "PodRefused")]}),
            ),
            "Degraded",
        ),
        (
            "Agent",
            object(
                1,
                1,
                json!({"phase": "Pending", "conditions": [condition("Ready", "False", "NameTaken")]}),
            ),
            "Degraded",
        ),
        ("Agent", object(1, 1, json!({"phase": "Done"})), "Healthy"),
        (
            "Agent",
            object(
                1,
                1,
                json!({"phase": "Blocked", "conditions": [condition("InLoop", "False", "NudgesExhausted")]}),
            ),
            "Degraded",
        ),
        (
            "Agent",
            object(1, 1, json!({"phase": "Failed"})),
            "Degraded",
        ),
        (
            "Agent",
            object(1, 1, json!({"phase": "Suspended"})),
            "Suspended",
        ),
        (
            "Goal",
            json!({"metadata": {"generation": 1}}),
            "Progressing",
        ),
        (
            "Goal",
            object(1, 1, json!({"phase": "Running", "progress": "1/3"})),
            "Progressing",
        ),
        (
            "Goal",
            object(1, 1, json!({"phase": "Waiting"})),
            "Progressing",
        ),
        (
            "Goal",
            object(2, 1, json!({"phase": "Succeeded"})),
            "Progressing",
        ),
        (
            "Goal",
            object(
                1,
                1,
                json!({"phase": "Succeeded", "progress": "3/3", "conditions": [condition("Ready", "True", "Succeeded")]}),
            ),
            "Healthy",
        ),
        ("Goal", object(1, 1, json!({"phase": "Failed"})), "Degraded"),
        (
            "Goal",
            object(
                1,
                1,
                json!({"phase": "Waiting", "conditions": [condition("Blocked", "True", "Deadlock")]}),
            ),
            "Degraded",
        ),
        (
            "Goal",
            object(
                1,
                1,
                json!({"phase": "Paused", "conditions": [condition("Paused", "True", "StepFailed")]}),
            ),
            "Degraded",
        ),
        (
            "Goal",
            object(
                1,
                1,
                json!({"phase": "Paused", "conditions": [condition("Paused", "True", "Requested")]}),
            ),
            "Suspended",
        ),
        // A refused edit of a completed step: the goal stays Succeeded, but Git and
        // the cluster disagree.
        (
            "Goal",
            object(
                2,
                2,
                json!({"phase": "Succeeded", "progress": "1/1", "conditions": [condition("Progressing", "False", "SpecConflict")]}),
            ),
            "Degraded",
        ),
        (
            "Goal",
            object(
                1,
                1,
                json!({"phase": "Running", "conditions": [condition("Progressing", "False", "PodRefused")]}),
            ),
            "Degraded",
        ),
        (
            "Goal",
            object(
                1,
                1,
                json!({"phase": "Running", "conditions": [condition("Progressing", "False", "NameTaken")]}),
            ),
            "Degraded",
        ),
        (
            "Goal",
            object(
                1,
                1,
                json!({"phase": "Running", "conditions": [condition("Progressing", "True", "StepRunning")]}),
            ),
            "Progressing",
        ),
        (
            "PRWatch",
            json!({"metadata": {"generation": 1}}),
            "Progressing",
        ),
        (
            "PRWatch",
            object(
                1,
                1,
                json!({"phase": "Watching", "conditions": [condition("Polling", "True", "Polled"), condition("Ready", "True", "Watching")]}),
            ),
            "Healthy",
        ),
        (
            "PRWatch",
            object(
                1,
                1,
                json!({"phase": "Watching", "conditions": [condition("Polling", "False", "PollFailed")]}),
            ),
            "Progressing",
        ),
        (
            "PRWatch",
            object(
                1,
                1,
                json!({"phase": "Merged", "conditions": [condition("Ready", "True", "Merged")]}),
            ),
            "Healthy",
        ),
        (
            "PRWatch",
            object(
                1,
                1,
                json!({"phase": "Closed", "conditions": [condition("Ready", "True", "Closed")]}),
            ),
            "Healthy",
        ),
        (
            "PRWatch",
            object(
                1,
                1,
                json!({"phase": "Stopped", "conditions": [condition("Ready", "True", "Stopped")]}),
            ),
            "Healthy",
        ),
        (
            "PRWatch",
            object(1, 1, json!({"phase": "Failing"})),
            "Degraded",
        ),
        (
            "PRWatch",
            object(1, 1, json!({"phase": "Exhausted"})),
            "Degraded",
        ),
        (
            "Swarm",
            json!({"metadata": {"generation": 1}}),
            "Progressing",
        ),
        (
            "Swarm",
            object(
                1,
                1,
                json!({"phase": "Suspended", "conditions": [condition("Ready", "False", "OverseerNotReady")]}),
            ),
            "Suspended",
        ),
        (
            "Swarm",
            object(
                1,
                1,
                json!({"phase": "Ended", "end": {"reason": "TimedOut", "time": "2026-12-05T00:00:00Z"}}),
            ),
            "Degraded",
        ),
        (
            "Swarm",
            object(
                1,
                1,
                json!({"phase": "Ended", "end": {"reason": "Completed", "time": "2026-12-05T00:00:00Z"}}),
            ),
            "Healthy",
        ),
        (
            "Swarm",
            object(
                1,
                1,
                json!({"conditions": [condition("SpecValid", "True", "Valid"), condition("Ready", "True", "Ready")]}),
            ),
            "Healthy",
        ),
        (
            "Swarm",
            object(
                1,
                1,
                json!({"conditions": [condition("SpecValid", "True", "Valid"), condition("Ready", "False", "MembersMissing")]}),
            ),
            "Progressing",
        ),
        (
            "Swarm",
            object(
                1,
                1,
                json!({"conditions": [condition("SpecValid", "False", "InvalidSpec"), condition("Ready", "True", "Ready")]}),
            ),
            "Degraded",
        ),
        (
            "Swarm",
            object(
                2,
                1,
                json!({"conditions": [condition("Ready", "True", "Ready")]}),
            ),
            "Progressing",
        ),
    ];
    let mut wrong = Vec::new();
    for (kind, object, expected) in rows {
        let object = as_written(kind, object);
        let (health, message) = argocd(kind, &object);
        if health != expected || message.is_empty() {
            wrong.push(format!(
                "{kind} {}: {health} ({message}), not {expected}",
                object["status"]
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
