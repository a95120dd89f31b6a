//! Two operator processes: only the Lease holder acts, and the standby takes over
//! within the lease duration after the holder is killed.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use crate::support::cluster::{Operator, create_simple_goal, setup, wait_in};

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
