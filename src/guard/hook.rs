//! `overseer guard --runtime R`: the CLI's pre-tool hook. Reads the call from stdin and
//! the policy from its read-only mount, and answers as the runtime expects: exit 0 to
//! let the call run; to block it, exit 2 with the reason on stderr (Claude Code and
//! codex feed that text to the model, pi's extension hands it on), or for copilot a
//! `deny` with the reason on stdout. Anything it cannot read blocks the call: a guard that
//! cannot check fails closed. A block is told to the shim, which counts it in the
//! agent's status; a shim that cannot be reached changes nothing of the verdict.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::{Call, Policy, Verdict, claude, codex, copilot, judge, pi};
use crate::shim::protocol::{self, Request};

/// The exit code that blocks a tool call.
const BLOCK: i32 = 2;
/// Larger hook input than this is not read (a file's whole content may be in it).
const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;
/// The shim answers at once; the CLI waits on this hook.
const TELL_TIMEOUT: Duration = Duration::from_secs(2);

/// The runtimes whose hook input `overseer guard` reads.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookRuntime {
    Claude,
    Codex,
    Copilot,
    Pi,
}

/// Runs the hook; returns the process's exit code.
pub async fn run(runtime: HookRuntime, policy: &Path, socket: &Path) -> i32 {
    let verdict = match read(runtime, policy).await {
        Ok((policy, tool, calls)) => calls
            .iter()
            .map(|call| judge(&policy, &tool, call))
            .find(|verdict| *verdict != Verdict::Allow)
            .unwrap_or(Verdict::Allow),
        Err(reason) => Verdict::Block(format!("overseer guard: {reason}; the call is blocked")),
    };
    match verdict {
        Verdict::Allow => 0,
        Verdict::Block(reason) => {
            eprintln!("{reason}");
            let tell = Request::Guarded {
                reason: reason.clone(),
            };
            // Uncounted when the shim is away: the reason is the model's, not a log.
            let _ = protocol::request(socket, &tell, TELL_TIMEOUT).await;
            match runtime {
                HookRuntime::Copilot => {
                    println!("{}", copilot::deny(&reason));
                    0
                }
                _ => BLOCK,
            }
        }
    }
}

/// The policy, the tool's name and the calls it makes (a codex patch writes several
/// files, a copilot search may name several paths; every other call is one).
async fn read(
    runtime: HookRuntime,
    policy_path: &Path,
) -> Result<(Policy, String, Vec<Call>), String> {
    let text = std::fs::read_to_string(policy_path)
        .map_err(|e| format!("its policy {} cannot be read ({e})", policy_path.display()))?;
    let policy: Policy = serde_json::from_str(&text).map_err(|e| {
        format!(
            "its policy {} is not understood ({e})",
            policy_path.display()
        )
    })?;
    let mut input = Vec::new();
    tokio::io::stdin()
        .take(MAX_INPUT_BYTES)
        .read_to_end(&mut input)
        .await
        .map_err(|e| format!("the tool call cannot be read ({e})"))?;
    let parse = |error: serde_json::Error| format!("the tool call is not understood ({error})");
    let (tool, calls) = match runtime {
        // codex sends Claude Code's input; its patches are read for their files.
        HookRuntime::Claude | HookRuntime::Codex => {
            let input: claude::HookInput = serde_json::from_slice(&input).map_err(parse)?;
            let calls = match runtime {
                HookRuntime::Codex => codex::calls(&input),
                _ => vec![claude::call(&input)],
            };
            (input.tool_name, calls)
        }
        HookRuntime::Copilot => {
            let input: copilot::HookInput = serde_json::from_slice(&input).map_err(parse)?;
            (input.tool_name.clone(), copilot::calls(&input))
        }
        HookRuntime::Pi => {
            let input: pi::HookInput = serde_json::from_slice(&input).map_err(parse)?;
            (input.tool_name.clone(), vec![pi::call(&input)])
        }
    };
    Ok((policy, tool, calls))
}
