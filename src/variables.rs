//! Prompt variables: `{{name}}` in an agent's prompt and instructions layers and in a
//! goal step's action, replaced by its value once, left to right. A value is never read
//! for variables again (a `{{...}}` inside a value stays as it is), so a value cannot
//! inject another. Only `{{` + a name + `}}` is a variable (a name: a letter, then
//! letters, digits, `_` and `.`); other braces (`{{ .Values }}`, `{{}}`) are text.
//! A name that is not defined is an error naming it: nothing is sent with it unreplaced.

use std::collections::BTreeMap;

/// The values of one agent's or step's variables, by name.
pub type Variables = BTreeMap<String, String>;

/// The prefix of the user's own variables (`spec.vars`): `{{vars.NAME}}`.
pub const USER_PREFIX: &str = "vars.";

/// `text` with each variable replaced by its value, or the first unknown name.
pub fn expand(text: &str, variables: &Variables) -> Result<String, Unknown> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let name_len = name_length(after);
        let closed = name_len > 0 && after[name_len..].starts_with("}}");
        if !closed {
            // Not a variable: its first brace is text, the next may open one.
            out.push_str(&rest[..start + 1]);
            rest = &rest[start + 1..];
            continue;
        }
        let name = &after[..name_len];
        let value = variables.get(name).ok_or_else(|| Unknown {
            name: name.to_string(),
            known: variables.keys().cloned().collect(),
        })?;
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = &after[name_len + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The length of the variable name at the start of `text` (0: none).
fn name_length(text: &str) -> usize {
    let mut chars = text.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() => {}
        _ => return 0,
    }
    chars
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.'))
        .map_or(text.len(), |(i, _)| i)
}

/// The user's own variables (`spec.vars`) under their prefix, beside `builtin`.
pub fn with_user(mut builtin: Variables, user: &BTreeMap<String, String>) -> Variables {
    for (name, value) in user {
        builtin.insert(format!("{USER_PREFIX}{name}"), value.clone());
    }
    builtin
}

/// A variable that is not defined where it was used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    pub name: String,
    pub known: Vec<String>,
}

impl Unknown {
    /// What a condition or a refusal says: the field, the name, and what is defined.
    pub fn describe(&self, field: &str) -> String {
        format!(
            "{field}: the variable {{{{{}}}}} is not defined (defined: {})",
            self.name,
            self.known
                .iter()
                .map(|k| format!("{{{{{k}}}}}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Variables {
        with_user(
            Variables::from([
                ("agent".into(), "builder".into()),
                ("branch".into(), "overseer/builder".into()),
            ]),
            &BTreeMap::from([
                ("gates".into(), "make test".into()),
                ("tricky".into(), "{{agent}}".into()),
            ]),
        )
    }

    #[test]
    fn variables_are_replaced_once_and_only_where_they_are_variables() {
        // (text, expanded)
        let rows = [
            (
                "I am {{agent}} on {{branch}}.",
                "I am builder on overseer/builder.",
            ),
            ("Run {{vars.gates}} first", "Run make test first"),
            ("value {{vars.tricky}} stays", "value {{agent}} stays"),
            (
                "helm: {{ .Values.image }} and {{}} and {{1x}}",
                "helm: {{ .Values.image }} and {{}} and {{1x}}",
            ),
            ("{{{agent}}}", "{builder}"),
            ("unclosed {{agent", "unclosed {{agent"),
            ("", ""),
        ];
        for (text, expanded) in rows {
            assert_eq!(expand(text, &vars()).as_deref(), Ok(expanded), "{text}");
        }
    }

    #[test]
    fn an_unknown_variable_is_named_with_what_is_defined() {
        let error = expand("Use {{vars.tracker}} now", &vars()).unwrap_err();
        assert_eq!(error.name, "vars.tracker");
        assert_eq!(
            error.describe("spec.prompt"),
            "spec.prompt: the variable {{vars.tracker}} is not defined (defined: {{agent}}, {{branch}}, {{vars.gates}}, {{vars.tricky}})"
        );
    }
}
