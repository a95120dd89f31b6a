//! The CRDs on the real API server: they install, the examples are accepted, and
//! the validation table is refused with the expected field and message.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::Value;

use crate::support::cases::{self};
use crate::support::cluster::{TestNamespace, setup};

fn api_for(ns: &TestNamespace, object: &Value) -> Api<DynamicObject> {
    let kind = object["kind"].as_str().expect("object has a kind");
    let plural = match kind {
        "PRWatch" => "prwatches".to_string(),
        other => format!("{}s", other.to_lowercase()),
    };
    let gvk = GroupVersionKind::gvk("overseer.dev", "v1alpha1", kind);
    Api::namespaced_with(
        ns.client.clone(),
        &ns.name,
        &ApiResource::from_gvk_with_plural(&gvk, &plural),
    )
}

async fn create(ns: &TestNamespace, object: &Value) -> Result<DynamicObject, kube::Error> {
    let dynamic: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    api_for(ns, object)
        .create(&PostParams::default(), &dynamic)
        .await
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn every_example_is_accepted() {
    let ns = setup("examples").await;
    let dir = crate::support::cluster::repo_root().join("examples");
    let mut created = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for object in serde_saphyr::from_multiple::<Value>(&text).unwrap() {
            let stored = create(&ns, &object)
                .await
                .unwrap_or_else(|e| panic!("{} refused: {e}", path.display()));
            // Defaults are written by the schema, so GitOps tools see no drift.
            if object["kind"] == "PRWatch" {
                assert_eq!(
                    stored.data["spec"]["maxFailedPolls"], 30,
                    "schema default applied"
                );
            }
            created += 1;
        }
    }
    assert_eq!(
        created, 6,
        "the five examples, the agent one with its overseer"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn bad_inputs_are_refused_with_the_field_and_message() {
    let ns = setup("validation").await;
    let table = cases::load();
    assert!(table.bad.len() >= 18, "the table lost cases");
    for (i, case) in table.bad.iter().enumerate() {
        let error = match create(&ns, &case.object(i)).await {
            Ok(_) => panic!(
                "{}: accepted, expected `{}: {}`",
                case.name, case.field, case.message
            ),
            Err(kube::Error::Api(status)) => status.message,
            Err(other) => panic!("{}: {other}", case.name),
        };
        assert!(
            error.contains(&case.field) && error.contains(&case.message),
            "{}: expected the field `{}` and `{}` in: {error}",
            case.name,
            case.field,
            case.message
        );
    }
    for (i, case) in table.good.iter().enumerate() {
        create(&ns, &case.object(i))
            .await
            .unwrap_or_else(|e| panic!("{}: refused: {e}", case.name));
    }
}
