//! Tests that change the CRDs cluster-wide, so they run alone (`--test-threads=1`),
//! before the other cluster tests: `overseer run` without the CRDs exits with a
//! one-line hint, and an object stored under a looser CRD stalls no controller.

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use overseer::agent::{Agent, AgentPhase};
use support::cluster::{
    Operator, client, create_agent, install_crds, kubeconfig_path, setup, wait_until,
};

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn run_without_crds_fails_with_a_clear_message() {
    let client = client().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in overseer::crd::all() {
        let _ = crds
            .delete(
                crd.metadata.name.as_deref().unwrap(),
                &DeleteParams::default(),
            )
            .await;
    }
    // All four objects gone (a Terminating CRD re-applied below would still be deleted),
    // and the operator's own probe answering "missing": the CRD object goes before the
    // API server stops serving its kind, and in between `run` would start and retry.
    wait_until(
        "the CRDs gone and their kinds unserved",
        Duration::from_secs(60),
        || {
            let (client, crds) = (client.clone(), crds.clone());
            async move {
                for crd in overseer::crd::all() {
                    crds.get_opt(crd.metadata.name.as_deref()?)
                        .await
                        .ok()?
                        .is_none()
                        .then_some(())?;
                }
                matches!(
                    overseer::operator::ensure_crds(&client, None).await,
                    Err(overseer::Error::CrdsMissing(_))
                )
                .then_some(())
            }
        },
    )
    .await;

    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["run", "--metrics-addr", "127.0.0.1:0"])
        .env("KUBECONFIG", kubeconfig_path())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start overseer run");
    let output = tokio::time::timeout(Duration::from_secs(30), run.wait_with_output()).await;
    install_crds(&client).await;
    let output = output
        .expect("overseer run exits within 30 s of finding no CRDs")
        .unwrap();

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        "error: the overseer CRDs are not installed (agents.overseer.dev is missing): install them with `overseer crd | kubectl apply --server-side -f -`"
    );
}

/// The JSON pointer of the Agent CRD's list of runtime names.
const RUNTIME_NAMES: &str = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/runtime/properties/name/enum";

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_agent_the_operator_cannot_read_stalls_no_controller() {
    let client = client().await;
    let ns = setup("unreadable").await;
    // A looser CRD (an older version, or a hand edit) lets a runtime name through that
    // this build has no variant for; the real CRD comes back, the object stays.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let loosen: json_patch::Patch =
        serde_json::from_value(serde_json::json!([{"op": "remove", "path": RUNTIME_NAMES}]))
            .unwrap();
    crds.patch(
        "agents.overseer.dev",
        &PatchParams::default(),
        &Patch::Json::<()>(loosen),
    )
    .await
    .expect("loosen the Agent CRD");
    let gvk = GroupVersionKind::gvk("overseer.dev", "v1alpha1", "Agent");
    let raw: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &ns.name, &ApiResource::from_gvk(&gvk));
    let unreadable: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent", "metadata": {"name": "odd"},
        "spec": {"runtime": {"name": "emacs", "image": "example.com/emacs:1"}}
    }))
    .unwrap();
    wait_until("the loose CRD in force", Duration::from_secs(30), || {
        let (raw, unreadable) = (raw.clone(), unreadable.clone());
        async move { raw.create(&PostParams::default(), &unreadable).await.ok() }
    })
    .await;
    install_crds(&client).await;
    create_agent(&ns, "fine", serde_json::json!({})).await;

    let _operator = Operator::start(&["--namespace", &ns.name]);
    // The readable agent is served as ever: its pod is created and it runs (kwok).
    let agents = ns.api::<Agent>();
    wait_until("agent fine Running", Duration::from_secs(60), || {
        let agents = agents.clone();
        async move {
            let fine = agents.get("fine").await.ok()?;
            (fine.status?.phase == Some(AgentPhase::Running)).then_some(())
        }
    })
    .await;
    // The other gets a Warning naming why, and no pod.
    let events = ns.api::<Event>();
    let warning = wait_until(
        "an Unreadable Event for odd",
        Duration::from_secs(30),
        || {
            let events = events.clone();
            async move {
                let list = events.list(&ListParams::default()).await.ok()?;
                list.items.into_iter().find(|e| {
                    e.reason.as_deref() == Some("Unreadable")
                        && e.involved_object.name.as_deref() == Some("odd")
                })
            }
        },
    )
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    let message = warning.message.unwrap_or_default();
    assert!(message.contains("emacs"), "{message}");
    let pods = ns.api::<Pod>().list(&ListParams::default()).await.unwrap();
    let names: Vec<_> = pods
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with("odd")), "{names:?}");
}
