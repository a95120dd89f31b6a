//! Client-side evaluation of the CRDs' CEL rules against the validation table.
//! OpenAPI constraints (patterns, enums, bounds) are proven by the real API server
//! in the cluster tests; this test proves every CEL rule's message and field.

mod support;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::cel::Validator;
use serde_json::Value;
use support::cases::{self, Check};

fn schema_of(kind: &str) -> Value {
    let crd: CustomResourceDefinition = overseer::crd::all()
        .into_iter()
        .find(|crd| crd.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD of kind {kind}"));
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .unwrap()
        .open_api_v3_schema
        .as_ref();
    serde_json::to_value(schema.unwrap()).unwrap()
}

fn cel_errors(object: &Value) -> Vec<(String, String)> {
    let schema = schema_of(object["kind"].as_str().unwrap());
    match Validator::new().validate(&schema, object, None) {
        Ok(()) => vec![],
        Err(errors) => errors
            .iter()
            .map(|e| (e.field_path.clone(), e.message.clone()))
            .collect(),
    }
}

#[test]
fn every_cel_case_is_refused_with_its_field_and_message() {
    let table = cases::load();
    let cel_cases: Vec<_> = table
        .bad
        .iter()
        .enumerate()
        .filter(|(_, c)| c.check == Check::Cel)
        .collect();
    assert!(cel_cases.len() >= 9, "the table lost CEL cases");
    for (i, case) in cel_cases {
        let errors = cel_errors(&case.object(i));
        assert!(
            errors
                .iter()
                .any(|(field, message)| *field == case.field && *message == case.message),
            "{}: expected `{}: {}`, got {errors:?}",
            case.name,
            case.field,
            case.message
        );
    }
}

#[test]
fn every_cel_evaluation_case_fails_its_rule_at_its_field() {
    let table = cases::load();
    let cases: Vec<_> = table
        .bad
        .iter()
        .enumerate()
        .filter(|(_, c)| c.check == Check::CelEvaluation)
        .collect();
    assert!(!cases.is_empty(), "the table lost its evaluation cases");
    for (i, case) in cases {
        let errors = cel_errors(&case.object(i));
        assert!(
            errors.iter().any(|(field, message)| *field == case.field
                && message.starts_with("rule evaluation error")),
            "{}: expected an evaluation error at `{}`, got {errors:?}",
            case.name,
            case.field
        );
    }
}

#[test]
fn good_inputs_pass_every_cel_rule() {
    let table = cases::load();
    assert!(!table.good.is_empty());
    for (i, case) in table.good.iter().enumerate() {
        let errors = cel_errors(&case.object(i));
        assert!(
            errors.is_empty(),
            "{}: unexpected errors {errors:?}",
            case.name
        );
    }
}

#[test]
fn openapi_cases_pass_cel_so_the_table_says_which_layer_refuses_them() {
    // An `openapi` case that a CEL rule also refuses is mislabelled: the API server
    // would report the CEL message, not the one the table expects.
    let table = cases::load();
    for (i, case) in table
        .bad
        .iter()
        .enumerate()
        .filter(|(_, c)| c.check == Check::Openapi)
    {
        let errors = cel_errors(&case.object(i));
        assert!(
            errors.is_empty(),
            "{}: CEL also refuses it: {errors:?}",
            case.name
        );
    }
}

#[test]
fn every_example_passes_every_cel_rule() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let mut kinds = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for object in serde_saphyr::from_multiple::<Value>(&text).unwrap() {
            let errors = cel_errors(&object);
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
            kinds.push(object["kind"].as_str().unwrap().to_string());
        }
    }
    kinds.sort();
    kinds.dedup();
    assert_eq!(
        kinds,
        ["Agent", "Goal", "PRWatch", "Swarm"],
        "one example per kind"
    );
}
