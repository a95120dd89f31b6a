//! The Anthropic Messages API (`POST /v1/messages`), as Claude Code calls it: the
//! request's last message read for the scenario, the reply as one JSON message or as
//! the server-sent events of a stream.

use serde_json::{Value, json};

use crate::scenario::{Last, Reply, Usage};
use crate::sse;
use crate::text_of;

/// The last message of a Messages request: a user's text, or tool results. Claude Code
/// may close the list with a `system` message (the environment, the date): the
/// conversation's last message is the one before it.
pub fn last_message(body: &Value) -> Last {
    let Some(last) = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rfind(|m| m["role"] != "system"))
    else {
        return Last::Other;
    };
    if last["role"] != "user" {
        return Last::Other;
    }
    let blocks = match &last["content"] {
        Value::String(text) => return Last::UserText(text.clone()),
        Value::Array(blocks) => blocks,
        _ => return Last::Other,
    };
    let results: Vec<String> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| text_of(&b["content"]))
        .collect();
    if !results.is_empty() {
        return Last::ToolResult(results.join("\n"));
    }
    Last::UserText(
        blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The shell tools of the CLIs that speak this API: Claude Code's `Bash`, pi's `bash`.
const SHELL_TOOLS: [&str; 2] = ["Bash", "bash"];

/// The shell tool the request offers.
fn offered_shell(body: &Value) -> Option<&'static str> {
    let tools = body["tools"].as_array()?;
    SHELL_TOOLS
        .into_iter()
        .find(|name| tools.iter().any(|t| t["name"] == *name))
}

/// Whether the request offers a shell tool: the CLI's agent loop does; Claude Code's
/// side requests (a session's title, a topic check) do not.
pub fn agent_loop(body: &Value) -> bool {
    offered_shell(body).is_some()
}

/// The content blocks of `reply`; a shell command is a call of the shell tool the
/// request offered.
fn content(body: &Value, reply: &Reply, id: u64) -> Vec<Value> {
    match reply {
        Reply::Text(text) => vec![json!({"type": "text", "text": text})],
        Reply::Shell(command) | Reply::ShellAskingApproval(command) => vec![json!({
            "type": "tool_use",
            "id": format!("toolu_standin_{id:06}"),
            "name": offered_shell(body).unwrap_or("Bash"),
            "input": {"command": command, "description": "Run a command"},
        })],
    }
}

fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text(_) => "end_turn",
        Reply::Shell(_) | Reply::ShellAskingApproval(_) => "tool_use",
    }
}

/// The whole message, for a request without `stream`.
pub fn message(body: &Value, reply: &Reply, usage: Usage, id: u64) -> Value {
    json!({
        "id": format!("msg_standin_{id:06}"),
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content(body, reply, id),
        "stop_reason": stop_reason(reply),
        "stop_sequence": null,
        "usage": usage_json(usage),
    })
}

fn usage_json(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    })
}

/// The message as the events of a stream: message_start, each block's start, delta and
/// stop, message_delta with the stop reason and the output tokens, message_stop.
pub fn stream(body: &Value, reply: &Reply, usage: Usage, id: u64) -> String {
    let mut start = message(body, reply, usage, id);
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(0);
    let mut out = sse::event(
        "message_start",
        &json!({"type": "message_start", "message": start}),
    );
    for (index, block) in content(body, reply, id).into_iter().enumerate() {
        let (empty, delta) = match block["type"].as_str() {
            Some("tool_use") => {
                let mut empty = block.clone();
                empty["input"] = json!({});
                let partial = block["input"].to_string();
                (
                    empty,
                    json!({"type": "input_json_delta", "partial_json": partial}),
                )
            }
            _ => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
        };
        out += &sse::event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": empty}),
        );
        out += &sse::event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
        out += &sse::event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        );
    }
    out += &sse::event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
            "usage": usage_json(usage),
        }),
    );
    out += &sse::event("message_stop", &json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_message_as_the_scenario_reads_it() {
        let rows = [
            (json!({"messages": []}), Last::Other),
            (
                json!({"messages": [{"role": "user", "content": "fix it"}]}),
                Last::UserText("fix it".into()),
            ),
            (
                json!({"messages": [{"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                    {"type": "text", "text": "fix it"}]}]}),
                Last::UserText("<system-reminder>x</system-reminder>\nfix it".into()),
            ),
            (
                json!({"messages": [{"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "ok"}]}]}]}),
                Last::ToolResult("ok".into()),
            ),
            (
                json!({"messages": [{"role": "assistant", "content": "hi"}]}),
                Last::Other,
            ),
            (
                json!({"messages": [{"role": "user", "content": "fix it"},
                                    {"role": "system", "content": "Today's date is ..."}]}),
                Last::UserText("fix it".into()),
            ),
        ];
        for (body, expected) in rows {
            assert_eq!(last_message(&body), expected, "{body}");
        }
    }

    #[test]
    fn a_shell_call_uses_the_tool_the_request_offers() {
        let rows = [
            ("Bash", Some("Bash")),
            ("bash", Some("bash")),
            ("Read", None),
        ];
        for (offered, expected) in rows {
            let body = json!({"tools": [{"name": offered}]});
            assert_eq!(offered_shell(&body), expected, "{offered}");
            assert_eq!(agent_loop(&body), expected.is_some(), "{offered}");
        }
    }

    #[test]
    fn a_streamed_tool_call_carries_the_command_as_json() {
        let events = stream(
            &json!({"model": "m", "tools": [{"name": "Bash"}]}),
            &Reply::Shell("overseer loop done".into()),
            Usage::default(),
            7,
        );
        let deltas: Vec<Value> = events
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let kinds: Vec<&str> = deltas.iter().map(|d| d["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(deltas[1]["content_block"]["name"], "Bash");
        let input: Value =
            serde_json::from_str(deltas[2]["delta"]["partial_json"].as_str().unwrap()).unwrap();
        assert_eq!(input["command"], "overseer loop done");
        assert_eq!(deltas[4]["delta"]["stop_reason"], "tool_use");
        assert_eq!(deltas[4]["usage"]["output_tokens"], 30);
    }
}
