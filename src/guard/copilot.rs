//! GitHub Copilot CLI's side of the guards: a plugin loaded from a read-only directory
//! with `--plugin-dir`, whose `preToolUse` hook runs `overseer guard`. Tried against
//! copilot 1.0.102 (1.0.102 has no machine-wide policy hooks): a plugin given on the
//! command line runs its hooks after every user, repository and installed plugin's hook,
//! so it judges the arguments as they will run (another hook's `modifiedArgs`
//! included); a `deny` from any hook wins over another's `allow`; `disableAllHooks` in
//! the user's settings did not switch it off; and a hook that fails or answers nothing
//! it understands denies the call. The agent can neither edit the plugin nor drop the
//! flag, which is the operator's command line.
//!
//! Copilot reads a hook's answer from its stdout (`permissionDecision`), not from its
//! exit code: exit 2 with a reason on stderr reaches the model only as "hook exited
//! with code 2".

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Call, POLICY_DIR};
use crate::pods::BIN_DIR;

/// The plugin's directory inside the pod's guard volume, given to `--plugin-dir`.
pub const PLUGIN_DIR: &str = "copilot-plugin";

/// The plugin's manifest (`plugin.json`).
pub fn manifest() -> Value {
    json!({
        "name": "overseer-guard",
        "version": "1.0.0",
        "description": "Written by overseer: every tool call passes the agent's guards first.",
        "hooks": "hooks/hooks.json",
    })
}

/// The plugin's hooks (`hooks/hooks.json`).
pub fn hooks() -> Value {
    json!({
        "version": 1,
        "hooks": {
            "preToolUse": [{
                "type": "command",
                "bash": format!("{BIN_DIR}/overseer guard --runtime copilot"),
            }],
        },
    })
}

/// The flags that load the plugin.
pub fn args() -> Vec<String> {
    vec!["--plugin-dir".into(), format!("{POLICY_DIR}/{PLUGIN_DIR}")]
}

/// The answer that blocks a call, for the hook's stdout; copilot gives the model
/// "Denied by preToolUse hook: " and the reason.
pub fn deny(reason: &str) -> Value {
    json!({"permissionDecision": "deny", "permissionDecisionReason": reason})
}

/// The fields of copilot's `preToolUse` hook input that the guard reads.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct HookInput {
    pub tool_name: String,
    #[serde(default)]
    pub tool_args: Value,
    #[serde(default)]
    pub cwd: String,
}

/// The calls `input` describes: `bash` by its command, `create` and `edit` by their
/// path, `view` by its path and `grep` and `glob` by each of their `paths` (one or a
/// list; none: the working directory, which is no call to judge).
pub fn calls(input: &HookInput) -> Vec<Call> {
    let args = &input.tool_args;
    let cwd = input.cwd.clone();
    let text = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_string);
    let one = |call: Option<Call>| vec![call.unwrap_or(Call::Other)];
    match input.tool_name.as_str() {
        "bash" => one(text("command").map(|command| Call::Shell { command, cwd })),
        "create" | "edit" => one(text("path").map(|path| Call::Write { path, cwd })),
        "view" => one(text("path").map(|path| Call::Read { path, cwd })),
        "grep" | "glob" => {
            let paths: Vec<String> = match args.get("paths") {
                Some(Value::String(path)) => vec![path.clone()],
                Some(Value::Array(paths)) => paths
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                _ => vec![],
            };
            match paths.is_empty() {
                true => vec![Call::Other],
                false => paths
                    .into_iter()
                    .map(|path| Call::Read {
                        path,
                        cwd: cwd.clone(),
                    })
                    .collect(),
            }
        }
        _ => vec![Call::Other],
    }
}
