//! The first-run dialogs the shim answers (folder trust, an API key, the autonomy
//! mode): only while the CLI starts, a few times each, never over a question to a person.

use std::time::Duration;

use tracing::{info, warn};

use super::{activity, tmux};
use crate::runtimes;

/// How often each first-run dialog (by its index in the registry) was answered, until
/// when no dialog is answered again (the CLI may take a moment to move on), and whether
/// the CLI is still starting: dialogs are answered only then.
pub(super) struct DialogsAnswered {
    pub(super) counts: Vec<u32>,
    pub(super) quiet_until: Option<tokio::time::Instant>,
    /// From the CLI's start until the first input is typed into it. Afterwards the
    /// screen holds text the model wrote, and keys sent on its words would answer a
    /// question nobody approved.
    pub(super) starting: bool,
}

impl DialogsAnswered {
    pub(super) fn new(runtime: &runtimes::Runtime) -> Self {
        DialogsAnswered {
            counts: vec![0; runtime.first_run_dialogs.len()],
            quiet_until: None,
            starting: true,
        }
    }
}

/// Answers the first-run dialog of `runtime` that `dialog_to_answer` picks.
pub(super) async fn answer_first_run_dialog(
    runtime: &runtimes::Runtime,
    answered: &mut DialogsAnswered,
    tmux: &tmux::Tmux,
    screen: &str,
    asks_a_person: bool,
) {
    const QUIET: Duration = Duration::from_secs(2);
    let now = tokio::time::Instant::now();
    let Some(i) = dialog_to_answer(runtime, answered, screen, asks_a_person, now) else {
        return;
    };
    let dialog = &runtime.first_run_dialogs[i];
    answered.counts[i] += 1;
    answered.quiet_until = Some(now + QUIET);
    info!(dialog = dialog.pattern, keys = ?dialog.keys, "answering a first-run dialog");
    for key in dialog.keys {
        if let Err(error) = tmux.key(key).await {
            warn!(%error, "answering a first-run dialog failed");
            return;
        }
    }
}

/// The first-run dialog (folder trust, theme, the autonomy mode) to answer now: the one
/// showing lowest in the prompt area, a few times at most (`answered` counts them per
/// dialog; one that stays is then left on screen for a person, its activity judged
/// from the screen as any other). Only while the CLI starts, and never while the screen
/// asks a person something: a permission prompt is theirs to answer.
pub(super) fn dialog_to_answer(
    runtime: &runtimes::Runtime,
    answered: &DialogsAnswered,
    screen: &str,
    asks_a_person: bool,
    now: tokio::time::Instant,
) -> Option<usize> {
    const MAX_ANSWERS: u32 = 3;
    if !answered.starting || asks_a_person || answered.quiet_until.is_some_and(|until| now < until)
    {
        return None;
    }
    dialog_showing(runtime, screen).filter(|&i| answered.counts[i] < MAX_ANSWERS)
}

/// The first-run dialog of `runtime` asking now (its index in the registry): the
/// lowest in the prompt area, since one answered may still show above it.
pub(super) fn dialog_showing(runtime: &runtimes::Runtime, screen: &str) -> Option<usize> {
    let area = activity::prompt_area(screen);
    runtime
        .first_run_dialogs
        .iter()
        .enumerate()
        .filter_map(|(i, d)| area.rfind(d.pattern).map(|at| (at, i)))
        .max_by_key(|(at, _)| *at)
        .map(|(_, i)| i)
}

#[cfg(test)]
mod tests {
    use super::super::tests::real_cli_fixture;
    use super::{DialogsAnswered, activity, dialog_showing, dialog_to_answer};
    use crate::agent::ActivityState;
    use crate::api::RuntimeName;
    use crate::runtimes;

    fn screen(path: &str) -> String {
        String::from_utf8(real_cli_fixture(path)).expect("a screen is text")
    }

    #[test]
    fn the_real_clis_screens_through_the_shims_matcher() {
        // (runtime, screen, the first-run dialog the shim answers, judged waiting for a human)
        let rows = [
            (
                RuntimeName::Claude,
                "claude-2.1.332/trust-dialog.txt",
                Some("Is this a project you created or one you trust?"),
                false,
            ),
            (
                RuntimeName::Claude,
                "claude-2.1.332/api-key-dialog.txt",
                Some("Do you want to use this API key?"),
                false,
            ),
            (
                RuntimeName::Claude,
                "claude-2.1.332/bypass-permissions-dialog.txt",
                Some("Claude Code running in Bypass Permissions mode"),
                false,
            ),
            (RuntimeName::Claude, "claude-2.1.332/ready.txt", None, false),
            (
                RuntimeName::Claude,
                "claude-2.1.332/turn-ended-after-tool-call.txt",
                None,
                false,
            ),
            (
                RuntimeName::Claude,
                "claude-2.1.332/permission-prompt.txt",
                None,
                true,
            ),
            (
                RuntimeName::Codex,
                "codex-0.171.0/trust-dialog.txt",
                Some("Trust this folder?"),
                false,
            ),
            (RuntimeName::Codex, "codex-0.171.0/ready.txt", None, false),
            (
                RuntimeName::Codex,
                "codex-0.171.0/turn-ended-after-tool-call.txt",
                None,
                false,
            ),
            (
                RuntimeName::Codex,
                "codex-0.171.0/approval-prompt.txt",
                None,
                true,
            ),
            (
                RuntimeName::Copilot,
                "copilot-1.0.102/trust-dialog.txt",
                Some("Do you trust the files in this folder?"),
                false,
            ),
            (
                RuntimeName::Copilot,
                "copilot-1.0.102/ready.txt",
                None,
                false,
            ),
            (
                RuntimeName::Copilot,
                "copilot-1.0.102/turn-ended-after-tool-call.txt",
                None,
                false,
            ),
            (
                RuntimeName::Copilot,
                "copilot-1.0.102/permission-prompt.txt",
                None,
                true,
            ),
            (
                RuntimeName::Copilot,
                "copilot-1.0.102/path-permission-prompt.txt",
                None,
                true,
            ),
            (RuntimeName::Pi, "pi-0.73.1/ready.txt", None, false),
            (
                RuntimeName::Pi,
                "pi-0.73.1/turn-ended-after-tool-call.txt",
                None,
                false,
            ),
        ];
        for (name, path, dialog, waiting) in rows {
            let runtime = runtimes::lookup(name);
            let text = screen(path);
            let answered =
                dialog_showing(runtime, &text).map(|i| runtime.first_run_dialogs[i].pattern);
            assert_eq!(answered, dialog, "{path}");
            let now = jiff::Timestamp::now();
            let mut tracker = activity::Tracker::new(
                now,
                std::time::Duration::from_secs(5),
                runtime.waiting_patterns,
            );
            tracker.observe(
                activity::Observation::Output {
                    changed: true,
                    text: &text,
                },
                now,
            );
            assert_eq!(tracker.state == ActivityState::Waiting, waiting, "{path}");
        }
    }

    #[test]
    fn dialogs_are_answered_only_while_the_cli_starts_and_never_over_a_question() {
        let runtime = runtimes::lookup(RuntimeName::Claude);
        let trust = screen("claude-2.1.332/trust-dialog.txt");
        let permission = screen("claude-2.1.332/permission-prompt.txt");
        // The model's reply quotes a dialog under a permission prompt's question.
        let quoted_under_question = format!("{permission}\n{trust}");
        let tracker = activity::Tracker::new(
            jiff::Timestamp::now(),
            std::time::Duration::from_secs(5),
            runtime.waiting_patterns,
        );
        let now = tokio::time::Instant::now();
        let answered = |starting: bool, counts: u32, quiet: bool| DialogsAnswered {
            counts: vec![counts; runtime.first_run_dialogs.len()],
            quiet_until: quiet.then(|| now + std::time::Duration::from_secs(1)),
            starting,
        };
        // (screen, starting, answers so far, quiet, answered)
        let rows = [
            (&trust, true, 0, false, true),
            (&trust, false, 0, false, false),
            (&trust, true, 3, false, false),
            (&trust, true, 0, true, false),
            (&quoted_under_question, true, 0, false, false),
            (&permission, true, 0, false, false),
        ];
        for (screen, starting, counts, quiet, expected) in rows {
            let asks = tracker.asks_a_person(screen);
            let picked = dialog_to_answer(
                runtime,
                &answered(starting, counts, quiet),
                screen,
                asks,
                now,
            );
            assert_eq!(
                picked.is_some(),
                expected,
                "starting {starting}, {counts} answers, quiet {quiet}:\n{screen}"
            );
        }
    }
}
