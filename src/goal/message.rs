//! The words of a goal: its overseer's wake for a step outcome (fixed wording, quoting
//! nothing a step wrote), and the short texts of failures and durations in status.

use std::time::Duration;

/// The wake an overseer gets for a step outcome (fixed wording, snapshot-tested).
pub fn outcome_message(namespace: &str, goal: &str, outcome: &StepOutcome) -> String {
    format!(
        "[overseer] goal: goal={goal} step={}/{} name={} attempt={} outcome={} next={}\n\
         The step's result and message are in the Goal's status.steps[{}] (kubectl -n {namespace} get goal {goal} -o yaml). \
         This message quotes nothing the step wrote.\n",
        outcome.position,
        outcome.steps,
        outcome.step,
        outcome.attempt,
        outcome.outcome,
        outcome.next,
        outcome.position - 1,
    )
}

/// A duration as a user wrote it in the spec: `2h`, `5m`, `30s`, `250ms`.
pub(crate) fn humanize(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        s if s % 3600 == 0 && s > 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 && s > 0 => format!("{}m", s / 60),
        s if s > 0 => format!("{s}s"),
        _ => format!("{}ms", duration.as_millis()),
    }
}

/// A step's outcome as the overseer is told it: names, numbers and what happens
/// next, never the step's output.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepOutcome {
    /// 1-based position and the number of steps.
    pub position: usize,
    pub steps: usize,
    pub step: String,
    pub attempt: i32,
    /// `succeeded`, `failed` or `timed out`.
    pub outcome: &'static str,
    /// What the goal does next, in words.
    pub next: String,
}
