//! The validation table of `tests/cases/validation.yaml`, shared by the client-side
//! CEL test and the real API server test.

use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
pub struct Table {
    pub bad: Vec<BadCase>,
    pub good: Vec<GoodCase>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    Cel,
    /// A CEL rule that fails to evaluate on the input (a regular expression compiled
    /// from it): the API server's message carries the rule's message after the
    /// evaluator's, which the client-side evaluator words its own way.
    CelEvaluation,
    Openapi,
}

#[derive(Deserialize)]
pub struct BadCase {
    pub name: String,
    pub check: Check,
    pub field: String,
    pub message: String,
    object: Value,
}

#[derive(Deserialize)]
pub struct GoodCase {
    pub name: String,
    object: Value,
}

impl BadCase {
    pub fn object(&self, index: usize) -> Value {
        complete(&self.object, &format!("bad-{index}"))
    }
}

impl GoodCase {
    pub fn object(&self, index: usize) -> Value {
        complete(&self.object, &format!("good-{index}"))
    }
}

pub fn load() -> Table {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases/validation.yaml");
    let text = std::fs::read_to_string(path).expect("read tests/cases/validation.yaml");
    serde_saphyr::from_str(&text).expect("parse tests/cases/validation.yaml")
}

/// Adds apiVersion and a name, and expands `steps: generate-N-steps` into N steps
/// (a table entry cannot spell out a hundred steps readably).
fn complete(object: &Value, name: &str) -> Value {
    let mut object = object.clone();
    object["apiVersion"] = json!("overseer.dev/v1alpha1");
    object["metadata"] = json!({ "name": name });
    if let Some(generate) = object["spec"]["steps"].as_str() {
        let count: usize = generate
            .strip_prefix("generate-")
            .and_then(|rest| rest.strip_suffix("-steps"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unknown steps generator {generate}"));
        let steps: Vec<Value> = (0..count)
            .map(|i| json!({ "name": format!("step-{i}"), "action": "implement it" }))
            .collect();
        object["spec"]["steps"] = Value::Array(steps);
    }
    object
}
