//! What a TUI agent shows, mirrored to the container log: only lines that are new on
//! the pane, without terminal noise, bounded, so `kubectl logs` and `overseer peek`
//! read like the agent's transcript instead of screen redraws.

use std::collections::{HashSet, VecDeque};

/// Lines mirrored from one look at most (a full redraw is not a transcript).
const MAX_LINES_PER_LOOK: usize = 60;
/// Characters kept of one line.
const MAX_LINE_CHARS: usize = 400;
/// Lines remembered as already mirrored: a spinner or a redrawn status line that
/// cycles through a few variants is printed once, not on every frame.
const REMEMBERED: usize = 512;

#[derive(Default)]
pub struct Mirror {
    recent: VecDeque<String>,
    seen: HashSet<String>,
}

impl Mirror {
    /// The lines of `screen` to mirror: not blank, not on the `previous` screen,
    /// not mirrored recently; control characters removed and long lines cut.
    pub fn new_lines(&mut self, previous: &str, screen: &str) -> Vec<String> {
        let before: HashSet<&str> = previous.lines().map(str::trim_end).collect();
        let mut out = Vec::new();
        for line in screen.lines().map(str::trim_end) {
            if line.trim().is_empty() || before.contains(line) {
                continue;
            }
            let clean = clean(line);
            if self.seen.contains(&clean) {
                continue;
            }
            self.remember(clean.clone());
            out.push(clean);
        }
        let excess = out.len().saturating_sub(MAX_LINES_PER_LOOK);
        if excess > 0 {
            out.drain(..excess);
            out.insert(0, format!("[overseer] {excess} more lines not mirrored"));
        }
        out
    }

    fn remember(&mut self, line: String) {
        if self.recent.len() == REMEMBERED
            && let Some(oldest) = self.recent.pop_front()
        {
            self.seen.remove(&oldest);
        }
        self.seen.insert(line.clone());
        self.recent.push_back(line);
    }
}

fn clean(line: &str) -> String {
    let mut kept: String = line
        .chars()
        .filter(|c| *c == '\t' || !c.is_control())
        .take(MAX_LINE_CHARS)
        .collect();
    if line.chars().count() > MAX_LINE_CHARS {
        kept.push('…');
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_clean_lines_are_mirrored() {
        let mut mirror = Mirror::default();
        // (case, previous screen, screen, mirrored)
        let rows: &[(&str, &str, &str, &[&str])] = &[
            (
                "first screen",
                "",
                "$ build\ncompiling\n\n",
                &["$ build", "compiling"],
            ),
            (
                "scrolling adds a line",
                "$ build\ncompiling",
                "$ build\ncompiling\ndone   ",
                &["done"],
            ),
            (
                "unchanged lines are not repeated",
                "done",
                "done\n> ",
                &[">"],
            ),
            ("a spinner frame seen before is skipped", "", "done\n>", &[]),
            ("control characters go", "", "bell\u{7}here", &["bellhere"]),
        ];
        for (case, previous, screen, expected) in rows {
            assert_eq!(mirror.new_lines(previous, screen), *expected, "{case}");
        }
    }

    #[test]
    fn output_is_bounded() {
        let mut mirror = Mirror::default();
        let screen: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let lines = mirror.new_lines("", &screen);
        assert_eq!(lines.len(), MAX_LINES_PER_LOOK + 1);
        assert_eq!(lines[0], "[overseer] 40 more lines not mirrored");
        assert_eq!(lines[1], "line 40");
        let long = mirror.new_lines("", &"x".repeat(1000));
        assert_eq!(long[0].chars().count(), MAX_LINE_CHARS + 1);
        // Memory is bounded too.
        let many: String = (0..2000).map(|i| format!("row {i}\n")).collect();
        mirror.new_lines("", &many);
        assert!(mirror.recent.len() <= REMEMBERED && mirror.seen.len() <= REMEMBERED);
    }
}
