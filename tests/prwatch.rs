//! The PRWatch poll query against GitHub's published GraphQL schema, and the
//! response parser on realistic responses in that schema's shape.

use apollo_compiler::ast::Type;
use apollo_compiler::executable::{Field, Selection, SelectionSet};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Node, Schema};
use overseer::prwatch::github::QUERY;

fn github_schema() -> Valid<Schema> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/github/schema.graphql");
    let sdl = std::fs::read_to_string(path).expect("tests/github/schema.graphql");
    // The published SDL defines one field twice (EnterpriseOwnerInfo.
    // repositoryDeployKeySetting, as of 15.26.1); the parser keeps the first
    // definition and reports the rest, which are about types this query never uses.
    let schema = match Schema::parse(sdl, path) {
        Ok(schema) => schema,
        Err(with_errors) => {
            let text = with_errors.errors.to_string();
            let count = text.matches("duplicate definitions").count();
            assert!(
                text.matches("Error:").count() == count
                    && text.contains(
                        "duplicate definitions for the `repositoryDeployKeySetting` field"
                    ),
                "GitHub's schema has new problems: {text}"
            );
            with_errors.partial
        }
    };
    Valid::assume_valid(schema)
}

#[test]
fn the_poll_query_is_valid_against_githubs_published_schema() {
    let schema = github_schema();
    if let Err(errors) = ExecutableDocument::parse_and_validate(&schema, QUERY, "query.graphql") {
        panic!(
            "the poll query does not fit GitHub's schema:\n{}",
            errors.errors
        );
    }
}

#[test]
fn a_field_github_does_not_have_is_refused() {
    let schema = github_schema();
    let wrong = QUERY.replace("headRefOid", "headCommitSha");
    let errors = ExecutableDocument::parse_and_validate(&schema, &wrong, "query.graphql")
        .expect_err("an unknown field must fail validation");
    assert!(
        errors.errors.to_string().contains("headCommitSha"),
        "{}",
        errors.errors
    );
}

use overseer::prwatch::decide;
use overseer::prwatch::decide::{ci_result, new_feedback};
use overseer::prwatch::github::{FeedbackKind, Snapshot, parse};
use overseer::prwatch::message;
use overseer::prwatch::{PRWatchSpec, PRWatchStatus};

const PR: &str = "https://github.com/acme/billing/pull/7";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/github/fixtures/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn snapshot(name: &str) -> Snapshot {
    parse(&fixture(name), jiff::Timestamp::now()).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

/// Each fixture, field by field, against the poll query and GitHub's schema: every key
/// is a field the query selects (for that object's `__typename`), every selected field
/// is there, and every value has the field's type in the schema (null only where it is
/// nullable, enums only with their values). The one exception is the injection
/// fixture's `body` fields: a server that sends text nobody asked for.
#[test]
fn fixtures_are_answers_to_the_poll_query_in_githubs_schema() {
    let schema = github_schema();
    let query = ExecutableDocument::parse_and_validate(&schema, QUERY, "query.graphql")
        .expect("the query is valid (tested above)");
    let operation = query.operations.get(None).expect("one operation");
    for name in [
        "passing",
        "failing",
        "pending",
        "rerun",
        "many_comments",
        "review_threads",
        "merged",
        "closed",
        "injection",
    ] {
        let json: serde_json::Value = serde_json::from_slice(&fixture(name)).unwrap();
        let mut conformance = Conformance {
            schema: &schema,
            unasked_bodies: name == "injection",
            problems: Vec::new(),
        };
        conformance.object(&operation.selection_set, &json["data"], "data");
        assert!(
            conformance.problems.is_empty(),
            "{name}.json does not answer the query in GitHub's schema:\n{}",
            conformance.problems.join("\n")
        );
        assert!(
            fixture(name).len() > 3000,
            "{name} is a realistic, several-KiB response"
        );
    }
}

struct Conformance<'a> {
    schema: &'a Schema,
    unasked_bodies: bool,
    problems: Vec<String>,
}

impl Conformance<'_> {
    fn object(&mut self, set: &SelectionSet, value: &serde_json::Value, path: &str) {
        let Some(object) = value.as_object() else {
            self.problems.push(format!("{path}: not an object"));
            return;
        };
        let typename = match object.get("__typename") {
            Some(serde_json::Value::String(concrete)) => {
                if concrete != set.ty.as_str() && !self.schema.is_subtype(&set.ty, concrete) {
                    self.problems
                        .push(format!("{path}: {concrete} is not a {}", set.ty));
                }
                concrete.as_str()
            }
            _ => set.ty.as_str(),
        };
        let mut fields = Vec::new();
        self.applicable_fields(set, typename, &mut fields);
        for key in object.keys() {
            let selected = fields.iter().any(|f| f.response_key() == key.as_str());
            let allowed = selected || (self.unasked_bodies && key == "body");
            if !allowed {
                self.problems
                    .push(format!("{path}.{key}: not selected by the query"));
            }
        }
        for field in fields {
            let key = field.response_key();
            match object.get(key.as_str()) {
                Some(inner) => self.value(field, field.ty(), inner, &format!("{path}.{key}")),
                None => self.problems.push(format!("{path}.{key}: missing")),
            }
        }
    }

    /// The fields selected on an object of type `typename`: inline fragments apply
    /// only to their own type.
    fn applicable_fields<'s>(
        &self,
        set: &'s SelectionSet,
        typename: &str,
        out: &mut Vec<&'s Node<Field>>,
    ) {
        for selection in &set.selections {
            match selection {
                Selection::Field(field) => out.push(field),
                Selection::InlineFragment(fragment) => {
                    let applies = fragment.type_condition.as_ref().is_none_or(|condition| {
                        condition == typename || self.schema.is_subtype(condition, typename)
                    });
                    if applies {
                        self.applicable_fields(&fragment.selection_set, typename, out);
                    }
                }
                Selection::FragmentSpread(_) => panic!("the poll query uses no named fragments"),
            }
        }
    }

    fn value(&mut self, field: &Field, ty: &Type, value: &serde_json::Value, path: &str) {
        if value.is_null() {
            if ty.is_non_null() {
                self.problems
                    .push(format!("{path}: null, but {ty} is non-null"));
            }
            return;
        }
        if ty.is_list() {
            match value.as_array() {
                Some(items) => {
                    for (i, item) in items.iter().enumerate() {
                        self.value(field, ty.item_type(), item, &format!("{path}[{i}]"));
                    }
                }
                None => self.problems.push(format!("{path}: not a list ({ty})")),
            }
            return;
        }
        let named = ty.inner_named_type();
        let fits = match self.schema.types.get(named) {
            Some(ExtendedType::Scalar(_)) => match named.as_str() {
                "Int" => value.is_i64(),
                "Float" => value.is_number(),
                "Boolean" => value.is_boolean(),
                // ID, String and GitHub's own scalars (DateTime, URI, GitObjectID, ...).
                _ => value.is_string(),
            },
            Some(ExtendedType::Enum(enumeration)) => value
                .as_str()
                .is_some_and(|v| enumeration.values.contains_key(v)),
            Some(_) => {
                self.object(&field.selection_set, value, path);
                true
            }
            None => false,
        };
        if !fits {
            self.problems
                .push(format!("{path}: {value} is not a {named}"));
        }
    }
}

#[test]
fn responses_parse_into_what_a_poll_decides_on() {
    let passing = snapshot("passing");
    assert_eq!((passing.state.as_str(), passing.checks.len()), ("OPEN", 11));
    assert_eq!(ci_result(&passing), Some("success"));
    assert_eq!(passing.viewer, "overseer-bot");

    let failing = snapshot("failing");
    assert_eq!(ci_result(&failing), Some("failure"));
    let failed: Vec<&str> = failing
        .checks
        .iter()
        .filter(|c| c.failed)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(failed, ["lint", "typecheck", "ci/circleci: deploy-preview"]);

    assert_eq!(
        ci_result(&snapshot("pending")),
        None,
        "checks still running"
    );
    assert_eq!(ci_result(&snapshot("rerun")), Some("success"));

    let many = snapshot("many_comments");
    assert_eq!(many.feedback.len(), 50);
    assert!(many.more_checks, "more checks than the first page");
    assert_eq!(
        ci_result(&many),
        None,
        "not settled while some checks are unseen"
    );

    let threads = snapshot("review_threads");
    let reviews = threads
        .feedback
        .iter()
        .filter(|f| f.kind == FeedbackKind::Review)
        .count();
    let inline: Vec<_> = threads
        .feedback
        .iter()
        .filter(|f| f.kind == FeedbackKind::Inline)
        .collect();
    assert_eq!(
        reviews, 2,
        "a pending (unsubmitted) review is nobody's feedback yet"
    );
    assert_eq!(inline.len(), 36);
    assert_eq!(
        inline[0].location,
        Some(("src/billing/file_0.rs".into(), Some(0)))
    );

    assert_eq!(snapshot("merged").state, "MERGED");
    let closed = snapshot("closed");
    assert_eq!(
        (closed.state.as_str(), closed.rollup_state.as_deref()),
        ("CLOSED", None)
    );
}

#[test]
fn nothing_from_the_injection_corpus_reaches_the_wake() {
    let hostile = snapshot("injection");
    let status = PRWatchStatus::default();
    let feedback = new_feedback(&hostile, &status);
    assert_eq!(feedback.len(), 6);
    let ci = message::CiNews {
        sha: hostile.head_sha.clone(),
        result: "failure",
        failed: hostile
            .checks
            .iter()
            .filter(|c| c.failed)
            .map(|c| c.name.clone())
            .collect(),
        total: hostile.checks.len(),
    };
    let wake = message::wake(PR, Some(&ci), &feedback);
    for banned in HOSTILE_FRAGMENTS {
        assert!(
            !wake.contains(banned),
            "{banned:?} reached the wake:\n{wake}"
        );
    }
    // Both hostile check names hold an illegal character (`;`, a zero-width space).
    assert!(
        wake.contains("failed checks (2 of 3): (check name not shown: unusual characters), (check name not shown: unusual characters)"),
        "{wake}"
    );
    assert!(
        wake.contains("inline comment by oscar at src/ok.rs:7"),
        "{wake}"
    );
    assert!(
        wake.contains("(login not shown: unusual characters)"),
        "{wake}"
    );
    assert!(
        wake.contains("(path not shown: unusual characters)"),
        "{wake}"
    );
    assert!(
        wake.len() < 2000,
        "bounded whatever the bodies' size: {}",
        wake.len()
    );
}

/// Pieces of the injection fixture's hostile logins, paths, check names and bodies.
const HOSTILE_FRAGMENTS: [&str; 9] = [
    "SYSTEM",
    "curl",
    "rm -rf",
    "etc/passwd",
    "admin mode",
    "\u{200b}",
    "<!--",
    "AAAA",
    "$(",
];

/// Status is read by people and by overseers: the whole plan of a poll of the
/// hostile PR, status and Events included, holds none of it either.
#[test]
fn nothing_from_the_injection_corpus_reaches_status_or_events() {
    let hostile = snapshot("injection");
    let spec: PRWatchSpec = serde_json::from_value(serde_json::json!({
        "url": PR, "agent": "builder",
        "github": {"tokenSecretRef": {"name": "gh", "key": "token"}}
    }))
    .unwrap();
    let plan = decide::plan(&decide::Input {
        name: "pr7",
        generation: Some(1),
        spec: &spec,
        status: None,
        poll: decide::Poll::Done(&hostile),
        agent_ready: true,
        now: jiff::Timestamp::now(),
    });
    let written = format!(
        "{}\n{:?}",
        serde_json::to_string(&plan.status).unwrap(),
        plan.events
    );
    for banned in HOSTILE_FRAGMENTS {
        assert!(
            !written.contains(banned),
            "{banned:?} reached status or events:\n{written}"
        );
    }
    let checks = plan.status.checks.expect("checks recorded");
    assert_eq!(checks.failed.len(), 2, "{checks:?}");
}
