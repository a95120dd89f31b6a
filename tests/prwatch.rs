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
