//! Two operator processes: only the Lease holder acts, the standby takes over within
//! the lease duration after the holder is killed, and a holder frozen past its Lease
//! writes nothing when it wakes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use overseer::goal::Goal;
use serde_json::json;

use crate::support::cluster::{Operator, TestNamespace, create_simple_goal, setup, wait_in};

fn holder_of(lease: &Lease) -> Option<String> {
    lease.spec.as_ref()?.holder_identity.clone()
}

/// Goal reconciliations a replica reports.
fn reconciled(metrics: &str) -> u64 {
    metrics
        .lines()
        .find(|l| l.starts_with("overseer_reconciliations_total{controller=\"goal\"}"))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
        .unwrap_or(0)
}

fn is_leader(metrics: &str) -> bool {
    metrics
        .lines()
        .any(|line| line.trim() == "overseer_leader 1")
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn only_the_lease_holder_acts_and_the_standby_takes_over() {
    let ns = setup("leader").await;
    let lease_duration = Duration::from_secs(4);
    let args = [
        "--leader-elect",
        "--lease-name",
        "overseer-test",
        "--lease-namespace",
        &ns.name,
        "--lease-duration-secs",
        "4",
        "--namespace",
        &ns.name,
    ];
    let mut first = Operator::start(&args);
    let leases: Api<Lease> = ns.api();
    let holder = wait_in(
        &ns,
        "first replica holds the Lease",
        Duration::from_secs(30),
        || {
            let leases = leases.clone();
            async move { holder_of(&leases.get_opt("overseer-test").await.ok()??) }
        },
    )
    .await;
    assert!(
        holder.ends_with(&format!("-{}", first.child.id())),
        "holder {holder}"
    );
    wait_in(
        &ns,
        "first replica reports leadership",
        Duration::from_secs(10),
        || async { first.metrics().await.filter(|m| is_leader(m)) },
    )
    .await;

    let second = Operator::start(&args);
    wait_in(
        &ns,
        "second replica serving metrics",
        Duration::from_secs(20),
        || second.metrics(),
    )
    .await;
    // A goal to act on: only the leader reconciles it.
    create_simple_goal(&ns, "work", &["a"]).await;
    let pods: Api<Pod> = ns.api();
    wait_in(
        &ns,
        "the leader starts the goal",
        Duration::from_secs(20),
        || async { pods.get_opt("work-s0-a1").await.ok()?.map(|_| ()) },
    )
    .await;
    // The standby waits well past a full lease duration without acting.
    tokio::time::sleep(lease_duration * 2).await;
    let standby = second.metrics().await.unwrap();
    assert!(
        !is_leader(&standby),
        "the standby must not act while the leader renews"
    );
    assert!(
        reconciled(&first.metrics().await.unwrap()) > 0,
        "the leader reconciled"
    );
    assert_eq!(reconciled(&standby), 0, "the standby reconciled nothing");
    let lease = leases.get("overseer-test").await.unwrap();
    assert_eq!(holder_of(&lease).as_deref(), Some(holder.as_str()));

    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let killed_at = Instant::now();
    let second_id = format!("-{}", second.child.id());
    wait_in(
        &ns,
        "standby takes the Lease",
        Duration::from_secs(15),
        || {
            let leases = leases.clone();
            let second_id = second_id.clone();
            async move {
                holder_of(&leases.get_opt("overseer-test").await.ok()??)
                    .filter(|h| h.ends_with(&second_id))
            }
        },
    )
    .await;
    let takeover = killed_at.elapsed();
    // Expiry is judged from the last renewal we saw; allow one retry period on top.
    assert!(
        takeover <= lease_duration + Duration::from_secs(2),
        "takeover took {takeover:?}"
    );
    wait_in(
        &ns,
        "standby reports leadership",
        Duration::from_secs(10),
        || async { second.metrics().await.filter(|m| is_leader(m)) },
    )
    .await;
}

fn signal(child: &std::process::Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {}", child.id());
}

/// Finishes every Running pod of the namespace as Succeeded, as soon as it runs.
async fn finish_running_pods(pods: Api<Pod>) {
    let finish = json!({"metadata": {"annotations": {"kwok.overseer.dev/outcome": "Succeeded"}}});
    loop {
        for pod in pods
            .list(&ListParams::default())
            .await
            .into_iter()
            .flatten()
        {
            let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
            let marked = pod
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("kwok.overseer.dev/outcome"));
            if running && !marked {
                let name = pod.metadata.name.clone().unwrap_or_default();
                let _ = pods
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&finish))
                    .await;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What only the operator changes in a namespace: each Goal's resourceVersion (the
/// operator alone writes their status) and the names of the pods (it alone creates and
/// deletes them).
async fn operator_made(ns: &TestNamespace) -> (BTreeMap<String, String>, Vec<String>) {
    let goals = ns.api::<Goal>().list(&ListParams::default()).await.unwrap();
    let pods = ns.api::<Pod>().list(&ListParams::default()).await.unwrap();
    (
        goals
            .into_iter()
            .map(|g| {
                (
                    g.metadata.name.unwrap(),
                    g.metadata.resource_version.unwrap(),
                )
            })
            .collect(),
        pods.into_iter().map(|p| p.metadata.name.unwrap()).collect(),
    )
}

/// The leader is frozen (SIGSTOP) in the middle of busy work, a standby that acts in
/// another namespace takes its Lease, and work for the frozen leader is created; on
/// SIGCONT its writes ready to go are refused by its fence (src/kubernetes/leader.rs) and it exits.
/// Nothing in its namespace changes from the moment it wakes.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_leader_frozen_past_its_lease_writes_nothing_when_it_wakes() {
    let ns = setup("frozen-leader").await;
    let elsewhere = setup("frozen-leader-standby").await;
    let lease = [
        "--leader-elect",
        "--lease-name",
        "overseer-frozen",
        "--lease-namespace",
        &ns.name,
        "--lease-duration-secs",
        "4",
    ];
    let mut first = Operator::start(&[&lease[..], &["--namespace", &ns.name]].concat());
    let leases: Api<Lease> = ns.api();
    let held_by = |pid: u32| {
        let leases = leases.clone();
        move || {
            let leases = leases.clone();
            async move {
                holder_of(&leases.get_opt("overseer-frozen").await.ok()??)
                    .filter(|h| h.ends_with(&format!("-{pid}")))
            }
        }
    };
    wait_in(
        &ns,
        "the first replica holds the Lease",
        Duration::from_secs(30),
        held_by(first.child.id()),
    )
    .await;

    // Busy work, so that reconciles are half done when the leader freezes.
    for i in 0..20 {
        create_simple_goal(&ns, &format!("busy-{i}"), &["a", "b", "c", "d", "e", "f"]).await;
    }
    let finisher = tokio::spawn(finish_running_pods(ns.api()));
    let pods: Api<Pod> = ns.api();
    wait_in(
        &ns,
        "the leader is busy",
        Duration::from_secs(30),
        || async {
            (pods.list(&ListParams::default()).await.ok()?.items.len() >= 30).then_some(())
        },
    )
    .await;
    signal(&first.child, "-STOP");

    let second = Operator::start(&[&lease[..], &["--namespace", &elsewhere.name]].concat());
    wait_in(
        &ns,
        "the standby takes the Lease",
        Duration::from_secs(30),
        held_by(second.child.id()),
    )
    .await;
    // The frozen leader's watch has this waiting for it when it wakes.
    create_simple_goal(&ns, "late", &["a"]).await;
    finisher.abort();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = operator_made(&ns).await;

    signal(&first.child, "-CONT");
    let exited = wait_in(
        &ns,
        "the woken replica exits",
        Duration::from_secs(20),
        || std::future::ready(first.child.try_wait().unwrap()),
    )
    .await;
    let log = std::fs::read_to_string(&first.log_path).unwrap_or_default();
    assert_eq!(exited.code(), Some(1), "exit of the woken replica:\n{log}");
    assert!(
        log.contains("leadership lost"),
        "the woken replica says why it stopped:\n{log}"
    );
    assert_eq!(
        operator_made(&ns).await,
        before,
        "the woken replica changed its namespace after its Lease ran out:\n{log}"
    );
    let late = ns.api::<Goal>().get("late").await.unwrap();
    assert_eq!(
        late.status.as_ref().and_then(|s| s.observed_generation),
        Some(0),
        "the late goal was acted on (its status is the schema's default until then): {late:?}"
    );
}
