//! Every reader of status reads each kind in each state alike: the states of the table
//! in docs/gitops.md that the kinds' own tests do not reach, driven on the local cluster
//! and read live by kstatus (the library behind Flux's `wait` and Helm 4's `--wait`) and
//! by the Argo CD scripts (`assert_readers`), and by `kubectl wait` where the table says.

use kube::api::{Api, Patch, PatchParams};
use overseer::agent::{Agent, AgentPhase};
use overseer::goal::{Goal, GoalPhase};
use overseer::kinds::swarm::{Swarm, SwarmPhase};
use serde_json::json;

use crate::agent::{WAIT, wait_condition, wait_started};
use crate::overseer::overseer_as;
use crate::support::cluster::{
    TestNamespace, agent_account, create_agent, create_object, kubectl, operator, setup, wait_in,
};
use crate::support::health::assert_readers;

/// Writes the agent's exit as its pod's shim does for `overseer loop done`.
async fn declare_done(ns: &TestNamespace, name: &str) {
    let agents: Api<Agent> = ns.api();
    let attempt = wait_started(ns, name)
        .await
        .status
        .unwrap()
        .attempt
        .unwrap();
    let exit = json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "status": {"exit": {"outcome": "done", "reason": "shipped", "attempt": attempt}}});
    agents
        .patch_status(name, &PatchParams::apply("shim"), &Patch::Apply(&exit))
        .await
        .unwrap();
}

/// `kubectl wait --for=condition=TYPE KIND/NAME` returns at once, as the table says.
fn assert_kubectl_waits(ns: &TestNamespace, condition: &str, object: &str) {
    let waited = kubectl(
        &[
            "-n",
            &ns.name,
            "wait",
            &format!("--for=condition={condition}"),
            object,
            "--timeout=20s",
        ],
        "",
    );
    assert!(
        waited.status.success(),
        "kubectl wait --for=condition={condition} {object}: {waited:?}"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn agents_read_alike_by_kstatus_argocd_and_kubectl_wait() {
    let ns = setup("readers-agents").await;
    let _operator = operator(&ns);
    create_agent(&ns, "waiting", json!({"swarm": "not-yet"})).await;
    // A member of a swarm that names no image for it.
    create_object::<Swarm>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "bare"},
            "spec": {"agents": [{"name": "builder", "role": "builder"}]}}),
    )
    .await;
    create_agent(&ns, "finished", json!({})).await;
    create_agent(&ns, "asks", json!({"loop": {"enabled": true}})).await;

    let waiting = wait_condition(&ns, "waiting", "its swarm reported missing", |a| {
        a.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.reason == "SwarmNotFound")
        })
    })
    .await;
    assert_readers(
        "Agent",
        "its swarm not created yet",
        &waiting,
        "Progressing",
    );

    wait_condition(&ns, "bare-builder", "its image reported missing", |a| {
        a.status.as_ref().and_then(|s| s.observed_generation) == a.metadata.generation
    })
    .await;
    assert_kubectl_waits(&ns, "Stalled", "agent/bare-builder");
    let agents: Api<Agent> = ns.api();
    let no_image = agents.get("bare-builder").await.unwrap();
    assert_readers("Agent", "no image (an invalid spec)", &no_image, "Degraded");

    declare_done(&ns, "finished").await;
    let finished = wait_condition(&ns, "finished", "Done", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Done)
    })
    .await;
    assert_kubectl_waits(&ns, "Ready", "agent/finished");
    let finished = agents.get("finished").await.unwrap_or(finished);
    assert_readers("Agent", "done", &finished, "Healthy");

    wait_started(&ns, "asks").await;
    let user = agent_account(&ns, "asks");
    let args = ["escalate", "--agent", "asks", "--severity", "critical"];
    let out = overseer_as(
        &ns,
        Some(&user),
        &[&args[..], &["--reason", "disk full"]].concat(),
    );
    assert!(out.status.success(), "{out:?}");
    let asks = wait_condition(&ns, "asks", "its critical escalation open", |a| {
        a.status
            .as_ref()
            .is_some_and(|s| s.phase == Some(AgentPhase::Running) && !s.escalations.is_empty())
    })
    .await;
    assert_readers(
        "Agent",
        "running with a critical escalation open",
        &asks,
        "Degraded",
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn goals_and_swarms_read_alike_by_kstatus_and_argocd() {
    let ns = setup("readers-runs").await;
    let _operator = operator(&ns);
    let runtime = json!({"name": "codex", "mode": "headless", "image": "example.com/codex:1"});
    create_object::<Goal>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": "long"},
            "spec": {"defaults": {"runtime": runtime}, "steps": [{"name": "build", "action": "Build it"}]}}),
    )
    .await;
    create_object::<Swarm>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "broken"},
            "spec": {"defaults": {"runtime": runtime}, "roles": {"builder": {"profile": "missing"}},
                "agents": [{"name": "builder", "role": "builder"}]}}),
    )
    .await;
    create_object::<Swarm>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "solo"},
            "spec": {"defaults": {"runtime": runtime}, "agents": [{"name": "builder", "role": "builder"}]}}),
    )
    .await;

    let goals: Api<Goal> = ns.api();
    let running = wait_in(&ns, "goal long running its step", WAIT, || async {
        let goal = goals.get("long").await.ok()?;
        (goal.status.as_ref()?.phase == Some(GoalPhase::Running)).then_some(goal)
    })
    .await;
    assert_readers("Goal", "running a step", &running, "Progressing");

    let swarms: Api<Swarm> = ns.api();
    let broken = wait_in(&ns, "swarm broken's invalid spec", WAIT, || async {
        let swarm = swarms.get("broken").await.ok()?;
        let status = swarm.status.as_ref()?;
        overseer::conditions::is_true(&status.conditions, "Stalled").then_some(swarm)
    })
    .await;
    let ready = broken.status.as_ref().unwrap();
    assert!(
        !overseer::conditions::is_true(&ready.conditions, "Ready"),
        "never Ready while its spec is invalid: {:?}",
        ready.conditions
    );
    assert_readers(
        "Swarm",
        "a role names a profile that does not exist",
        &broken,
        "Degraded",
    );

    declare_done(&ns, "solo-builder").await;
    let completed = wait_in(&ns, "swarm solo's run completed", WAIT, || async {
        let swarm = swarms.get("solo").await.ok()?;
        (swarm.status.as_ref()?.phase == Some(SwarmPhase::Ended)).then_some(swarm)
    })
    .await;
    assert_kubectl_waits(&ns, "Ready", "swarm/solo");
    let completed = swarms.get("solo").await.unwrap_or(completed);
    assert_readers("Swarm", "its run completed", &completed, "Healthy");
}

/// Before the operator has written any status, the API server's schema default
/// (`status.observedGeneration: 0`) makes every reader wait: kstatus reads an object
/// without conditions as Current, and a Helm 4 `--wait` would pass at once.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_object_the_operator_has_not_seen_is_in_progress_to_every_reader() {
    let ns = setup("readers-unseen").await;
    let goal = create_object::<Goal>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": "unseen"},
            "spec": {"defaults": {"runtime": {"name": "codex", "image": "example.com/codex:1"}},
                "steps": [{"name": "build", "action": "Build it"}]}}),
    )
    .await;
    assert_eq!(
        goal.status.as_ref().and_then(|s| s.observed_generation),
        Some(0),
        "the schema's default"
    );
    let (status, message) = crate::support::health::kstatus(&goal);
    assert_eq!(status, "InProgress", "{message}");
    assert!(
        message.contains("latest observed generation is 0"),
        "{message}"
    );
    let (health, _) = crate::support::health::argocd("Goal", &goal);
    assert_eq!(health, "Progressing");
}
