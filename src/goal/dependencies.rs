//! Whether a goal's `dependsOn` predecessors let it start: all succeeded, some still
//! to come, one stalled (paused or failed), or a cycle.

use std::collections::BTreeMap;

use crate::kinds::goal::GoalPhase;

pub enum DependencyState {
    Ready,
    Waiting(String),
    Deadlock(String),
    Stalled(String),
}

/// Whether `name`'s predecessors allow it to start.
pub fn dependency_state(
    name: &str,
    depends_on: &[String],
    goals: &[GoalSummary],
) -> DependencyState {
    if depends_on.is_empty() {
        return DependencyState::Ready;
    }
    let by_name: BTreeMap<&str, &GoalSummary> =
        goals.iter().map(|g| (g.name.as_str(), g)).collect();
    if let Some(cycle) = find_cycle(name, depends_on, &by_name) {
        return DependencyState::Deadlock(format!("dependency cycle: {}", cycle.join(" -> ")));
    }
    let mut waiting = Vec::new();
    for predecessor in depends_on {
        match by_name.get(predecessor.as_str()).and_then(|g| g.phase) {
            Some(GoalPhase::Succeeded) => {}
            Some(phase @ (GoalPhase::Paused | GoalPhase::Failed)) => {
                return DependencyState::Stalled(format!("predecessor {predecessor} is {phase:?}"));
            }
            _ if !by_name.contains_key(predecessor.as_str()) => {
                waiting.push(format!("{predecessor} (not found)"))
            }
            _ => waiting.push(predecessor.clone()),
        }
    }
    if waiting.is_empty() {
        DependencyState::Ready
    } else {
        DependencyState::Waiting(format!("waiting for {}", waiting.join(", ")))
    }
}

/// A path from `start` back to itself through `dependsOn`, if any.
pub(crate) fn find_cycle(
    start: &str,
    depends_on: &[String],
    goals: &BTreeMap<&str, &GoalSummary>,
) -> Option<Vec<String>> {
    let mut stack: Vec<(String, Vec<String>)> = depends_on
        .iter()
        .map(|d| (d.clone(), vec![start.to_string(), d.clone()]))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    while let Some((current, path)) = stack.pop() {
        if current == start {
            return Some(path);
        }
        if !seen.insert(current.clone()) {
            continue;
        }
        if let Some(goal) = goals.get(current.as_str()) {
            for next in &goal.depends_on {
                let mut next_path = path.clone();
                next_path.push(next.clone());
                stack.push((next.clone(), next_path));
            }
        }
    }
    None
}

/// Another goal of the namespace, for `dependsOn`.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalSummary {
    pub name: String,
    pub phase: Option<GoalPhase>,
    pub depends_on: Vec<String>,
}
