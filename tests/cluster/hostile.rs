//! Objects that once crashed the operator: schema-valid giant durations. The operator
//! must stay up, report them, and go on with everyone else's objects.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use overseer::agent::Agent;
use overseer::goal::{Goal, StepPhase};
use serde_json::json;

use crate::support::cluster::{create_agent, create_simple_goal, operator, setup, wait_in};

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn giant_durations_neither_crash_the_operator_nor_stall_others() {
    let ns = setup("hostile-durations").await;
    let mut operator = operator(&ns);
    let goal: Goal = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": "giant"},
        "spec": {
            "defaults": {
                "runtime": {"name": "codex", "mode": "headless", "image": "example.com/codex:1"},
                "timeout": "99999999999h",
                "backoff": {"initial": "99999999999999999999h", "max": "99999999999999999999h"}
            },
            "steps": [{"name": "forever", "action": "Implement forever"}]
        }
    }))
    .unwrap();
    ns.api::<Goal>()
        .create(&PostParams::default(), &goal)
        .await
        .expect("the schema accepts a giant timeout");
    create_agent(
        &ns,
        "giant",
        json!({"loop": {"enabled": true, "idleAfter": "99999999999999999999h", "interval": "99999999999h"}}),
    )
    .await;
    // The giant goal's step runs and is checked against its deadline (the reconcile
    // that used to panic at `started + timeout`).
    let goals: Api<Goal> = ns.api();
    wait_in(&ns, "the giant goal's step Running", WAIT, || async {
        let status = goals.get("giant").await.ok()?.status?;
        (status.steps.first()?.phase == StepPhase::Running).then_some(())
    })
    .await;
    let agents: Api<Agent> = ns.api();
    wait_in(&ns, "the giant agent's pod made", WAIT, || async {
        agents.get("giant").await.ok()?.status?.pod_name
    })
    .await;
    // Everyone else goes on.
    create_simple_goal(&ns, "after", &["next"]).await;
    let pods: Api<Pod> = ns.api();
    wait_in(&ns, "the next goal's first pod", WAIT, || async {
        pods.get_opt("after-s0-a1").await.ok()?
    })
    .await;
    assert!(
        operator.child.try_wait().unwrap().is_none(),
        "the operator exited: see {}",
        operator.log_path.display()
    );
}
