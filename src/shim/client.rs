//! The in-pod commands that talk to the shim: `overseer input` (the exec target of
//! nudges and wakes) and `overseer loop done|block`.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::protocol::{self, MAX_MESSAGE_BYTES, Reply, Request};
use crate::agent::ExitOutcome;
use crate::{Error, Result};

/// Typing, a pause and Enter, or a restarted TUI, all fit in this.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads the message (exactly `bytes`, or to the end), hands it to the shim with the
/// delivery `ids`, and succeeds only when the shim confirms delivery.
pub async fn input(bytes: Option<usize>, ids: Vec<String>, socket: &Path) -> Result<()> {
    let mut stdin = tokio::io::stdin();
    let mut message = Vec::new();
    match bytes {
        Some(n) if n > MAX_MESSAGE_BYTES => {
            return Err(Error::Usage(format!(
                "message of {n} bytes is over the {MAX_MESSAGE_BYTES}-byte limit"
            )));
        }
        Some(n) => {
            message.resize(n, 0);
            stdin
                .read_exact(&mut message)
                .await
                .map_err(|e| Error::Usage(format!("expected {n} bytes on stdin: {e}")))?;
        }
        None => {
            (&mut stdin)
                .take(MAX_MESSAGE_BYTES as u64 + 1)
                .read_to_end(&mut message)
                .await?;
            if message.len() > MAX_MESSAGE_BYTES {
                return Err(Error::Usage(format!(
                    "message is over the {MAX_MESSAGE_BYTES}-byte limit"
                )));
            }
        }
    }
    let message =
        String::from_utf8(message).map_err(|_| Error::Usage("the message is not UTF-8".into()))?;
    let request = Request::Input { message, ids };
    confirmed(protocol::request(socket, &request, DELIVERY_TIMEOUT).await)
}

/// Succeeds only when the shim has delivered every one of `ids` (it types nothing).
pub async fn confirm(ids: Vec<String>, socket: &Path) -> Result<()> {
    confirmed(protocol::request(socket, &Request::Confirm { ids }, DELIVERY_TIMEOUT).await)
}

/// Reports what the agent is doing now (`status.activity.summary`).
pub async fn progress(summary: String, socket: &Path) -> Result<()> {
    confirmed(protocol::request(socket, &Request::Progress { summary }, DELIVERY_TIMEOUT).await)
}

/// Records the agent's own end of its loop for the current attempt.
pub async fn exit(outcome: ExitOutcome, reason: Option<String>, socket: &Path) -> Result<()> {
    confirmed(protocol::request(socket, &Request::Exit { outcome, reason }, DELIVERY_TIMEOUT).await)
}

fn confirmed(reply: Result<Reply, String>) -> Result<()> {
    match reply {
        Ok(Reply { ok: true, .. }) => Ok(()),
        Ok(Reply { error, .. }) => Err(Error::NotDelivered(format!(
            "not delivered: {}",
            error.unwrap_or_else(|| "refused".into())
        ))),
        Err(error) => Err(Error::NotDelivered(format!("not delivered: {error}"))),
    }
}
