//! Goals whose steps make a graph, on the real control plane: fan-out and fan-in
//! (`after`), `forEach` items within `maxParallel`, results seen by the fan-in, and a
//! failed branch that pauses the goal while its sibling finishes.

use super::*;

/// Pods of goal `goal` alive now (not finished), by name.
async fn alive(f: &Fixture, goal: &str) -> BTreeSet<String> {
    f.pods
        .list(&ListParams::default().labels(&format!("overseer.dev/goal={goal}")))
        .await
        .unwrap()
        .into_iter()
        .filter(|p| {
            let phase = p.status.as_ref().and_then(|s| s.phase.clone());
            !matches!(phase.as_deref(), Some("Succeeded" | "Failed"))
        })
        .filter_map(|p| p.metadata.name)
        .collect()
}

/// plan; then api and web after it, and a test per package (two at a time) after it;
/// then ship after them all.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn steps_fan_out_within_max_parallel_and_the_fan_in_sees_every_result() {
    let f = Fixture::new("goal-graph").await;
    f.create(
        "web",
        json!({"defaults": {"runtime": runtime()}, "steps": [
            {"name": "plan", "action": "Plan it"},
            {"name": "api", "action": "Build the API", "after": ["plan"]},
            {"name": "test", "action": "Test {{item}}", "after": ["plan"],
             "forEach": ["billing", "auth", "search"], "maxParallel": 2},
            {"name": "ship", "action": "Ship it", "after": ["api", "test"]},
        ]}),
    )
    .await;
    f.finish("web-s0-a1", "Succeeded", "the plan").await;
    // api and two of the three items at once; the third waits for a slot.
    for pod in ["web-s1-a1", "web-s2-a1", "web-s3-a1"] {
        f.running_pod(pod).await;
    }
    assert_eq!(
        alive(&f, "web").await,
        names(&["web-s1-a1", "web-s2-a1", "web-s3-a1"]),
        "the item's maxParallel holds the third"
    );
    let item = f.running_pod("web-s2-a1").await;
    let env = item.spec.unwrap().containers[0].env.clone().unwrap();
    let value = |name: &str| env.iter().find(|e| e.name == name)?.value.clone();
    assert_eq!(value("OVERSEER_STEP").as_deref(), Some("test.1"));
    assert_eq!(value("OVERSEER_ITEM").as_deref(), Some("billing"));
    assert_eq!(value("OVERSEER_ACTION").as_deref(), Some("Test billing"));
    let running = f
        .status_where("web", "three runs at once", |s| {
            s.current_step.as_deref() == Some("api,test.1,test.2")
        })
        .await;
    assert_eq!(running.progress.as_deref(), Some("1/6"));

    f.finish("web-s2-a1", "Succeeded", "billing passes").await;
    f.running_pod("web-s4-a1").await;
    for (pod, result) in [
        ("web-s1-a1", "the API"),
        ("web-s3-a1", "auth passes"),
        ("web-s4-a1", "search passes"),
    ] {
        f.finish(pod, "Succeeded", result).await;
    }
    // The fan-in starts once every predecessor is done, and sees all their results.
    let ship = f.running_pod("web-s5-a1").await;
    let results = ship.metadata.annotations.unwrap()[RESULTS_ANNOTATION].clone();
    let results: serde_json::Value = serde_json::from_str(&results).unwrap();
    let results: BTreeSet<String> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}={}",
                r["step"].as_str().unwrap(),
                r["result"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        results,
        names(&[
            "plan=the plan",
            "api=the API",
            "test.1=billing passes",
            "test.2=auth passes",
            "test.3=search passes",
        ])
    );
    f.finish("web-s5-a1", "Succeeded", "shipped").await;
    let done = f
        .status_where("web", "Succeeded", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    assert_eq!(done.completed_steps, 6);
    assert_eq!(done.steps[4].item.as_deref(), Some("search"));
}

/// A branch out of retries pauses the goal; its sibling runs on to its end and is
/// recorded; the fan-in does not start; a resume reruns only the failed branch.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_failed_branch_pauses_the_goal_while_its_sibling_finishes() {
    let f = Fixture::new("goal-branch").await;
    f.create(
        "two",
        json!({"defaults": {"runtime": runtime(), "maxRetries": 0}, "steps": [
            {"name": "left", "action": "Build the left half"},
            {"name": "right", "action": "Build the right half", "after": []},
            {"name": "join", "action": "Join them", "after": ["left", "right"]},
        ]}),
    )
    .await;
    f.running_pod("two-s1-a1").await;
    f.finish("two-s0-a1", "Failed", "broken").await;
    f.status_where("two", "Paused by left", |s| {
        s.phase == Some(GoalPhase::Paused) && s.steps[0].phase == StepPhase::Failed
    })
    .await;
    assert!(
        alive(&f, "two").await.contains("two-s1-a1"),
        "right is not stopped"
    );
    f.finish("two-s1-a1", "Succeeded", "right done").await;
    let paused = f
        .status_where("two", "right recorded", |s| {
            s.steps[1].phase == StepPhase::Succeeded
        })
        .await;
    assert_eq!(paused.phase, Some(GoalPhase::Paused));
    assert!(f.pods.get_opt("two-s2-a1").await.unwrap().is_none());

    let patch = json!({"metadata": {"annotations": {"overseer.dev/resume": "again"}}});
    f.goals
        .patch("two", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    f.finish("two-s0-a2", "Succeeded", "fixed").await;
    f.finish("two-s2-a1", "Succeeded", "joined").await;
    f.status_where("two", "Succeeded", |s| {
        s.phase == Some(GoalPhase::Succeeded)
    })
    .await;
    assert_eq!(
        f.pod_names().await,
        names(&["two-s0-a1", "two-s0-a2", "two-s1-a1", "two-s2-a1"]),
        "right never ran again"
    );
}

/// A step's action gets its variables; one that names a variable the goal does not
/// define stops the goal with the field and the name, and starts no pod.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_steps_variables_are_replaced_and_an_unknown_one_is_named() {
    let f = Fixture::new("goal-vars").await;
    f.create(
        "gated",
        json!({"defaults": {"runtime": runtime()}, "vars": {"gates": "make check"},
               "steps": [{"name": "build", "action": "Build step {{stepIndex}} ({{step}}), then {{vars.gates}}; results in {{results}}"}]}),
    )
    .await;
    let pod = f.running_pod("gated-s0-a1").await;
    let env = pod.spec.unwrap().containers[0].env.clone().unwrap();
    let action = env
        .iter()
        .find(|e| e.name == "OVERSEER_ACTION")
        .and_then(|e| e.value.clone());
    assert_eq!(
        action.as_deref(),
        Some("Build step 0 (build), then make check; results in /overseer/results/results.json")
    );

    f.create(
        "ungated",
        json!({"defaults": {"runtime": runtime()},
               "steps": [{"name": "build", "action": "Build, then {{vars.gates}}"}]}),
    )
    .await;
    let stuck = f
        .status_where("ungated", "Progressing False InvalidSpec", |s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Progressing" && c.reason == "InvalidSpec")
        })
        .await;
    let message = &stuck
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap()
        .message;
    assert!(
        message.contains("spec.steps[0].action: the variable {{vars.gates}} is not defined"),
        "{message}"
    );
    assert!(
        f.pods.get_opt("ungated-s0-a1").await.unwrap().is_none(),
        "no pod for an action that cannot be told"
    );
}
