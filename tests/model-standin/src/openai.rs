//! The OpenAI Responses API (`POST /v1/responses`), as codex calls it: the request's
//! last input item read for the scenario, the reply as server-sent events ending in
//! `response.completed` (with the usage), or as one JSON response.

use serde_json::{Value, json};

use crate::scenario::{Last, Reply, Usage};
use crate::sse;
use crate::text_of;

/// The last input item of a Responses request: a user's text, or a call's output.
pub fn last_message(body: &Value) -> Last {
    let Some(last) = body["input"].as_array().and_then(|i| i.last()) else {
        return match body["input"].as_str() {
            Some(text) => Last::UserText(text.into()),
            None => Last::Other,
        };
    };
    match last["type"].as_str() {
        Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output") => {
            Last::ToolResult(text_of(&last["output"]))
        }
        Some("message") | None if last["role"] == "user" => {
            Last::UserText(text_of(&last["content"]))
        }
        _ => Last::Other,
    }
}

/// The names of the functions codex runs commands through, in the order preferred.
const SHELL_TOOLS: [&str; 3] = ["exec_command", "shell_command", "shell"];

/// Whether the request offers a shell tool: codex's agent loop does; its side requests
/// (a thread's title, which offers `apply_patch` alone) do not.
pub fn agent_loop(body: &Value) -> bool {
    offered_shell(body).is_some()
}

fn offered_shell(body: &Value) -> Option<&'static str> {
    let offered: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    SHELL_TOOLS.into_iter().find(|name| offered.contains(name))
}

/// The function codex runs commands through, and its arguments for `command`: the
/// tool's name and parameters differ between codex releases, so the request's own
/// tool list decides.
fn shell_call(body: &Value, command: &str) -> (String, Value) {
    let arguments = match offered_shell(body) {
        Some("exec_command") => json!({"cmd": command}),
        Some("shell_command") => json!({"command": command}),
        _ => json!({"command": ["bash", "-lc", command]}),
    };
    (offered_shell(body).unwrap_or("shell").into(), arguments)
}

fn output_item(body: &Value, reply: &Reply, id: u64) -> Value {
    match reply {
        Reply::Text(text) => json!({
            "type": "message",
            "id": format!("msg_standin_{id:06}"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }),
        Reply::Shell(command) | Reply::ShellAskingApproval(command) => {
            let (name, mut arguments) = shell_call(body, command);
            if matches!(reply, Reply::ShellAskingApproval(_)) && name == "exec_command" {
                arguments["sandbox_permissions"] = json!("require_escalated");
                arguments["justification"] = json!("The command writes outside the sandbox.");
            }
            json!({
                "type": "function_call",
                "id": format!("fc_standin_{id:06}"),
                "call_id": format!("call_standin_{id:06}"),
                "name": name,
                "arguments": arguments.to_string(),
                "status": "completed",
            })
        }
    }
}

fn usage_json(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    })
}

/// The whole response, for a request without `stream`.
pub fn response(body: &Value, reply: &Reply, usage: Usage, id: u64) -> Value {
    json!({
        "id": format!("resp_standin_{id:06}"),
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": body["model"],
        "output": [output_item(body, reply, id)],
        "usage": usage_json(usage),
    })
}

/// The response as events: created, the output item added (with a text delta for a
/// message) and done, completed with the usage.
pub fn stream(body: &Value, reply: &Reply, usage: Usage, id: u64) -> String {
    let done = response(body, reply, usage, id);
    let item = done["output"][0].clone();
    let mut created = done.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    created["usage"] = Value::Null;
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    if let Reply::Text(_) = reply {
        added["content"] = json!([]);
    }
    let mut out = sse::event(
        "response.created",
        &json!({"type": "response.created", "response": created}),
    );
    out += &sse::event(
        "response.output_item.added",
        &json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
    );
    if let Reply::Text(text) = reply {
        out += &sse::event(
            "response.output_text.delta",
            &json!({"type": "response.output_text.delta", "item_id": item["id"],
                    "output_index": 0, "content_index": 0, "delta": text}),
        );
    }
    out += &sse::event(
        "response.output_item.done",
        &json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    );
    out += &sse::event(
        "response.completed",
        &json!({"type": "response.completed", "response": done}),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_input_item_as_the_scenario_reads_it() {
        let rows = [
            (json!({"input": "fix it"}), Last::UserText("fix it".into())),
            (
                json!({"input": [{"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": "fix it"}]}]}),
                Last::UserText("fix it".into()),
            ),
            (
                json!({"input": [{"type": "function_call_output", "call_id": "c", "output": "exit 0"}]}),
                Last::ToolResult("exit 0".into()),
            ),
            (
                json!({"input": [{"type": "message", "role": "assistant", "content": []}]}),
                Last::Other,
            ),
        ];
        for (body, expected) in rows {
            assert_eq!(last_message(&body), expected, "{body}");
        }
    }

    #[test]
    fn only_a_request_offering_a_shell_is_the_agent_loop() {
        let offering = |names: &[&str]| json!({"tools": names.iter().map(|n| json!({"type": "function", "name": n})).collect::<Vec<_>>()});
        assert!(agent_loop(&offering(&["exec_command", "apply_patch"])));
        assert!(!agent_loop(&offering(&["apply_patch"])), "a thread title");
        assert!(!agent_loop(&json!({})));
    }

    #[test]
    fn a_shell_call_uses_the_tool_the_request_offers() {
        let offering = |name: &str| json!({"tools": [{"type": "function", "name": name}]});
        let rows = [
            ("exec_command", json!({"cmd": "ls"})),
            ("shell_command", json!({"command": "ls"})),
            ("shell", json!({"command": ["bash", "-lc", "ls"]})),
        ];
        for (tool, arguments) in rows {
            let item = output_item(&offering(tool), &Reply::Shell("ls".into()), 1);
            assert_eq!(item["name"], tool);
            let got: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(got, arguments, "{tool}");
        }
    }

    #[test]
    fn a_shell_call_asking_approval_asks_codex_for_escalation() {
        let body = json!({"tools": [{"type": "function", "name": "exec_command"}]});
        let item = output_item(&body, &Reply::ShellAskingApproval("touch x".into()), 1);
        let got: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(got["cmd"], "touch x");
        assert_eq!(got["sandbox_permissions"], "require_escalated");
        assert!(got["justification"].is_string());
        let plain = json!({"tools": [{"type": "function", "name": "shell"}]});
        let item = output_item(&plain, &Reply::ShellAskingApproval("ls".into()), 1);
        let got: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(
            got,
            json!({"command": ["bash", "-lc", "ls"]}),
            "no such field to ask with"
        );
    }
}
