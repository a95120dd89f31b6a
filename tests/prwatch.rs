//! The PRWatch poll query against GitHub's published GraphQL schema, and the
//! response parser on realistic responses in that schema's shape.

use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
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

use overseer::prwatch::PRWatchStatus;
use overseer::prwatch::decide::{ci_result, new_feedback};
use overseer::prwatch::github::{FeedbackKind, Snapshot, parse};
use overseer::prwatch::message;

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

/// Every key a fixture uses is a field the query selects (bodies only in the
/// injection fixture): the fixtures are answers to this query, not to another.
#[test]
fn fixtures_answer_exactly_the_poll_query() {
    fn keys(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, inner) in map {
                    out.push(key.clone());
                    keys(inner, out);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|i| keys(i, out)),
            _ => {}
        }
    }
    let selected: Vec<&str> = QUERY
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
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
        let mut used = Vec::new();
        keys(&json["data"], &mut used);
        for key in used {
            let extra_body = key == "body" && name == "injection";
            assert!(
                selected.contains(&key.as_str()) || extra_body,
                "{name}: {key} is not selected by the query"
            );
        }
        assert!(
            fixture(name).len() > 3000,
            "{name} is a realistic, several-KiB response"
        );
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
    for banned in [
        "SYSTEM",
        "curl",
        "rm -rf",
        "etc/passwd",
        "admin mode",
        "\u{200b}",
        "<!--",
        "AAAA",
        "$(",
    ] {
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
