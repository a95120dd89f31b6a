//! Claude Code's side of the guards: its managed settings, which run `overseer guard`
//! as a `PreToolUse` hook on every tool (in TUI and headless mode alike, whatever the
//! permission mode), and the hook's input as a [`Call`]. Managed settings outrank the
//! user's and the project's, and `allowManagedHooksOnly` keeps the agent from adding or
//! replacing hooks through its own settings files.

use serde::Deserialize;
use serde_json::{Value, json};

use super::Call;
use crate::pods::BIN_DIR;

/// Where Claude Code reads managed settings on Linux.
pub const MANAGED_SETTINGS: &str = "/etc/claude-code/managed-settings.json";

/// The managed settings that make every tool call pass `overseer guard` first. Exit
/// code 2 blocks the call and gives the model the hook's stderr as the reason.
pub fn managed_settings() -> Value {
    json!({
        "allowManagedHooksOnly": true,
        "hooks": {
            "PreToolUse": [{
                "matcher": "*",
                "hooks": [{
                    "type": "command",
                    "command": format!("{BIN_DIR}/overseer guard --runtime claude"),
                }],
            }],
        },
    })
}

/// The fields of Claude Code's `PreToolUse` hook input that the guard reads.
#[derive(Deserialize, Debug)]
pub struct HookInput {
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    #[serde(default)]
    pub cwd: String,
}

/// The call `input` describes: Bash commands, the file tools' paths, or any other
/// tool by its name alone.
pub fn call(input: &HookInput) -> Call {
    let field = |name: &str| {
        input
            .tool_input
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let cwd = input.cwd.clone();
    match input.tool_name.as_str() {
        "Bash" => Call::Shell {
            command: field("command").unwrap_or_default(),
            cwd,
        },
        "Write" | "Edit" | "MultiEdit" => match field("file_path") {
            Some(path) => Call::Write { path, cwd },
            None => Call::Other,
        },
        "NotebookEdit" => match field("notebook_path") {
            Some(path) => Call::Write { path, cwd },
            None => Call::Other,
        },
        "Read" => match field("file_path") {
            Some(path) => Call::Read { path, cwd },
            None => Call::Other,
        },
        "Grep" | "Glob" | "LS" => match field("path") {
            Some(path) => Call::Read { path, cwd },
            None => Call::Other,
        },
        _ => Call::Other,
    }
}
