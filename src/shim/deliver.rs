//! Delivering a message to the agent: typed into its TUI and submitted with Enter until
//! the CLI took it (submit.rs), or, headless, a resumed run with it as the prompt.

use std::time::Duration;

use jiff::Timestamp;
use tracing::info;

use super::activity::Observation;
use super::protocol::{self, Reply};
use super::{Driver, POLL, Shim, submit, tmux};
use crate::runtimes;

/// Pause between typing a message and pressing Enter.
const TYPE_PAUSE: Duration = Duration::from_millis(300);
/// How long typed text may take to show on a busy TUI's screen before the delivery is
/// refused with nothing submitted.
const SHOW_WAIT: Duration = Duration::from_secs(2);
/// How many times Enter is sent before a delivery the CLI did not take is refused, and
/// how long the shim watches for the text to leave its input box after each.
const ENTER_TRIES: u32 = 3;
const ENTER_WAIT: Duration = Duration::from_millis(1500);

impl Shim {
    /// Delivers a message, stripped of control characters; Ok only when delivery is
    /// confirmed.
    pub(super) async fn deliver(&mut self, message: &str) -> Reply {
        let message = &protocol::typeable(message);
        if message.trim().is_empty() {
            return Reply::refused("empty message");
        }
        match &self.driver {
            Driver::Headless(_) => self.deliver_headless(message),
            Driver::Tui(_) => self.deliver_to_tui(message).await,
        }
    }

    /// A new run resuming the session, with the message as its prompt.
    fn deliver_headless(&mut self, message: &str) -> Reply {
        let Driver::Headless(headless) = &mut self.driver else {
            unreachable!("called for a headless driver")
        };
        if headless.running() {
            return Reply::refused("a run is in progress; the message was not delivered");
        }
        let resume = runtimes::with_prompt(self.runtime, &self.args.command, true, message);
        if let Err(error) = headless.start(&resume) {
            return Reply::refused(format!("starting the resumed run failed: {error}"));
        }
        self.tracker
            .observe(Observation::Restarted, Timestamp::now());
        self.report_due = true;
        Reply::ok()
    }

    /// Typed into the TUI (restarted first if it exited), then submitted with Enter
    /// until the CLI took it. The same message refused before because the CLI did not
    /// take it, and still in its input box, is submitted without typing it again.
    async fn deliver_to_tui(&mut self, message: &str) -> Reply {
        let Driver::Tui(tmux) = &self.driver else {
            unreachable!("called for a TUI driver")
        };
        let now = match tmux.look().await {
            Ok(look) => look,
            Err(error) => {
                return Reply::refused(format!("the agent's pane is unreachable: {error}"));
            }
        };
        let anchor = match self.left_in_box.take() {
            Some((text, anchor))
                if now.exited.is_none()
                    && text == message
                    && !submit::taken(&anchor, &now.screen, now.cursor) =>
            {
                info!(
                    "the message is still in the CLI's input box: Enter, without typing it again"
                );
                anchor
            }
            _ => {
                if now.exited.is_some() {
                    // The TUI ended: start it again, resuming its session, then type.
                    let command = runtimes::with_resume(self.runtime, &self.args.command);
                    if let Err(error) = tmux.respawn(&command).await {
                        return Reply::refused(format!("restarting the agent failed: {error}"));
                    }
                    self.tracker
                        .observe(Observation::Restarted, Timestamp::now());
                    self.report_due = true;
                    if !wait_for_screen(tmux).await {
                        return Reply::refused("the restarted agent showed nothing within 15s");
                    }
                }
                match type_into(tmux, message).await {
                    Ok(anchor) => anchor,
                    Err(reason) => return Reply::refused(reason),
                }
            }
        };
        match submit_with_enter(tmux, &anchor).await {
            Ok(()) => {
                self.dialogs_answered.starting = false;
                if self.tracker.observe(Observation::Typed, Timestamp::now()) {
                    self.report_due = true;
                }
                Reply::ok()
            }
            Err(reason) => {
                self.left_in_box = Some((message.to_string(), anchor));
                Reply::refused(reason)
            }
        }
    }
}

/// Pastes `message` into the pane and waits for it to show (a busy TUI may draw it a
/// second or two late); Ok holds where it showed, for `submit_with_enter`.
async fn type_into(tmux: &tmux::Tmux, message: &str) -> Result<submit::Anchor, String> {
    let before = tmux.look().await.map(|l| l.screen).unwrap_or_default();
    tmux.type_text(message)
        .await
        .map_err(|error| format!("typing failed: {error}"))?;
    tokio::time::sleep(TYPE_PAUSE).await;
    let deadline = tokio::time::Instant::now() + SHOW_WAIT;
    loop {
        let typed = tmux
            .look()
            .await
            .map_err(|error| format!("the agent's pane is unreachable after typing: {error}"))?;
        let anchor = submit::anchor(&typed.screen, typed.cursor, message);
        let changed = typed.screen != before;
        let late = tokio::time::Instant::now() >= deadline;
        match anchor {
            // The text itself showed; or, at the deadline, the screen changed (a paste
            // shown as a summary).
            submit::Anchor::Cursor { .. } | submit::Anchor::Row { .. } if changed => {
                return Ok(anchor);
            }
            _ if changed && late => return Ok(anchor),
            _ if late => {
                return Err(
                    "the typed text did not show on the agent's screen; Enter was not sent".into(),
                );
            }
            _ => tokio::time::sleep(POLL).await,
        }
    }
}

/// Sends Enter until the typed text leaves its place on the screen (the CLI took it),
/// at most `ENTER_TRIES` times: a CLI that is not ready shows the text and ignores
/// Enter. Err holds the reason the delivery failed; the text is then still in the
/// CLI's input box.
async fn submit_with_enter(tmux: &tmux::Tmux, anchor: &submit::Anchor) -> Result<(), String> {
    for attempt in 1..=ENTER_TRIES {
        tmux.enter()
            .await
            .map_err(|error| format!("sending Enter failed: {error}"))?;
        let deadline = tokio::time::Instant::now() + ENTER_WAIT;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let look = tmux
                .look()
                .await
                .map_err(|error| format!("the agent's pane is unreachable: {error}"))?;
            if look.exited.is_some() || submit::taken(anchor, &look.screen, look.cursor) {
                if attempt > 1 {
                    info!(attempt, "the CLI took the input after Enter was sent again");
                }
                return Ok(());
            }
        }
    }
    Err(format!(
        "the CLI did not take the input: the text stayed in its input box after {ENTER_TRIES} Enters, {} s apart (not ready yet?)",
        ENTER_WAIT.as_secs_f32()
    ))
}

/// Waits until a freshly started TUI shows something.
async fn wait_for_screen(tmux: &tmux::Tmux) -> bool {
    for _ in 0..60 {
        if let Ok(look) = tmux.look().await
            && look.exited.is_none()
            && !look.screen.trim().is_empty()
        {
            tokio::time::sleep(Duration::from_millis(500)).await;
            return true;
        }
        tokio::time::sleep(POLL).await;
    }
    false
}
