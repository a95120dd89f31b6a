//! Step progress Events, folded. Every step is checkpointed in the goal's status, which
//! `kubectl describe` shows; a Normal Event for each step started and each step
//! succeeded were two of the five API writes of every step transition (docs/goal.md "At
//! scale"). So a goal's progress Events go out at most once per `EVERY`: one that comes
//! sooner is folded, and the goal's next Event that goes out says how many it stands
//! for. A step that runs longer than `EVERY` still gets its own Events; a burst of quick
//! steps costs one. Warnings and the goal's own Events (succeeded, failed, paused,
//! resumed) are never folded.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most one progress Event per goal this often.
pub const EVERY: Duration = Duration::from_secs(30);
/// A goal not heard of for this long is forgotten (it ended or was deleted).
const FORGET_AFTER: Duration = Duration::from_secs(600);
/// Goals remembered before the forgotten ones are swept out.
const SWEEP_ABOVE: usize = 4096;

/// What became of an Event about a goal.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It goes out, standing also for `folded` progress Events folded before it.
    Publish { folded: u32 },
    /// A progress Event too soon after the goal's last: folded into its next.
    Fold,
}

#[derive(Default)]
pub struct ProgressEvents {
    goals: Mutex<HashMap<String, Last>>,
}

struct Last {
    /// When the goal's last progress Event went out.
    published: Instant,
    /// Progress Events folded since any Event of the goal went out.
    folded: u32,
    heard: Instant,
}

impl ProgressEvents {
    /// Whether an Event about `goal` (its namespace/name) goes out at `now`: a progress
    /// Event only `EVERY` after the goal's last, any other always.
    pub fn judge(&self, goal: &str, progress: bool, now: Instant) -> Verdict {
        let mut goals = self.goals.lock().unwrap_or_else(|e| e.into_inner());
        if goals.len() > SWEEP_ABOVE {
            goals.retain(|_, last| now.duration_since(last.heard) < FORGET_AFTER);
        }
        let last = goals.entry(goal.to_string()).or_insert(Last {
            published: now.checked_sub(EVERY).unwrap_or(now),
            folded: 0,
            heard: now,
        });
        last.heard = now;
        if progress && now.duration_since(last.published) < EVERY {
            last.folded += 1;
            return Verdict::Fold;
        }
        if progress {
            last.published = now;
        }
        Verdict::Publish {
            folded: std::mem::take(&mut last.folded),
        }
    }
}

/// `message`, saying how many progress Events it stands for besides its own.
pub fn with_folded(message: &str, folded: u32) -> String {
    match folded {
        0 => message.to_string(),
        1 => format!("{message} (and 1 step event before it: status.steps has each step)"),
        n => format!("{message} (and {n} step events before it: status.steps has each step)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_quick_steps_costs_one_event_and_the_next_says_what_it_stands_for() {
        let events = ProgressEvents::default();
        let t0 = Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        let rows = [
            // (goal, progress, at, expected)
            ("team/ship", true, at(0), Verdict::Publish { folded: 0 }),
            ("team/ship", true, at(1), Verdict::Fold),
            ("team/ship", true, at(2), Verdict::Fold),
            // Another goal is judged on its own.
            ("team/other", true, at(2), Verdict::Publish { folded: 0 }),
            // A warning or the goal's own Event always goes out, carrying the folds.
            ("team/ship", false, at(3), Verdict::Publish { folded: 2 }),
            ("team/ship", true, at(4), Verdict::Fold),
            // A step longer than EVERY gets its own Event again.
            ("team/ship", true, at(31), Verdict::Publish { folded: 1 }),
            ("team/ship", true, at(62), Verdict::Publish { folded: 0 }),
        ];
        for (i, (goal, progress, now, expected)) in rows.into_iter().enumerate() {
            assert_eq!(events.judge(goal, progress, now), expected, "row {i}");
        }
    }

    #[test]
    fn the_message_names_the_folded_events() {
        assert_eq!(with_folded("the goal succeeded", 0), "the goal succeeded");
        assert_eq!(
            with_folded("the goal succeeded", 4),
            "the goal succeeded (and 4 step events before it: status.steps has each step)"
        );
    }
}
