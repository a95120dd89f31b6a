//! The leader's pod killed mid-goal: the standby takes the Lease and the goal finishes,
//! every step run by exactly one pod.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams};
use overseer::goal::{Goal, GoalPhase};

use crate::release::{agent_image, create, install, is_ready, namespace, wait_for_leader};
use crate::support::cluster::wait_in;

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn the_standby_takes_over_mid_goal_with_no_duplicate_pod() {
    let ns = namespace("failover").await;
    let release = install(&ns).await;
    let image = agent_image();
    let steps: Vec<String> = (0..3)
        .map(|i| format!("{{name: s{i}, action: 'slow: part {i}'}}"))
        .collect();
    create::<Goal>(
        &ns,
        &format!(
            "{{apiVersion: overseer.dev/v1alpha1, kind: Goal, metadata: {{name: long}},
              spec: {{defaults: {{runtime: {{name: codex, image: '{image}'}}}}, steps: [{}]}}}}",
            steps.join(", ")
        ),
    )
    .await;
    let pods: Api<Pod> = ns.api();
    wait_in(
        &ns,
        "the first step's container running",
        Duration::from_secs(90),
        || {
            let pods = pods.clone();
            async move { pods.get_opt("long-s0-a1").await.ok()?.filter(is_ready) }
        },
    )
    .await;

    // Delete the leader's pod with no grace: the object is gone at once and the
    // ReplicaSet starts a replacement. The kubelet still stops the container with
    // SIGTERM, on which the leader hands the Lease back, so the standby or the
    // replacement, whichever tries first, takes it. (A leader killed without that
    // chance, by SIGKILL, is tests/cluster/leader_election.rs: the Lease expires.)
    let killed = Instant::now();
    pods.delete(
        &release.leader,
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        },
    )
    .await
    .expect("delete the leader's pod");
    let new_leader = wait_for_leader(&ns, Some(&release.leader)).await;
    let took_over = killed.elapsed();
    let which = if release.pods.contains(&new_leader) {
        "the standby"
    } else {
        "the replacement"
    };
    println!(
        "e2e[{}]: leader {} killed; {which} {new_leader} holds the Lease {:.1}s later (lease duration 15s)",
        ns.name,
        release.leader,
        took_over.as_secs_f64()
    );

    let goals: Api<Goal> = ns.api();
    let goal = wait_in(&ns, "the goal Succeeded", Duration::from_secs(240), || {
        let goals = goals.clone();
        async move {
            let goal = goals.get("long").await.ok()?;
            (goal.status.as_ref()?.phase == Some(GoalPhase::Succeeded)).then_some(goal)
        }
    })
    .await;
    println!(
        "e2e[{}]: goal Succeeded {:.1}s after the kill",
        ns.name,
        killed.elapsed().as_secs_f64()
    );
    let status = goal.status.unwrap();
    assert!(
        status.steps.iter().all(|s| s.attempts == 1),
        "{:?}",
        status.steps
    );
    let step_pods = pods
        .list(&ListParams::default().labels("overseer.dev/goal=long"))
        .await
        .unwrap();
    let mut names: Vec<String> = step_pods
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["long-s0-a1", "long-s1-a1", "long-s2-a1"],
        "one pod per step"
    );
}
