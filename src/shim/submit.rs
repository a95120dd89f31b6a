//! Whether a TUI took what was typed into it. A CLI that is not ready yet (Claude Code
//! while it starts, Copilot while it loads) shows the text in its input box and
//! ignores Enter; counting that as delivered would lose the message. After typing, the
//! shim finds where the text ends on the screen (the anchor); after each Enter it looks
//! again: the text gone from there means the input box emptied and the CLI took it.
//! All pure: the shim's delivery (mod.rs) sends the keys and looks.

/// How many characters of the typed text's end are looked for on the screen: enough
/// to be the text's own, few enough not to wrap in an input box.
const TAIL_CHARS: usize = 12;

/// Where the typed text showed, to be looked at again after Enter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    /// The cursor is on row `row` after the text's end, as in a line editor (the
    /// program may have written after it, as a shell reading the lines of a paste
    /// does): taken once the cursor left that row or the text is no longer before it.
    Cursor { row: usize, tail: String },
    /// The text's end shows on row `row` (the last such row), away from the cursor (a
    /// TUI that draws its own cursor, or a line editor the program wrote past): taken
    /// once that row changes or the cursor goes to another row than `cursor_row` (a
    /// line editor moves on after a submitted line and leaves it where it was).
    Row {
        row: usize,
        line: String,
        cursor_row: Option<usize>,
    },
    /// The text's end is not on the screen (a CLI that shows a paste as a summary):
    /// taken once the screen changes at all.
    Screen(String),
}

/// The cursor's position on the pane: column and row, from 0.
pub type Cursor = (usize, usize);

/// Where `message`, just typed, shows on `screen`.
pub fn anchor(screen: &str, cursor: Option<Cursor>, message: &str) -> Anchor {
    let Some(tail) = tail(message) else {
        return Anchor::Screen(screen.to_string());
    };
    if let Some((column, row)) = cursor
        && left_of(screen, column, row).contains(tail.as_str())
    {
        return Anchor::Cursor { row, tail };
    }
    let lines: Vec<&str> = screen.lines().collect();
    match lines.iter().enumerate().rfind(|(_, l)| l.contains(&tail)) {
        Some((row, line)) => Anchor::Row {
            row,
            line: (*line).to_string(),
            cursor_row: cursor.map(|(_, row)| row),
        },
        None => Anchor::Screen(screen.to_string()),
    }
}

/// Whether the CLI took the text anchored at `anchor`, by the screen now.
pub fn taken(anchor: &Anchor, screen: &str, cursor: Option<Cursor>) -> bool {
    match anchor {
        Anchor::Cursor { row, tail } => match cursor {
            Some((column, now_row)) => {
                now_row != *row || !left_of(screen, column, now_row).contains(tail.as_str())
            }
            None => true,
        },
        Anchor::Row {
            row,
            line,
            cursor_row,
        } => {
            let moved = cursor_row.is_some() && cursor.map(|(_, r)| r) != *cursor_row;
            moved || screen.lines().nth(*row) != Some(line.as_str())
        }
        Anchor::Screen(before) => screen != before,
    }
}

/// The end of the message's last non-blank line, as a terminal shows it.
fn tail(message: &str) -> Option<String> {
    let last = message.lines().rfind(|l| !l.trim().is_empty())?.trim_end();
    let chars: Vec<char> = last.chars().collect();
    Some(
        chars[chars.len().saturating_sub(TAIL_CHARS)..]
            .iter()
            .collect(),
    )
}

/// Row `row` of the screen up to column `column`, without trailing blanks.
fn left_of(screen: &str, column: usize, row: usize) -> String {
    let line = screen.lines().nth(row).unwrap_or_default();
    let left: String = line.chars().take(column).collect();
    left.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPED: &str = "overseer: continue with the failing test";

    #[test]
    fn the_anchor_is_the_cursor_when_it_follows_the_text_else_the_row_else_the_screen() {
        let line_editor = "thinking 3\n> overseer: continue with the failing test\n";
        let own_cursor = "│ ❯ overseer: continue with the failing test   │\n│ status bar │\n";
        let summary = "│ > [Pasted text #1 +3 lines] │\n";
        let rows = [
            (
                line_editor,
                Some((42, 1)),
                Anchor::Cursor {
                    row: 1,
                    tail: "failing test".into(),
                },
            ),
            (
                own_cursor,
                Some((0, 1)),
                Anchor::Row {
                    row: 0,
                    line: own_cursor.lines().next().unwrap().into(),
                    cursor_row: Some(1),
                },
            ),
            (
                own_cursor,
                None,
                Anchor::Row {
                    row: 0,
                    line: own_cursor.lines().next().unwrap().into(),
                    cursor_row: None,
                },
            ),
            (summary, Some((31, 0)), Anchor::Screen(summary.into())),
            // A line editor that printed prompts after the text's end (the lines of a
            // paste read before Enter).
            (
                "> overseer: continue with the failing test> > >\n",
                Some((48, 0)),
                Anchor::Cursor {
                    row: 0,
                    tail: "failing test".into(),
                },
            ),
        ];
        for (screen, cursor, expected) in rows {
            assert_eq!(anchor(screen, cursor, TYPED), expected, "{screen}");
        }
        assert_eq!(
            anchor("x", Some((0, 0)), " \n "),
            Anchor::Screen("x".into()),
            "nothing typeable"
        );
    }

    #[test]
    fn the_text_is_taken_once_it_left_its_place() {
        let typed = "thinking 3\n> overseer: continue with the failing test\n";
        let at_cursor = anchor(typed, Some((42, 1)), TYPED);
        let submitted =
            "thinking 3\n> overseer: continue with the failing test\nworking on it\n> \n";
        // The input box emptied and its echo stayed above, where the line was typed.
        let echoed_in_place = "› overseer: continue with the failing test\n› \n";
        let boxed = "│ ❯ overseer: continue with the failing test   │\n│ status bar │\n";
        let at_row = anchor(boxed, None, TYPED);
        let written_past = "> overseer: continue with the failing testworking on it\ndone\n> ";
        let past_end = anchor(written_past, Some((2, 2)), TYPED);
        let rows = [
            (&at_cursor, typed, Some((42, 1)), false),
            (&at_cursor, submitted, Some((2, 3)), true),
            (&at_cursor, echoed_in_place, Some((2, 1)), true),
            // A spinner elsewhere moves nothing on the text's row.
            (
                &at_cursor,
                &format!("{typed}⠋ loading"),
                Some((42, 1)),
                false,
            ),
            (&at_row, boxed, None, false),
            (&at_row, "│ ❯ │\n│ status bar │\n", None, true),
            (&at_row, &format!("{boxed}⠙"), Some((5, 2)), false),
            // The program wrote past the text's end and then took the line: the row stays,
            // the cursor goes on.
            (&past_end, written_past, Some((2, 2)), false),
            (&past_end, &format!("{written_past}> "), Some((2, 3)), true),
        ];
        for (anchor, screen, cursor, expected) in rows {
            assert_eq!(
                taken(anchor, screen, cursor),
                expected,
                "{anchor:?}\n{screen}"
            );
        }
        // Submitted in a line editor: the line stays where it was, the cursor goes on.
        let prompts_after = "> overseer: continue with the failing test> > >\n";
        let at_prompts = anchor(prompts_after, Some((48, 0)), TYPED);
        assert!(!taken(&at_prompts, prompts_after, Some((48, 0))));
        assert!(taken(
            &at_prompts,
            &format!("{prompts_after}> "),
            Some((2, 1))
        ));
        let summary = Anchor::Screen("│ > [Pasted text #1 +3 lines] │".into());
        assert!(!taken(&summary, "│ > [Pasted text #1 +3 lines] │", None));
        assert!(taken(&summary, "│ > │\n✻ Working", None));
    }
}
