//! Server-sent events as both APIs stream them.

use serde_json::Value;

pub fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}
