//! `overseer run` against a cluster without the CRDs exits with a one-line hint.
//! A binary of its own, run before the other cluster tests, because it removes the
//! CRDs (cluster-wide) and puts them back.

mod support;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams};
use support::cluster::{client, install_crds, kubeconfig_path, wait_until};

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
    wait_until("CRDs gone", Duration::from_secs(60), || {
        let crds = crds.clone();
        async move {
            crds.get_opt("agents.overseer.dev")
                .await
                .ok()?
                .is_none()
                .then_some(())
        }
    })
    .await;

    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["run", "--metrics-addr", "127.0.0.1:0"])
        .env("KUBECONFIG", kubeconfig_path())
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), output)
        .await
        .expect("overseer run exits")
        .unwrap();
    install_crds(&client).await;

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        "error: the overseer CRDs are not installed (agents.overseer.dev is missing): install them with `overseer crd | kubectl apply --server-side -f -`"
    );
}
