//! The shipped `argocd-cm` patch, applied by the real kubectl to a real ConfigMap: what
//! Argo CD then reads is exactly the health checks the tests run.

use std::process::Command;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use serde_json::json;

use crate::support::cluster::{TestNamespace, client, kubeconfig_path, repo_root, tool};

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_argocd_cm_patch_installs_every_health_check() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "argocd-cm").await;
    let maps: kube::Api<ConfigMap> = ns.api();
    // Argo CD's own settings stay as they were.
    let existing =
        json!({"metadata": {"name": "argocd-cm"}, "data": {"url": "https://argocd.example.com"}});
    maps.create(
        &PostParams::default(),
        &serde_json::from_value(existing).unwrap(),
    )
    .await
    .unwrap();
    let out = Command::new(tool("kubectl"))
        .args([
            "-n",
            &ns.name,
            "patch",
            "configmap",
            "argocd-cm",
            "--patch-file",
        ])
        .arg(repo_root().join("gitops/argocd/argocd-cm-patch.yaml"))
        .env("KUBECONFIG", kubeconfig_path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = maps
        .get("argocd-cm")
        .await
        .unwrap()
        .data
        .unwrap_or_default();
    assert_eq!(data["url"], "https://argocd.example.com");
    for kind in ["Agent", "Goal", "PRWatch", "Swarm"] {
        let script =
            std::fs::read_to_string(repo_root().join(format!("gitops/argocd/health/{kind}.lua")))
                .unwrap();
        assert_eq!(
            data.get(&format!(
                "resource.customizations.health.overseer.dev_{kind}"
            )),
            Some(&script),
            "{kind}"
        );
    }
}
