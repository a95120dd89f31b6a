//! What `kubectl get` and GitOps tools read of a goal's status: the steps current, and
//! its Ready condition.

use crate::conditions;
use crate::kinds::goal::{GoalPhase, GoalStatus, StepPhase};
use crate::reasons;

/// The steps running (at most three by name, then how many more), else the first
/// not done: what `kubectl get` shows as Current.
pub fn current_steps(status: &GoalStatus) -> Option<String> {
    const NAMED: usize = 3;
    let running: Vec<&str> = status
        .steps
        .iter()
        .filter(|s| s.phase == StepPhase::Running)
        .map(|s| s.name.as_str())
        .collect();
    if running.is_empty() {
        return status
            .steps
            .iter()
            .find(|s| s.phase != StepPhase::Succeeded)
            .map(|s| s.name.clone());
    }
    let mut current = running[..running.len().min(NAMED)].join(",");
    if running.len() > NAMED {
        current.push_str(&format!(",+{}", running.len() - NAMED));
    }
    Some(current)
}

/// The goal's `Ready` condition, for `kubectl wait` and GitOps tools: True once it
/// succeeded; else why not, from what says most: a spec conflict, a block (a deadlock,
/// a stalled predecessor), else the phase, with the progress as the message.
pub fn readiness(status: &GoalStatus) -> (bool, String, String) {
    let progress = format!("{} steps done", status.progress.as_deref().unwrap_or("0/0"));
    let holding = |type_: &str, wanted: &str| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status == wanted)
    };
    if let Some(conflict) = holding(conditions::PROGRESSING, "False")
        .filter(|c| c.reason == reasons::SPEC_CONFLICT)
        .or_else(|| holding(conditions::BLOCKED, "True"))
    {
        return (false, conflict.reason.clone(), conflict.message.clone());
    }
    let phase = match status.phase.unwrap_or(GoalPhase::Pending) {
        GoalPhase::Succeeded => return (true, reasons::SUCCEEDED.into(), progress),
        GoalPhase::Pending => reasons::PENDING,
        GoalPhase::Waiting => reasons::WAITING,
        GoalPhase::Running => reasons::RUNNING,
        GoalPhase::Paused => reasons::PAUSED,
        GoalPhase::Failed => reasons::FAILED,
    };
    (false, phase.into(), progress)
}
