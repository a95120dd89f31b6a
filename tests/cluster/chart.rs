//! The Helm chart renders, installs, and its least-privilege RBAC is enough: the
//! operator runs a goal, creates agents with their identities (an overseer's Role
//! included) and a swarm, and polls a PR with the token from its Secret, as the
//! chart's ServiceAccount.

use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::Role;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::config::{AuthInfo, Kubeconfig};
use overseer::goal::{Goal, GoalPhase};
use overseer::prwatch::{PRWatch, PRWatchPhase};
use overseer::swarm::Swarm;
use serde_json::json;

use crate::support::cluster::{
    Operator, create_agent, create_simple_goal, kubeconfig_path, kubectl, repo_root, setup, tool,
    wait_in,
};
use crate::support::github::{FakeGitHub, Reply, create_watch, fixture};

fn kubectl_ok(args: &[&str], stdin: Option<&str>) -> String {
    let output = kubectl(args, stdin.unwrap_or_default());
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_chart_installs_and_its_rbac_is_enough_for_every_kind() {
    let ns = setup("chart").await;
    let chart = repo_root().join("charts/overseer");
    let lint = Command::new(tool("helm"))
        .arg("lint")
        .arg(&chart)
        .output()
        .unwrap();
    assert!(
        lint.status.success(),
        "{}",
        String::from_utf8_lossy(&lint.stdout)
    );
    let rendered = Command::new(tool("helm"))
        .args(["template", "overseer"])
        .arg(&chart)
        .args([
            "--namespace",
            &ns.name,
            "--set",
            &format!("watchNamespace={},replicas=0", ns.name),
        ])
        .output()
        .unwrap();
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    kubectl_ok(
        &["apply", "-n", &ns.name, "-f", "-"],
        Some(&String::from_utf8(rendered.stdout).unwrap()),
    );

    // A kubeconfig that is the chart's ServiceAccount and nothing more.
    let token = kubectl_ok(
        &[
            "create",
            "token",
            "overseer",
            "-n",
            &ns.name,
            "--duration",
            "1h",
        ],
        None,
    );
    let mut kubeconfig = Kubeconfig::read_from(kubeconfig_path()).unwrap();
    for named in kubeconfig.auth_infos.iter_mut() {
        named.auth_info = Some(AuthInfo {
            token: Some(token.trim().to_string().into()),
            ..Default::default()
        });
    }
    let path = std::env::temp_dir().join(format!("overseer-sa-{}.kubeconfig", ns.name));
    std::fs::write(&path, serde_yaml::to_string(&kubeconfig).unwrap()).unwrap();
    let _operator = Operator::start_with_kubeconfig(
        &path,
        &[
            "--namespace",
            &ns.name,
            "--leader-elect",
            "--lease-namespace",
            &ns.name,
        ],
    );

    let goals: Api<Goal> = ns.api();
    create_simple_goal(&ns, "rbac", &["a"]).await;
    let pods: Api<Pod> = ns.api();
    wait_in(&ns, "step pod running", Duration::from_secs(30), || async {
        let pod = pods.get_opt("rbac-s0-a1").await.ok()??;
        (pod.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    let finish = json!({"metadata": {"annotations": {"kwok.overseer.dev/outcome": "Succeeded"}}});
    pods.patch(
        "rbac-s0-a1",
        &PatchParams::default(),
        &Patch::Merge(&finish),
    )
    .await
    .unwrap();
    wait_in(
        &ns,
        "goal Succeeded as the ServiceAccount",
        Duration::from_secs(30),
        || async {
            let phase = goals.get("rbac").await.ok()?.status?.phase;
            (phase == Some(GoalPhase::Succeeded)).then_some(())
        },
    )
    .await;
    let events: Api<Event> = ns.api();
    let reasons: Vec<String> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        reasons.iter().any(|r| r == "GoalSucceeded"),
        "events were allowed: {reasons:?}"
    );

    // Agents: their pods and identities, including an overseer's Role, which the
    // API server lets the operator grant only when it holds every rule itself.
    create_agent(&ns, "lead", json!({"role": "overseer"})).await;
    create_agent(&ns, "b", json!({"overseer": "lead"})).await;
    let roles: Api<Role> = ns.api();
    wait_in(
        &ns,
        "the overseer's Role, granted as the ServiceAccount",
        Duration::from_secs(30),
        || async {
            pods.get_opt("lead-1").await.ok()??;
            pods.get_opt("b-1").await.ok()??;
            let role = roles.get_opt("overseer-agent-lead").await.ok()??;
            let rules = role.rules?;
            let names = rules.first()?.resource_names.clone()?;
            let logs = rules.iter().any(|r| {
                r.resources
                    .as_ref()
                    .is_some_and(|x| x.contains(&"pods/log".to_string()))
            });
            (names == ["b", "lead"] && logs).then_some(())
        },
    )
    .await;

    // A swarm: its members and its NetworkPolicy, applied as the ServiceAccount.
    let swarm: Swarm = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "team"},
        "spec": {"networkPolicy": true,
            "defaults": {"runtime": {"name": "pi", "image": "example.com/pi:1"}},
            "agents": [{"name": "scout", "role": "scout"}]}
    }))
    .unwrap();
    ns.api::<Swarm>()
        .create(&PostParams::default(), &swarm)
        .await
        .unwrap();
    let policies: Api<NetworkPolicy> = ns.api();
    let maps: Api<ConfigMap> = ns.api();
    wait_in(
        &ns,
        "the swarm's agents, instructions and policy, as the ServiceAccount",
        Duration::from_secs(30),
        || async {
            pods.get_opt("team-scout-1").await.ok()??;
            pods.get_opt("team-overseer-1").await.ok()??;
            maps.get_opt("team-scout-instructions").await.ok()??;
            policies.get_opt("overseer-swarm-team").await.ok()?
        },
    )
    .await;

    // A PR watch: the token read from its Secret, one poll, the end in status.
    let github = FakeGitHub::start().await;
    github.then([Reply::json(&fixture("merged", jiff::Timestamp::now()))]);
    create_watch(
        &ns,
        &github,
        "pr",
        "https://github.com/acme/billing/pull/7",
        "b",
        json!({}),
    )
    .await;
    let watches: Api<PRWatch> = ns.api();
    wait_in(
        &ns,
        "the PR watch Merged, as the ServiceAccount",
        Duration::from_secs(30),
        || async {
            let phase = watches.get("pr").await.ok()?.status?.phase;
            (phase == Some(PRWatchPhase::Merged)).then_some(())
        },
    )
    .await;
    assert_eq!(github.polls(), 1);
    assert!(github.refused().is_empty(), "{:?}", github.refused());
    let _ = std::fs::remove_file(path);
}
