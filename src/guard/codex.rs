//! codex's side of the guards: its managed requirements (`/etc/codex/requirements.toml`),
//! which run `overseer guard` as a `PreToolUse` hook, pin the hooks feature on (a user's
//! `features.hooks = false`, in a file or on the command line, cannot turn it off) and
//! allow managed hooks only. Managed hooks need no hook trust, so `codex exec` and the
//! TUI run them alike. Tried against codex 0.171: the same call with the hook in the
//! user's own config did not run it (untrusted), and with the feature unpinned a
//! user's config switched it off.
//!
//! codex sends the hook the same input as Claude Code (`tool_name` `Bash`, with
//! `tool_input.command`), so [`super::claude::call`] reads it; its file edits go through
//! `apply_patch`, whose patch names the files it writes.

use super::Call;
use super::claude::HookInput;
use crate::pods::BIN_DIR;

/// Where codex reads managed requirements on Linux.
pub const REQUIREMENTS: &str = "/etc/codex/requirements.toml";

/// The requirements that make every tool call pass `overseer guard` first. Exit code 2
/// blocks the call, and codex tells the model "Command blocked by PreToolUse hook:"
/// with the hook's stderr.
pub fn requirements() -> String {
    format!(
        "# Written by overseer: every tool call passes the agent's guards first.\n\
         allow_managed_hooks_only = true\n\n\
         [features]\n\
         hooks = true\n\n\
         [[hooks.PreToolUse]]\n\
         [[hooks.PreToolUse.hooks]]\n\
         type = \"command\"\n\
         command = \"{BIN_DIR}/overseer guard --runtime codex\"\n"
    )
}

/// The call `input` describes: Claude Code's shapes, and `apply_patch`, judged as a
/// write of each file its patch adds, updates, deletes or moves to.
pub fn calls(input: &HookInput) -> Vec<Call> {
    if input.tool_name != "apply_patch" {
        return vec![super::claude::call(input)];
    }
    let patch = ["command", "input", "patch"]
        .iter()
        .find_map(|field| input.tool_input.get(field).and_then(|v| v.as_str()))
        .unwrap_or_default();
    patch
        .lines()
        .filter_map(|line| {
            [
                "*** Add File: ",
                "*** Update File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ]
            .iter()
            .find_map(|marker| line.strip_prefix(marker))
        })
        .map(|path| Call::Write {
            path: path.trim().to_string(),
            cwd: input.cwd.clone(),
        })
        .collect()
}
