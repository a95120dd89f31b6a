//! Kubernetes Conditions kept as a list-map keyed by `type`: `lastTransitionTime`
//! changes only when `status` changes; and how every kind's plan records them and
//! the Events it asks for (`Recording`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

// The condition types of every kind (DESIGN.md), matched by `kubectl wait --for=condition=...`.

/// Agent: its pod runs and is ready. Swarm: every member exists and its overseer is ready.
pub const READY: &str = "Ready";
/// Agent: it must keep working until it declares done or blocked.
pub const IN_LOOP: &str = "InLoop";
/// Agent: it stopped without declaring done or blocked.
pub const STOPPED_EARLY: &str = "StoppedEarly";
/// Agent: working, but nothing changed for `loop.stallAfter` (named `Stalled` before
/// `Stalled` took the meaning every GitOps tool reads: docs/design-notes.md).
pub const INACTIVE: &str = "Inactive";
/// Agent: no progress report (`overseer loop progress`) for `loop.reportEvery`.
pub const UNRESPONSIVE: &str = "Unresponsive";
/// Agent: the agent its `spec.overseer` names agreed to oversee it (set only once an
/// overseer refused: False until it agrees).
pub const OVERSEER_ACCEPTED: &str = "OverseerAccepted";
/// Goal: a step runs or can start.
pub const PROGRESSING: &str = "Progressing";
/// Goal: no new step starts (asked for, or a step failed for good).
pub const PAUSED: &str = "Paused";
/// Goal: a step waits on another that cannot finish.
pub const BLOCKED: &str = "Blocked";
/// PRWatch: its agent can take a wake.
pub const AGENT_READY: &str = "AgentReady";
/// PRWatch: the last poll of GitHub succeeded.
pub const POLLING: &str = "Polling";
/// PRWatch: the watch goes on (False once it ended).
pub const WATCHING: &str = "Watching";
/// PRWatch: GitHub asked it to wait.
pub const RATE_LIMITED: &str = "RateLimited";
/// Swarm: its spec can be composed into agents.
pub const SPEC_VALID: &str = "SpecValid";
/// Every kind: it will not get better without a change of its spec or a person's
/// answer (abnormal-true, as kstatus reads it: src/health.rs).
pub const STALLED: &str = "Stalled";
/// Every kind: the operator works towards its spec (src/health.rs).
pub const RECONCILING: &str = "Reconciling";

/// Sets condition `type_`; returns whether its status changed (a transition).
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &Time,
) -> bool {
    let status = if status { "True" } else { "False" };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            let changed = existing.status != status;
            if changed {
                existing.last_transition_time = now.clone();
            }
            existing.status = status.into();
            existing.reason = reason.into();
            existing.message = message.into();
            existing.observed_generation = generation;
            changed
        }
        None => {
            conditions.push(Condition {
                type_: type_.into(),
                status: status.into(),
                reason: reason.into(),
                message: message.into(),
                observed_generation: generation,
                last_transition_time: now.clone(),
            });
            true
        }
    }
}

/// An Event a pure plan asks for; its controller publishes it behind the reconcile.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PlannedEvent {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

/// What each kind's pure plan does besides deciding, written once here: set its
/// conditions (each with the plan's one time and the generation it observed) and ask
/// for Events. A plan's builder says only where its conditions and Events go.
pub trait Recording {
    /// The planned status's conditions, the generation observed and the plan's time.
    fn stamped(&mut self) -> (&mut Vec<Condition>, Option<i64>, &Time);
    /// Where an Event asked for goes.
    fn queue(&mut self, event: PlannedEvent);

    /// Sets condition `type_`; true when its status changed.
    fn condition(&mut self, type_: &str, status: bool, reason: &str, message: &str) -> bool {
        let (conditions, generation, now) = self.stamped();
        set(conditions, type_, status, reason, message, generation, now)
    }

    fn event(&mut self, warning: bool, reason: &'static str, message: String) {
        self.queue(PlannedEvent {
            warning,
            reason,
            message,
        });
    }
}

/// Restores the `lastTransitionTime` of each condition of `after` whose status is the
/// one it had in `before` (the status as read): a condition set twice in one
/// reconcile (False, then True again) has not changed.
pub fn keep_transitions(before: &[Condition], after: &mut [Condition]) {
    for condition in after.iter_mut() {
        if let Some(was) = before
            .iter()
            .find(|b| b.type_ == condition.type_ && b.status == condition.status)
        {
            condition.last_transition_time = was.last_transition_time.clone();
        }
    }
}

/// Whether condition `type_` is present and True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap())
    }

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let mut conditions = Vec::new();
        assert!(set(
            &mut conditions,
            "Paused",
            true,
            "StepFailed",
            "a",
            Some(1),
            &at(10)
        ));
        assert!(!set(
            &mut conditions,
            "Paused",
            true,
            "StepFailed",
            "b",
            Some(2),
            &at(20)
        ));
        assert_eq!(conditions[0].last_transition_time, at(10));
        assert_eq!(conditions[0].message, "b");
        assert!(set(
            &mut conditions,
            "Paused",
            false,
            "Resumed",
            "c",
            Some(2),
            &at(30)
        ));
        assert_eq!(conditions[0].last_transition_time, at(30));
        assert!(!is_true(&conditions, "Paused"));
        assert_eq!(conditions.len(), 1);
    }
}
