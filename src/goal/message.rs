//! The words of a goal: its overseer's wake for a step outcome (fixed wording, quoting
//! nothing a step wrote), and the short texts of failures and durations in status.

use std::time::Duration;

use super::plan::{MAX_RESULT_BYTES, StepOutcome, StepPod};

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

/// A step's result cut to `MAX_RESULT_BYTES` at a character boundary.
pub(crate) fn truncate_result(message: &str) -> String {
    if message.len() <= MAX_RESULT_BYTES {
        return message.to_string();
    }
    let mut end = MAX_RESULT_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message[..end].to_string()
}

/// Why a step pod failed, in words: its exit code and the kubelet's reason.
pub(crate) fn failure_message(pod: &StepPod) -> String {
    let mut message = format!(
        "exit code {}",
        pod.exit_code.map_or("unknown".into(), |c| c.to_string())
    );
    if let Some(reason) = &pod.reason {
        message.push_str(&format!(" ({reason})"));
    }
    message
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
