//! The CLI with kubectl's conventions, against the local cluster: `--kubeconfig` and
//! `--context` pick the cluster as kubectl's do, and `ps -o` prints what kubectl's
//! `-o` would.

use std::process::Command;

use kube::config::{Kubeconfig, NamedContext};
use serde_json::json;

use crate::support::cluster::{create_agent, kubeconfig_path, setup};

fn overseer(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(args)
        // Nothing inferred: only the flags say which cluster.
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .unwrap()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn kubeconfig_and_context_flags_choose_the_cluster_and_ps_prints_json() {
    let ns = setup("cli-flags").await;
    create_agent(&ns, "solo", json!({})).await;
    // A kubeconfig whose current context points nowhere, and whose context `real` is
    // the test cluster.
    let mut config = Kubeconfig::read_from(kubeconfig_path()).unwrap();
    let real = config.contexts[0].clone();
    let mut nowhere = real.clone();
    nowhere.name = "nowhere".into();
    if let Some(context) = nowhere.context.as_mut() {
        context.cluster = "no-such-cluster".into();
    }
    config.contexts = vec![
        NamedContext {
            name: "real".into(),
            ..real
        },
        nowhere,
    ];
    config.current_context = Some("nowhere".into());
    let path = std::env::temp_dir().join(format!("overseer-cli-{}.kubeconfig", ns.name));
    std::fs::write(&path, serde_saphyr::to_string(&config).unwrap()).unwrap();
    let file = path.to_str().unwrap();

    let listed = overseer(&[
        "ps",
        "--kubeconfig",
        file,
        "--context",
        "real",
        "-n",
        &ns.name,
        "-o",
        "json",
    ]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["metadata"]["name"], "solo");

    let wrong = overseer(&["ps", "--kubeconfig", file, "-n", &ns.name]);
    assert!(
        !wrong.status.success(),
        "the current context points nowhere"
    );
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        said.contains("no-such-cluster"),
        "the error names what is missing: {said}"
    );
    let _ = std::fs::remove_file(path);
}
