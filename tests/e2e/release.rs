//! One test's release: a namespace that enforces the restricted Pod Security Standard
//! (and, on the local cluster, sends every pod to the real node), the chart installed
//! into it from the image under test, and what the tests read from real pods.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, ListParams};

use crate::support::cluster::{
    Namespaced, TestNamespace, client, create_object, install_crds, kubeconfig_path, kubectl,
    repo_root, tool, wait_in,
};

/// How long a real pod may take to be scheduled, pull nothing and start.
pub const POD_START: Duration = Duration::from_secs(90);

/// The operator image under test (`hack/image/images.env`, loaded by hack/e2e/run.sh).
pub fn operator_image() -> String {
    image_var("OVERSEER_E2E_IMAGE")
}

/// The agent test image: bash, tmux, git and the scripted CLIs of tests/fake-agents.
pub fn agent_image() -> String {
    image_var("OVERSEER_E2E_AGENT_IMAGE")
}

fn image_var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run the e2e suite through hack/e2e/run.sh (make test)")
    })
}

/// A namespace whose pods must meet the restricted Pod Security Standard. When
/// `OVERSEER_E2E_NODE_LABEL` names a node label (the local cluster's real node beside
/// kwok's), the PodNodeSelector and PodTolerationRestriction admission plugins send
/// every pod of the namespace to that node.
pub async fn namespace(test: &str) -> TestNamespace {
    let client = client().await;
    install_crds(&client).await;
    let ns = TestNamespace::new(&client, &format!("e2e-{test}")).await;
    let mut patch = serde_json::json!({"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
    }}});
    if let Ok(label) = std::env::var("OVERSEER_E2E_NODE_LABEL") {
        let (key, value) = label
            .split_once('=')
            .expect("OVERSEER_E2E_NODE_LABEL is KEY=VALUE");
        patch["metadata"]["annotations"] = serde_json::json!({
            "scheduler.alpha.kubernetes.io/node-selector": label,
            "scheduler.alpha.kubernetes.io/defaultTolerations": serde_json::json!([
                {"key": key, "operator": "Equal", "value": value, "effect": "NoSchedule"}
            ]).to_string(),
        });
    }
    let namespaces: Api<Namespace> = Api::all(client);
    namespaces
        .patch(
            &ns.name,
            &Default::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .expect("label the test namespace");
    ns
}

/// Runs `command`, failing the test with its output unless it succeeds.
pub fn run_ok(command: &mut Command) -> String {
    let output = command.output().expect("start command");
    assert!(
        output.status.success(),
        "{command:?}:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

pub fn kubectl_ok(args: &[&str]) -> String {
    let output = kubectl(args, "");
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The chart as `helm package` makes it, what a user installs from a repository:
/// packaged once per test run.
pub fn packaged_chart() -> PathBuf {
    static PACKAGED: OnceLock<PathBuf> = OnceLock::new();
    PACKAGED
        .get_or_init(|| {
            let dir = repo_root().join("target/e2e-chart");
            std::fs::create_dir_all(&dir).unwrap();
            let out = run_ok(
                Command::new(tool("helm"))
                    .arg("package")
                    .arg(repo_root().join("charts/overseer"))
                    .arg("--destination")
                    .arg(&dir),
            );
            let path = out
                .trim()
                .rsplit_once(": ")
                .map(|(_, path)| PathBuf::from(path))
                .unwrap_or_else(|| panic!("helm package said: {out}"));
            assert!(path.exists(), "{out}");
            path
        })
        .clone()
}

/// The address of this machine that the operator pods can reach, for a listener of the
/// test's own: the one the host routes to the node from (on the local cluster, the
/// node's bridge address; on kind, the gateway of its Docker network).
pub async fn address_for_pods(ns: &TestNamespace) -> std::net::IpAddr {
    let pods: Api<Pod> = ns.api();
    let operator = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=overseer"))
        .await
        .unwrap()
        .items
        .into_iter()
        .find_map(|p| p.status?.host_ip)
        .expect("an operator pod on a node");
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    // A UDP connect sends nothing: it only picks the route and its source address.
    probe.connect((operator.as_str(), 9)).unwrap();
    probe.local_addr().unwrap().ip()
}

/// The chart installed as release `overseer` from the packaged chart, watching only
/// `ns`: two replicas with leader election, from the image under test. Returns once
/// both pods are Ready (their readiness probes answered) and one of them holds the Lease.
pub async fn install(ns: &TestNamespace) -> Release {
    install_with(ns, "helm").await
}

/// As `install`, with `helm` (Helm 3) or `helm4` (Helm 4, which applies server-side).
pub async fn install_with(ns: &TestNamespace, helm: &str) -> Release {
    let image = operator_image();
    let (repository, tag) = image.rsplit_once(':').expect("image has a tag");
    let started = Instant::now();
    run_ok(
        Command::new(tool(helm))
            .arg("--kubeconfig")
            .arg(kubeconfig_path())
            .args(["install", "overseer"])
            .arg(packaged_chart())
            .args(["--namespace", &ns.name])
            .args(["--set", &format!("image.repository={repository}")])
            .args(["--set", &format!("image.tag={tag}")])
            .args(["--set", &format!("watchNamespace={}", ns.name)])
            .args(["--set", "logLevel=info\\,overseer=debug"]),
    );
    let pods: Api<Pod> = ns.api();
    let ready = wait_in(ns, "two operator pods Ready", POD_START, || {
        let pods = pods.clone();
        async move {
            let list = pods
                .list(&ListParams::default().labels("app.kubernetes.io/name=overseer"))
                .await
                .ok()?;
            let ready: Vec<String> = list
                .items
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none() && is_ready(p))
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            (ready.len() == 2).then_some(ready)
        }
    })
    .await;
    let ready_after = started.elapsed();
    let leader = wait_for_leader(ns, None).await;
    println!(
        "e2e[{}]: helm install -> 2 operator pods Ready: {:.1}s; leader {leader} after {:.1}s",
        ns.name,
        ready_after.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Release {
        pods: ready,
        leader,
    }
}

/// The upgrade path of docs/operations.md: the packaged chart's CRDs applied first
/// (Helm never upgrades `crds/`), then `helm upgrade` with `values` on top of the
/// release's own. Returns once the Deployment has rolled out: both pods of the new
/// template Ready.
pub async fn upgrade(ns: &TestNamespace, values: &[&str]) {
    upgrade_with(ns, "helm", values).await
}

/// As `upgrade`, with `helm` (Helm 3) or `helm4` (Helm 4).
pub async fn upgrade_with(ns: &TestNamespace, helm: &str, values: &[&str]) {
    let crds = run_ok(
        Command::new(tool("helm"))
            .args(["show", "crds"])
            .arg(packaged_chart()),
    );
    let applied = kubectl(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &crds,
    );
    assert!(
        applied.status.success(),
        "the CRDs of the packaged chart: {}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let mut command = Command::new(tool(helm));
    command
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(["upgrade", "overseer"])
        .arg(packaged_chart())
        .args(["--namespace", &ns.name, "--reuse-values"]);
    for value in values {
        command.args(["--set", value]);
    }
    run_ok(&mut command);
    let deployments: Api<Deployment> = ns.api();
    wait_in(ns, "the upgraded Deployment rolled out", POD_START, || {
        let deployments = deployments.clone();
        async move {
            let deployment = deployments.get("overseer").await.ok()?;
            let status = deployment.status?;
            (status.observed_generation == deployment.metadata.generation
                && status.updated_replicas == Some(2)
                && status.ready_replicas == Some(2)
                && status.replicas == Some(2))
            .then_some(())
        }
    })
    .await;
}

pub struct Release {
    /// The two operator pods.
    pub pods: Vec<String>,
    /// The one holding the Lease.
    pub leader: String,
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The operator pods of the release that are not being deleted.
async fn live_operator_pods(pods: &Api<Pod>) -> Option<Vec<String>> {
    let list = pods
        .list(&ListParams::default().labels("app.kubernetes.io/name=overseer"))
        .await
        .ok()?;
    Some(
        list.items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.metadata.name)
            .collect(),
    )
}

/// The Lease holder once it is a live operator pod other than `not`. Read afresh on
/// every poll: after a pod is killed the Lease may go to the standby or to the
/// ReplicaSet's replacement, whichever tries first.
pub async fn wait_for_leader(ns: &TestNamespace, not: Option<&str>) -> String {
    let leases: Api<Lease> = ns.api();
    let pods: Api<Pod> = ns.api();
    wait_in(ns, "a leader among the operator pods", POD_START, || {
        let (leases, pods) = (leases.clone(), pods.clone());
        async move {
            let lease = leases.get_opt("overseer-controller").await.ok()??;
            let holder = lease.spec?.holder_identity?;
            live_operator_pods(&pods)
                .await?
                .into_iter()
                .find(|p| holder.starts_with(&format!("{p}-")) && Some(p.as_str()) != not)
        }
    })
    .await
}

/// GET `path` from port 8080 of pod `pod`, through the API server's pod proxy: what
/// a Prometheus scrape of the pod reads.
pub fn from_pod(ns: &TestNamespace, pod: &str, path: &str) -> String {
    kubectl_ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{}/pods/{pod}:8080/proxy{path}", ns.name),
    ])
}

/// Runs `command` in container `agent` of `pod` through the real kubelet.
pub fn exec(ns: &TestNamespace, pod: &str, command: &[&str]) -> std::process::Output {
    let mut args = vec!["exec", "-n", &ns.name, pod, "-c", "agent", "--"];
    args.extend(command);
    kubectl(&args, "")
}

/// A file of a container, read through exec (empty while it does not exist).
pub fn read_in_pod(ns: &TestNamespace, pod: &str, path: &str) -> String {
    String::from_utf8_lossy(&exec(ns, pod, &["cat", path]).stdout).into_owned()
}

/// Creates the object in `yaml` in `ns`.
pub async fn create<K: Namespaced>(ns: &TestNamespace, yaml: &str) -> K {
    create_object(ns, serde_saphyr::from_str(yaml).expect("test object YAML")).await
}

/// `helm uninstall` of the release with `helm` (Helm 3) or `helm4`; returns once the
/// operator's Deployment is gone. The CRDs stay (Helm never deletes `crds/`), and so do
/// the objects of every kind.
pub async fn uninstall_with(ns: &TestNamespace, helm: &str) {
    run_ok(
        Command::new(tool(helm))
            .arg("--kubeconfig")
            .arg(kubeconfig_path())
            .args(["uninstall", "overseer", "--namespace", &ns.name]),
    );
    let deployments: Api<Deployment> = ns.api();
    wait_in(ns, "the operator's Deployment gone", POD_START, || {
        let deployments = deployments.clone();
        async move {
            deployments
                .get_opt("overseer")
                .await
                .ok()
                .and_then(|d| d.is_none().then_some(()))
        }
    })
    .await;
}
