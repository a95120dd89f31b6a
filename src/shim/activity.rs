//! What the agent is doing, judged from its output and its process (never from
//! network traffic): a pure tracker fed with observations.

use std::time::Duration;

use jiff::Timestamp;

use crate::agent::ActivityState;

/// One look at the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation<'a> {
    /// The current screen (TUI) or the latest output (headless), and whether it
    /// changed since the last look.
    Output { changed: bool, text: &'a str },
    /// The agent process ended.
    Exited(i32),
    /// A new process was started (a resumed run or a respawned TUI).
    Restarted,
    /// Input was typed and submitted (Enter sent): the agent works on it from now, before
    /// its screen shows it. Reporting the idle it was in would let the operator act on a
    /// stop that has just ended (a nudge typed on top of the agent's first prompt).
    Typed,
}

/// How many non-blank lines at the bottom of the screen make its prompt area: where a
/// CLI asks its questions (a permission dialog, a first-run dialog), as against the
/// output above it, which may quote such words without asking anything.
pub const PROMPT_AREA_LINES: usize = 15;

/// The last `PROMPT_AREA_LINES` non-blank lines of `screen`.
pub fn prompt_area(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(PROMPT_AREA_LINES);
    lines[start..].join("\n")
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tracker {
    pub state: ActivityState,
    pub since: Timestamp,
    pub last_activity: Timestamp,
    pub exit_code: Option<i32>,
    /// No output change for this long means idle.
    quiet: Duration,
    waiting_patterns: Vec<String>,
}

impl Tracker {
    pub fn new(now: Timestamp, quiet: Duration, waiting_patterns: &[&str]) -> Tracker {
        Tracker {
            state: ActivityState::Starting,
            since: now,
            last_activity: now,
            exit_code: None,
            quiet,
            waiting_patterns: waiting_patterns.iter().map(|p| p.to_string()).collect(),
        }
    }

    /// Whether `screen` shows one of the CLI's questions for a person (a permission
    /// prompt) in its prompt area.
    pub fn asks_a_person(&self, screen: &str) -> bool {
        let area = prompt_area(screen);
        self.waiting_patterns
            .iter()
            .any(|p| area.contains(p.as_str()))
    }

    /// Feeds one observation; returns whether the state changed.
    pub fn observe(&mut self, observation: Observation, now: Timestamp) -> bool {
        let (next, since) = match observation {
            Observation::Exited(code) => {
                self.exit_code = Some(code);
                (ActivityState::Exited, now)
            }
            Observation::Restarted => {
                self.exit_code = None;
                self.last_activity = now;
                (ActivityState::Starting, now)
            }
            Observation::Typed => {
                if self.state == ActivityState::Exited {
                    return false;
                }
                self.last_activity = now;
                (ActivityState::Working, now)
            }
            Observation::Output { changed, text } => {
                if self.state == ActivityState::Exited {
                    return false;
                }
                if changed {
                    self.last_activity = now;
                }
                if self.asks_a_person(text) {
                    (ActivityState::Waiting, now)
                } else if changed {
                    (ActivityState::Working, now)
                } else if self.state == ActivityState::Starting
                    || elapsed(self.last_activity, now) < self.quiet
                {
                    (self.state, self.since)
                } else {
                    // Idle began when the output stopped, not when we noticed.
                    (ActivityState::Idle, self.last_activity)
                }
            }
        };
        let changed = next != self.state;
        if changed {
            self.state = next;
            self.since = since;
        }
        changed
    }
}

fn elapsed(from: Timestamp, to: Timestamp) -> Duration {
    to.duration_since(from).try_into().unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millisecond(1_800_000_000_000 + ms).unwrap()
    }

    #[test]
    fn states_follow_output_prompts_and_exit() {
        let mut t = Tracker::new(at(0), Duration::from_secs(2), &["Allow?"]);
        let out = |changed, text| Observation::Output { changed, text };
        // (observation at ms, expected state, expected since ms, state changed)
        let rows: Vec<(Observation, i64, ActivityState, i64, bool)> = vec![
            (out(false, ""), 500, ActivityState::Starting, 0, false),
            (
                out(true, "thinking"),
                1000,
                ActivityState::Working,
                1000,
                true,
            ),
            (
                out(true, "editing"),
                1500,
                ActivityState::Working,
                1000,
                false,
            ),
            (
                out(false, "editing"),
                3000,
                ActivityState::Working,
                1000,
                false,
            ),
            (out(false, "editing"), 3600, ActivityState::Idle, 1500, true),
            (
                out(false, "editing"),
                9000,
                ActivityState::Idle,
                1500,
                false,
            ),
            (Observation::Typed, 9200, ActivityState::Working, 9200, true),
            (
                out(true, "Allow? (y/n)"),
                9500,
                ActivityState::Waiting,
                9500,
                true,
            ),
            (
                out(false, "Allow? (y/n)"),
                20000,
                ActivityState::Waiting,
                9500,
                false,
            ),
            (
                out(true, "running tests"),
                21000,
                ActivityState::Working,
                21000,
                true,
            ),
            (
                Observation::Exited(3),
                22000,
                ActivityState::Exited,
                22000,
                true,
            ),
            (
                out(true, "late output"),
                22500,
                ActivityState::Exited,
                22000,
                false,
            ),
            (
                Observation::Restarted,
                30000,
                ActivityState::Starting,
                30000,
                true,
            ),
            (
                out(true, "resumed"),
                30500,
                ActivityState::Working,
                30500,
                true,
            ),
        ];
        for (i, (observation, now, state, since, changed)) in rows.into_iter().enumerate() {
            assert_eq!(t.observe(observation, at(now)), changed, "row {i}: changed");
            assert_eq!((t.state, t.since), (state, at(since)), "row {i}");
        }
        assert_eq!(t.exit_code, None, "a restart clears the exit code");
    }

    #[test]
    fn only_the_prompt_area_can_ask_for_a_person() {
        let mut t = Tracker::new(at(0), Duration::from_secs(5), &["(y/n)"]);
        let quoted = format!(
            "$ grep -r '(y/n)' src\nsrc/ask.rs: prompt(\"Continue? (y/n)\")\n{}> ",
            "working on the next file\n".repeat(PROMPT_AREA_LINES)
        );
        t.observe(
            Observation::Output {
                changed: true,
                text: &quoted,
            },
            at(1),
        );
        assert_eq!(
            t.state,
            ActivityState::Working,
            "a quote far above the prompt"
        );
        let asking = format!("{quoted}\n\nDelete the build directory? (y/n)\n\n\n");
        t.observe(
            Observation::Output {
                changed: true,
                text: &asking,
            },
            at(2),
        );
        assert_eq!(t.state, ActivityState::Waiting, "a question at the bottom");
    }
}
