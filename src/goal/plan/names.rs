//! What names a step's run: its pod's name and the fingerprints that tell an edited
//! step from the one recorded.

use super::graph::Run;
use crate::kinds::goal::Step;

/// Deterministic pod name of a step attempt: a retried reconcile never makes a twin.
pub fn pod_name(goal: &str, step: usize, attempt: i32) -> String {
    let suffix = format!("-s{step}-a{attempt}");
    // Cut names end in a hash of the whole: two long goals sharing a beginning must
    // not share their step pods.
    format!("{}{suffix}", crate::api::fit_name(goal, 253 - suffix.len()))
}

/// Stable hash of a step's spec (FNV-1a over its JSON).
pub fn fingerprint(step: &Step) -> String {
    let json = serde_json::to_string(step).unwrap_or_default();
    format!("{:016x}", crate::api::fnv1a(json.as_bytes()))
}

/// Stable hash of a run: its step's, and for an item, the step without its list (items
/// may be appended, as steps may) and the item.
pub fn run_fingerprint(run: &Run) -> String {
    let Some(item) = run.item else {
        return fingerprint(run.step);
    };
    let step = Step {
        for_each: None,
        ..run.step.clone()
    };
    let json = serde_json::to_string(&step).unwrap_or_default();
    format!(
        "{:016x}",
        crate::api::fnv1a(format!("{json}\n{item}").as_bytes())
    )
}
