//! The shim's local socket: one JSON request line, one JSON reply line. The CLI
//! (`overseer input`, `overseer loop`) are its clients inside the pod.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::agent::{Activity, ExitOutcome};

/// Where the shim listens inside an agent pod (the `/overseer` emptyDir).
pub const DEFAULT_SOCKET: &str = "/overseer/run/input.sock";
/// Longest message accepted (a wake names many agents; keep it bounded).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// Longest progress summary kept (`overseer ps` shows one line per agent).
pub const MAX_SUMMARY_CHARS: usize = 200;

/// Why the shim refuses input while the CLI asks a person a question.
pub const WAITS_ON_A_PERSON: &str =
    "the agent is waiting on a person (a permission prompt); nothing is typed over it";

/// `text` as it may be typed into an agent's terminal: no control character but the
/// newline and the tab. ESC would end a bracketed paste early (`ESC [201~`) and let the
/// rest run as keys, or start any other escape sequence; Ctrl-C and Ctrl-D would stop
/// or end the CLI; a carriage return would submit what comes before it. C1 controls
/// (the one-byte CSI included) go too. A carriage return becomes a newline.
pub fn typeable(text: &str) -> String {
    text.replace("\r\n", "\n")
        .chars()
        .map(|c| if c == '\r' { '\n' } else { c })
        .filter(|&c| c == '\n' || c == '\t' || !c.is_control())
        .collect()
}

/// `text` as one line: control characters and runs of whitespace become one space,
/// cut at `max` characters (with `…`); None when nothing is left.
pub fn one_line(text: &str, max: usize) -> Option<String> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    let line = words.join(" ");
    if line.is_empty() {
        return None;
    }
    if line.chars().count() <= max {
        return Some(line);
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    Some(cut)
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    /// Deliver a message to the agent (TUI: typed then Enter; headless: a resumed run).
    /// `ids` name what it delivers (a send, a nudge, each woken member): when the shim
    /// has delivered every one of them already, it confirms without typing again, so
    /// an operator that retries a delivery whose answer it lost never doubles it.
    Input {
        message: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ids: Vec<String>,
    },
    /// Whether every one of `ids` was delivered (nothing is typed): an operator that
    /// stopped between typing a delivery and recording it asks before it records.
    Confirm { ids: Vec<String> },
    /// The agent reports what it is doing (`overseer loop progress`).
    Progress { summary: String },
    /// `overseer guard` blocked a tool call, for this reason (the guard's words).
    Guarded { reason: String },
    /// The agent ends its loop (`overseer loop done|block`).
    Exit {
        outcome: ExitOutcome,
        reason: Option<String>,
    },
    /// The shim's current view of the agent.
    Status,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Reply {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<Activity>,
}

impl Reply {
    pub fn ok() -> Reply {
        Reply {
            ok: true,
            error: None,
            activity: None,
        }
    }

    pub fn refused(error: impl Into<String>) -> Reply {
        Reply {
            ok: false,
            error: Some(error.into()),
            activity: None,
        }
    }
}

/// Sends one request to the shim at `socket` and waits for its reply.
pub async fn request(socket: &Path, request: &Request, timeout: Duration) -> Result<Reply, String> {
    let exchange = async {
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .map_err(|e| format!("cannot reach the shim at {}: {e}", socket.display()))?;
        let (read, mut write) = stream.into_split();
        let mut line = serde_json::to_vec(request).map_err(|e| e.to_string())?;
        line.push(b'\n');
        write
            .write_all(&line)
            .await
            .map_err(|e| format!("sending to the shim: {e}"))?;
        let mut reply = String::new();
        BufReader::new(read)
            .read_line(&mut reply)
            .await
            .map_err(|e| format!("reading the shim's reply: {e}"))?;
        serde_json::from_str::<Reply>(&reply)
            .map_err(|e| format!("the shim's reply is not understood ({e}): {reply:?}"))
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| format!("the shim did not answer within {timeout:?}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_text_keeps_no_control_character_but_newline_and_tab() {
        let table = [
            ("continue with the tests", "continue with the tests"),
            ("two\nlines\tand a tab", "two\nlines\tand a tab"),
            // The end of a bracketed paste, then keys: only harmless text is left.
            ("done\x1b[201~\x03\r/exit\r", "done[201~\n/exit\n"),
            ("windows\r\nline", "windows\nline"),
            ("eof\x04 bell\x07 del\x7f", "eof bell del"),
            ("c1 csi\u{9b}31m", "c1 csi31m"),
            ("\x1b\x1b\x03", ""),
        ];
        for (text, typed) in table {
            assert_eq!(typeable(text), typed, "{text:?}");
        }
    }

    #[test]
    fn a_summary_is_one_bounded_line() {
        let table = [
            ("fixing the parser", 200, Some("fixing the parser")),
            (
                "  two\nlines\t and\x1b[31m escapes ",
                200,
                Some("two lines and [31m escapes"),
            ),
            (" \n\t ", 200, None),
            ("abcdefgh", 5, Some("abcd…")),
            ("ééééé", 5, Some("ééééé")),
        ];
        for (text, max, expected) in table {
            assert_eq!(one_line(text, max).as_deref(), expected, "{text:?}");
        }
    }
}
