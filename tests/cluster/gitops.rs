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

/// A user's chart: a Swarm and a Goal of one step (its swarm's), in a temporary folder.
fn user_chart(name: &str) -> std::path::PathBuf {
    let dir = repo_root().join(format!("target/test-charts/{name}"));
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
    )
    .unwrap();
    let runtime = "{name: codex, mode: headless, image: example.com/codex:1}";
    std::fs::write(
        dir.join("templates/team.yaml"),
        format!(
            "apiVersion: overseer.dev/v1alpha1\nkind: Swarm\nmetadata: {{name: team}}\n\
             spec:\n  defaults: {{runtime: {runtime}}}\n  agents: [{{name: builder, role: builder}}]\n\
             ---\n\
             apiVersion: overseer.dev/v1alpha1\nkind: Goal\nmetadata: {{name: ship}}\n\
             spec:\n  swarm: team\n  defaults: {{maxRetries: 0}}\n  steps: [{{name: build, action: Build it}}]\n"
        ),
    )
    .unwrap();
    dir
}

/// `helm4 install --wait` of `chart` as release `release`, started in the background.
fn helm4_install(
    ns: &TestNamespace,
    release: &str,
    chart: &std::path::Path,
) -> std::process::Child {
    Command::new(tool("helm4"))
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(["install", release])
        .arg(chart)
        .args(["--namespace", &ns.name, "--wait", "--timeout", "3m"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start helm4 (built by hack/testenv/build.sh, linked by `make cluster`)")
}

async fn wait_step_running(ns: &TestNamespace, pod: &str) {
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = ns.api();
    crate::support::cluster::wait_in(ns, &format!("step pod {pod} Running"), WAIT, || async {
        let found = pods.get_opt(pod).await.ok()??;
        (found.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
}

/// Has kwok finish the running step pod `pod` with `outcome`.
async fn finish_step(ns: &TestNamespace, pod: &str, outcome: &str) {
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = ns.api();
    let patch = json!({"metadata": {"annotations": {
        "kwok.overseer.dev/outcome": outcome, "kwok.overseer.dev/message": "exit 2: tests fail"
    }}});
    pods.patch(
        pod,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .unwrap();
}

const WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Helm 4 waits with kstatus, our kinds included (HIP-0022): a chart whose goal
/// succeeds returns once the goal has; one whose step fails for good fails promptly
/// with the goal's reason instead of waiting out `--timeout`.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn helm_4_waits_for_a_goal_and_fails_with_its_reason() {
    use overseer::goal::{Goal, GoalPhase};
    for (release, outcome) in [("passes", "Succeeded"), ("fails", "Failed")] {
        let ns = crate::support::cluster::setup(&format!("helm4-{release}")).await;
        let _operator = crate::support::cluster::operator(&ns);
        let mut helm = helm4_install(&ns, release, &user_chart(release));
        wait_step_running(&ns, "ship-s0-a1").await;
        assert!(
            helm.try_wait().unwrap().is_none(),
            "helm4 --wait returned while the goal's step still ran"
        );
        finish_step(&ns, "ship-s0-a1", outcome).await;
        let finished = std::time::Instant::now();
        let out = tokio::task::spawn_blocking(move || {
            let waited = helm.wait().unwrap();
            let mut stderr = String::new();
            std::io::Read::read_to_string(helm.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            (waited, stderr)
        });
        let (status, stderr) = tokio::time::timeout(WAIT * 2, out)
            .await
            .expect("helm4 install --wait returned before its timeout")
            .unwrap();
        let after = finished.elapsed();
        let goal: Goal = ns.api().get("ship").await.unwrap();
        let phase = goal.status.as_ref().and_then(|s| s.phase);
        if outcome == "Succeeded" {
            assert!(status.success(), "helm4 install --wait: {stderr}");
            assert_eq!(
                phase,
                Some(GoalPhase::Succeeded),
                "it returned once the goal had"
            );
        } else {
            assert!(!status.success(), "helm4 must fail with the goal: {stderr}");
            assert!(
                stderr.contains("Goal")
                    && stderr.contains("status: Failed")
                    && stderr.contains("step build failed"),
                "helm4 names the goal and its reason: {stderr}"
            );
        }
        let figure = format!(
            "helm4 install --wait, step {outcome}: returned {:.1}s after the step pod finished ({})\n",
            after.as_secs_f64(),
            if status.success() {
                "success"
            } else {
                stderr.trim()
            }
        );
        println!("{figure}");
        let log = repo_root().join("target/test-logs/helm4-wait.txt");
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        std::io::Write::write_all(&mut file, figure.as_bytes()).unwrap();
    }
}
