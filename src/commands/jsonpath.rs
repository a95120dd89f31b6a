//! kubectl's JSONPath templates (`-o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'`):
//! text, `{expression}`, quoted literals and `{range ...}{end}`, printed as kubectl
//! prints them (strings bare, other values as JSON, several results joined by a space,
//! a missing key as nothing). Filters (`[?(...)]`) and slices are refused by name.

use serde_json::Value;

use crate::{Error, Result};

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(Vec<Node>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Text(String),
    Select(Vec<Step>),
    Range(Vec<Step>, Vec<Node>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    Index(i64),
    /// `[*]` or `.*`: every element or value.
    All,
    /// `..name`: `name` at any depth.
    Descend(String),
}

impl std::str::FromStr for Template {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let mut stack: Vec<(Vec<Step>, Vec<Node>)> = Vec::new();
        let mut nodes = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let Some(open) = rest.find('{') else {
                nodes.push(Node::Text(rest.to_string()));
                break;
            };
            if open > 0 {
                nodes.push(Node::Text(rest[..open].to_string()));
            }
            let close = closing_brace(&rest[open..])
                .ok_or_else(|| invalid(text, "a '{' is never closed"))?;
            let action = rest[open + 1..open + close].trim();
            rest = &rest[open + close + 1..];
            if let Some(expression) = action.strip_prefix("range ") {
                stack.push((steps(text, expression)?, std::mem::take(&mut nodes)));
            } else if action == "end" {
                let (over, outer) = stack
                    .pop()
                    .ok_or_else(|| invalid(text, "{end} without {range}"))?;
                let body = std::mem::replace(&mut nodes, outer);
                nodes.push(Node::Range(over, body));
            } else if let Some(literal) = quoted(action) {
                nodes.push(Node::Text(literal));
            } else {
                nodes.push(Node::Select(steps(text, action)?));
            }
        }
        if !stack.is_empty() {
            return Err(invalid(text, "a {range} has no {end}"));
        }
        Ok(Template(nodes))
    }
}

impl Template {
    /// The template applied to `value`.
    pub fn render(&self, value: &Value) -> String {
        let mut out = String::new();
        render(&self.0, value, &mut out);
        out
    }
}

fn invalid(template: &str, why: &str) -> Error {
    Error::Usage(format!("jsonpath template {template:?}: {why}"))
}

/// Where the action opened at `text[0]` closes, quotes respected.
fn closing_brace(text: &str) -> Option<usize> {
    let mut quote = None;
    let mut escaped = false;
    for (at, c) in text.char_indices().skip(1) {
        match (quote, c) {
            (Some(_), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), c) if c == q && !escaped => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '}') => return Some(at),
            _ => {}
        }
        escaped = false;
    }
    None
}

/// A quoted literal's text, escapes (`\n`, `\t`, `\\`, quotes) applied.
fn quoted(action: &str) -> Option<String> {
    let quote = action.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = action.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    Some(out)
}

fn steps(template: &str, expression: &str) -> Result<Vec<Step>> {
    let mut rest = expression
        .strip_prefix('$')
        .or_else(|| expression.strip_prefix('@'))
        .unwrap_or(expression);
    let mut steps = Vec::new();
    let name_end = |s: &str| s.find(['.', '[']).unwrap_or(s.len());
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("..") {
            let end = name_end(after);
            steps.push(Step::Descend(after[..end].to_string()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = name_end(after);
            match &after[..end] {
                "" => {}
                "*" => steps.push(Step::All),
                name => steps.push(Step::Field(name.to_string())),
            }
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after
                .find(']')
                .ok_or_else(|| invalid(template, "a '[' is never closed"))?;
            let inside = after[..close].trim();
            steps.push(if inside == "*" {
                Step::All
            } else if let Some(key) = quoted(inside) {
                Step::Field(key)
            } else if let Ok(index) = inside.parse() {
                Step::Index(index)
            } else {
                return Err(invalid(
                    template,
                    &format!("[{inside}]: filters and slices are not supported"),
                ));
            });
            rest = &after[close + 1..];
        } else {
            let end = name_end(rest);
            steps.push(Step::Field(rest[..end].to_string()));
            rest = &rest[end..];
        }
    }
    Ok(steps)
}

fn select<'a>(steps: &[Step], value: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![value];
    for step in steps {
        current = current.into_iter().flat_map(|v| apply(step, v)).collect();
    }
    current
}

fn apply<'a>(step: &Step, value: &'a Value) -> Vec<&'a Value> {
    match (step, value) {
        (Step::Field(name), Value::Object(map)) => map.get(name).into_iter().collect(),
        (Step::Index(index), Value::Array(items)) => {
            let at = if *index < 0 {
                i64::try_from(items.len()).unwrap_or(i64::MAX) + index
            } else {
                *index
            };
            usize::try_from(at)
                .ok()
                .and_then(|at| items.get(at))
                .into_iter()
                .collect()
        }
        (Step::All, Value::Array(items)) => items.iter().collect(),
        (Step::All, Value::Object(map)) => map.values().collect(),
        (Step::Descend(name), _) => {
            let mut found = Vec::new();
            descend(name, value, &mut found);
            found
        }
        _ => Vec::new(),
    }
}

fn descend<'a>(name: &str, value: &'a Value, found: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            if let Some(hit) = map.get(name) {
                found.push(hit);
            }
            map.values().for_each(|v| descend(name, v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| descend(name, v, found)),
        _ => {}
    }
}

fn render(nodes: &[Node], value: &Value, out: &mut String) {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Select(steps) => {
                let printed: Vec<String> = select(steps, value).into_iter().map(print).collect();
                out.push_str(&printed.join(" "));
            }
            Node::Range(steps, body) => {
                for item in select(steps, value) {
                    // `range` over an array walks its elements, as kubectl's does.
                    match item {
                        Value::Array(items) => items.iter().for_each(|i| render(body, i, out)),
                        other => render(body, other, out),
                    }
                }
            }
        }
    }
}

fn print(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn list() -> Value {
        json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "labels": {"team": "x"}}, "status": {"phase": "Running", "attempt": 2}},
            {"metadata": {"name": "b"}, "status": {"phase": "Done", "attempt": 1}},
        ]})
    }

    #[test]
    fn templates_print_as_kubectl_prints() {
        let rows = [
            ("{.items[*].metadata.name}", "a b"),
            ("{.items[0].status.attempt}", "2"),
            ("{.items[-1].metadata.name}", "b"),
            ("{.items[1].metadata.labels}", ""),
            ("{.items[0].metadata.labels}", r#"{"team":"x"}"#),
            (
                r#"{range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end}"#,
                "a\tRunning\nb\tDone\n",
            ),
            ("names: {$.items[*]['metadata']['name']}!", "names: a b!"),
            ("{..phase}", "Running Done"),
            ("{.kind}", "List"),
            ("plain", "plain"),
        ];
        for (template, expected) in rows {
            let parsed: Template = template.parse().unwrap();
            assert_eq!(parsed.render(&list()), expected, "{template}");
        }
    }

    #[test]
    fn malformed_templates_are_refused_with_the_reason() {
        let rows = [
            ("{.items[*]", "never closed"),
            ("{range .items[*]}{.a}", "no {end}"),
            ("{end}", "without {range}"),
            ("{.items[?(@.a==1)]}", "filters and slices"),
            ("{.items[0:2]}", "filters and slices"),
        ];
        for (template, reason) in rows {
            let error = template.parse::<Template>().unwrap_err().to_string();
            assert!(error.contains(reason), "{template}: {error}");
        }
    }
}
