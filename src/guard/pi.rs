//! pi's side of the guards: an extension, loaded from the pod's read-only guard volume
//! with `--no-extensions -e`, whose `tool_call` handler runs `overseer guard` and blocks
//! the call with its reason. Read against pi 0.73.1 (its extension runner): handlers
//! run in the order their extensions load, a handler's `{block: true}` ends the chain,
//! and a later handler may rewrite the call's input after an earlier one judged it. So
//! no other extension loads beside the guard (`--no-extensions` also ignores the
//! settings' `extensions` and `packages`): with guards on, an agent's own pi extensions
//! do not run. A handler that throws blocks the call (pi's own rule), as does a guard
//! that cannot be run.

use serde::Deserialize;
use serde_json::Value;

use super::{Call, POLICY_DIR};
use crate::pods::BIN_DIR;

/// The extension's file inside the pod's guard volume.
pub const EXTENSION: &str = "pi-guard.ts";

/// The extension: it hands pi's event to `overseer guard --runtime pi` on stdin and
/// blocks the call when the guard exits with anything but 0, with the guard's stderr
/// as the reason the model is given.
pub fn extension() -> String {
    format!(
        r#"// Written by overseer: every tool call passes the agent's guards first.
import {{ spawn }} from "node:child_process";

function judge(call) {{
  return new Promise((resolve) => {{
    const guard = spawn("{BIN_DIR}/overseer", ["guard", "--runtime", "pi"], {{
      stdio: ["pipe", "ignore", "pipe"],
    }});
    let reason = "";
    guard.stderr.on("data", (chunk) => (reason += chunk));
    guard.on("error", (error) => resolve({{ status: null, reason: String(error) }}));
    guard.on("close", (status) => resolve({{ status, reason }}));
    guard.stdin.on("error", () => {{}});
    guard.stdin.end(call);
  }});
}}

export default function (pi) {{
  pi.on("tool_call", async (event, ctx) => {{
    const call = JSON.stringify({{ toolName: event.toolName, input: event.input, cwd: ctx.cwd }});
    const {{ status, reason }} = await judge(call);
    if (status === 0) return undefined;
    return {{ block: true, reason: reason.trim() || "overseer guard: the guard did not answer; the call is blocked" }};
  }});
}}
"#
    )
}

/// The flags that load the extension and nothing else.
pub fn args() -> Vec<String> {
    vec![
        "--no-extensions".into(),
        "-e".into(),
        format!("{POLICY_DIR}/{EXTENSION}"),
    ]
}

/// The event the extension hands the guard.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct HookInput {
    pub tool_name: String,
    #[serde(default)]
    pub input: Value,
    #[serde(default)]
    pub cwd: String,
}

/// The call `input` describes: `bash` by its command, `write` and `edit` by their path,
/// `read`, `grep`, `find` and `ls` by theirs (none: the working directory).
pub fn call(input: &HookInput) -> Call {
    let field = |name: &str| input.input.get(name).and_then(Value::as_str);
    let cwd = input.cwd.clone();
    let path = || field("path").map(str::to_string);
    let call = match input.tool_name.as_str() {
        "bash" => field("command").map(|command| Call::Shell {
            command: command.to_string(),
            cwd,
        }),
        "write" | "edit" => path().map(|path| Call::Write { path, cwd }),
        "read" | "grep" | "find" | "ls" => path().map(|path| Call::Read { path, cwd }),
        _ => None,
    };
    call.unwrap_or(Call::Other)
}
