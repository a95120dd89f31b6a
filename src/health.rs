//! What every reader of status makes of our objects, decided in one place: kstatus
//! (Flux's Kustomization `wait`, Helm 4's `--wait`, cli-utils), `kubectl wait` and the
//! Argo CD health scripts in gitops/argocd/health/ all read the same three conditions
//! this module sets on each kind, so they cannot disagree:
//! - `Stalled=True` (abnormal-true, as kstatus documents it): the object will not get
//!   better without a change of its spec or a person's answer. kstatus: Failed; Argo
//!   CD: Degraded; `Ready` is never True beside it on a kind whose spec is invalid.
//! - `Reconciling=True`: the operator works towards the spec (a pod starting, a step
//!   running, a first poll). kstatus: InProgress; Argo CD: Progressing.
//! - `Ready=True`: as the spec asks, running or finished for good. kstatus: Current;
//!   Argo CD: Healthy.
//!
//! Suspended or paused by the spec is none of them: kstatus reads InProgress (from
//! `Ready=False`), Argo CD Suspended. The table is docs/gitops.md's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::conditions;
use crate::kinds::agent::{AgentPhase, AgentStatus, EscalationState, ExitOutcome, Severity};
use crate::kinds::goal::{GoalPhase, GoalStatus};
use crate::kinds::prwatch::{PRWatchPhase, PRWatchStatus};
use crate::kinds::swarm::{EndReason, SwarmPhase, SwarmStatus};
use crate::reasons;

/// How every reader is to read an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// As its spec asks (running, or finished for good).
    Current,
    /// The operator works towards the spec: why, and what it waits for.
    InProgress(String, String),
    /// Suspended or paused by its spec: nothing to do until it is resumed.
    Suspended,
    /// Needs a change or a person: why, and what to do.
    Stalled(String, String),
}

/// Sets `Stalled` and `Reconciling` as `reading` says (both are always present, so a
/// reader never takes an absent condition for an old one).
pub fn set(
    conditions: &mut Vec<Condition>,
    reading: &Reading,
    generation: Option<i64>,
    now: &Time,
) {
    let (stalled, reconciling) = match reading {
        Reading::Stalled(reason, message) => (
            (true, reason.as_str(), message.as_str()),
            (
                false,
                reasons::STALLED,
                "stalled: see the Stalled condition",
            ),
        ),
        Reading::InProgress(reason, message) => (
            (false, reasons::PROGRESSING, "the operator is working on it"),
            (true, reason.as_str(), message.as_str()),
        ),
        Reading::Suspended => (
            (false, reasons::SUSPENDED, "suspended by its spec"),
            (false, reasons::SUSPENDED, "suspended by its spec"),
        ),
        Reading::Current => (
            (false, reasons::AS_EXPECTED, "as its spec asks"),
            (false, reasons::AS_EXPECTED, "as its spec asks"),
        ),
    };
    for (type_, (status, reason, message)) in [
        (conditions::STALLED, stalled),
        (conditions::RECONCILING, reconciling),
    ] {
        conditions::set(conditions, type_, status, reason, message, generation, now);
    }
}

fn condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The reason and message of condition `type_` when its status is `status`.
fn when(conditions: &[Condition], type_: &str, status: &str) -> Option<(String, String)> {
    condition(conditions, type_)
        .filter(|c| c.status == status)
        .map(|c| (c.reason.clone(), c.message.clone()))
}

fn ready_or(conditions: &[Condition], reason: &str, message: &str) -> Reading {
    match condition(conditions, conditions::READY) {
        Some(c) if c.status == "True" => Reading::Current,
        Some(c) => Reading::InProgress(c.reason.clone(), c.message.clone()),
        None => Reading::InProgress(reason.into(), message.into()),
    }
}

/// `Ready=False` reasons of an Agent that only a change of its spec (or of what it
/// refers to) mends. A swarm not found is not one: GitOps tools apply in no set order,
/// and it may be on its way.
const AGENT_NEEDS_A_CHANGE: [&str; 5] = [
    reasons::POD_REFUSED,
    reasons::NAME_TAKEN,
    reasons::IMAGE_NOT_PULLED,
    reasons::NO_IMAGE,
    reasons::INVALID_SPEC,
];

/// How to read an Agent (`name` for the command a person runs).
pub fn agent(name: &str, status: &AgentStatus) -> Reading {
    let conditions = &status.conditions;
    if let Some((reason, message)) = when(conditions, conditions::READY, "False")
        .filter(|(reason, _)| AGENT_NEEDS_A_CHANGE.contains(&reason.as_str()))
    {
        return Reading::Stalled(reason, message);
    }
    match status.phase {
        Some(phase @ (AgentPhase::Blocked | AgentPhase::Failed)) => {
            let (reason, message) = when(conditions, conditions::IN_LOOP, "False")
                .unwrap_or_else(|| (format!("{phase:?}"), format!("the agent is {phase:?}")));
            Reading::Stalled(reason, message)
        }
        Some(AgentPhase::Done) => Reading::Current,
        Some(AgentPhase::Suspended) => Reading::Suspended,
        Some(AgentPhase::Running) => match critical_escalation(status) {
            Some((id, kind)) => Reading::Stalled(
                reasons::ESCALATED.into(),
                format!("critical escalation #{id} ({kind}) is open: overseer escalations {name}"),
            ),
            None => ready_or(conditions, reasons::POD_CREATED, "waiting for the pod"),
        },
        Some(AgentPhase::Pending) | None => {
            ready_or(conditions, reasons::POD_CREATED, "waiting for the pod")
        }
    }
}

fn critical_escalation(status: &AgentStatus) -> Option<(i64, String)> {
    status
        .escalations
        .iter()
        .filter(|e| e.state == EscalationState::Open && e.severity == Severity::Critical)
        .map(|e| {
            let kind = serde_json::to_value(e.kind).ok();
            let kind = kind
                .as_ref()
                .and_then(|k| k.as_str())
                .unwrap_or("escalation");
            (e.id, kind.to_string())
        })
        .next_back()
}

/// Sets an Agent's `Stalled` and `Reconciling`; a finished agent (Done, or released by
/// its overseer) is `Ready`: nothing more will run, as asked. `before`: the conditions
/// as read, against which transitions are timed.
pub fn settle_agent(
    name: &str,
    status: &mut AgentStatus,
    before: &[Condition],
    generation: Option<i64>,
    now: &Time,
) {
    if status.phase == Some(AgentPhase::Done) {
        let released = status
            .current_exit()
            .is_some_and(|e| e.outcome == ExitOutcome::Released);
        let (reason, message) = if released {
            (
                reasons::RELEASED,
                "released by its overseer (overseer loop release); no pod runs",
            )
        } else {
            (reasons::DONE, "finished (overseer loop done); no pod runs")
        };
        conditions::set(
            &mut status.conditions,
            conditions::READY,
            true,
            reason,
            message,
            generation,
            now,
        );
    }
    let reading = agent(name, status);
    set(&mut status.conditions, &reading, generation, now);
    conditions::keep_transitions(before, &mut status.conditions);
}

/// `Progressing=False` reasons of a Goal that only a change of its spec mends.
const GOAL_NEEDS_A_CHANGE: [&str; 4] = [
    reasons::SPEC_CONFLICT,
    reasons::INVALID_SPEC,
    reasons::POD_REFUSED,
    reasons::NAME_TAKEN,
];

/// How to read a Goal.
pub fn goal(status: &GoalStatus) -> Reading {
    let conditions = &status.conditions;
    let progress = status.progress.clone().unwrap_or_default();
    if let Some((reason, message)) = when(conditions, conditions::PROGRESSING, "False")
        .filter(|(reason, _)| GOAL_NEEDS_A_CHANGE.contains(&reason.as_str()))
    {
        return Reading::Stalled(reason, message);
    }
    if let Some((reason, message)) = when(conditions, conditions::BLOCKED, "True") {
        return Reading::Stalled(reason, message);
    }
    match status.phase {
        Some(GoalPhase::Succeeded) => Reading::Current,
        Some(GoalPhase::Failed) => {
            let message = when(conditions, conditions::READY, "False")
                .map_or_else(|| format!("failed at step {progress}"), |(_, m)| m);
            Reading::Stalled(reasons::FAILED.into(), message)
        }
        Some(GoalPhase::Paused) => match when(conditions, conditions::PAUSED, "True") {
            Some((reason, message)) if reason == reasons::STEP_FAILED => {
                Reading::Stalled(reason, message)
            }
            _ => Reading::Suspended,
        },
        Some(phase) => Reading::InProgress(
            format!("{phase:?}"),
            format!("{phase:?}: {progress} steps done"),
        ),
        None => Reading::InProgress(reasons::PENDING.into(), "not started".into()),
    }
}

/// How to read a PRWatch.
pub fn prwatch(status: &PRWatchStatus) -> Reading {
    match status.phase {
        Some(PRWatchPhase::Merged | PRWatchPhase::Closed | PRWatchPhase::Stopped) => {
            Reading::Current
        }
        Some(phase @ (PRWatchPhase::Failing | PRWatchPhase::Exhausted)) => {
            let message = when(&status.conditions, conditions::READY, "False")
                .map_or_else(|| format!("{phase:?}"), |(_, m)| m);
            Reading::Stalled(format!("{phase:?}"), message)
        }
        Some(PRWatchPhase::Watching) | None => ready_or(
            &status.conditions,
            reasons::NOT_POLLED_YET,
            "waiting for the first poll",
        ),
    }
}

/// How to read a Swarm.
pub fn swarm(status: &SwarmStatus) -> Reading {
    if let Some((reason, message)) = when(&status.conditions, conditions::SPEC_VALID, "False") {
        return Reading::Stalled(reason, message);
    }
    match (status.phase, status.end.as_ref().map(|e| e.reason)) {
        (Some(SwarmPhase::Ended), Some(EndReason::TimedOut)) => Reading::Stalled(
            reasons::TIMED_OUT.into(),
            "the run timed out (spec.timeout); its report is in status.end".into(),
        ),
        (Some(SwarmPhase::Ended), _) => Reading::Current,
        (Some(SwarmPhase::Suspended), _) => Reading::Suspended,
        _ => ready_or(&status.conditions, reasons::MEMBERS_MISSING, "composing"),
    }
}

/// Sets a Swarm's `Stalled` and `Reconciling`: one whose spec is invalid is never
/// `Ready`, and a run that completed is (nothing more will run, as asked). `before`:
/// the conditions as read, against which transitions are timed.
pub fn settle_swarm(
    status: &mut SwarmStatus,
    before: &[Condition],
    generation: Option<i64>,
    now: &Time,
) {
    let ready = match swarm(status) {
        Reading::Stalled(reason, message) => Some((false, reason, message)),
        Reading::Current if status.phase == Some(SwarmPhase::Ended) => Some((
            true,
            reasons::COMPLETED.to_string(),
            "the run completed; its report is in status.end".to_string(),
        )),
        _ => None,
    };
    if let Some((ready, reason, message)) = ready {
        conditions::set(
            &mut status.conditions,
            conditions::READY,
            ready,
            &reason,
            &message,
            generation,
            now,
        );
    }
    let reading = swarm(status);
    set(&mut status.conditions, &reading, generation, now);
    conditions::keep_transitions(before, &mut status.conditions);
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
