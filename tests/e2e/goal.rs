//! A Goal whose steps run in real containers (the headless scripted CLI): a result
//! from the container's termination message, a failing step retried, and a step past
//! its timeout really killed by the kubelet.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use overseer::goal::{Goal, GoalPhase, StepPhase};

use crate::release::{address_for_pods, agent_image, create, install, namespace};
use crate::support::cluster::{create_object, wait_in};
use crate::support::git_server::GitServer;

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn steps_run_in_real_containers_with_results_retries_and_timeouts() {
    let ns = namespace("goal").await;
    install(&ns).await;
    let image = agent_image();
    let started = Instant::now();
    create::<Goal>(
        &ns,
        &format!(
            "{{apiVersion: overseer.dev/v1alpha1, kind: Goal, metadata: {{name: ship}},
              spec: {{defaults: {{runtime: {{name: codex, image: '{image}'}}, backoff: {{initial: 1s}}}},
                      steps: [{{name: parse, action: 'succeed: write the parser'}},
                              {{name: test, action: 'flaky: run the tests', maxRetries: 2}},
                              {{name: wait, action: 'hang: wait for a reply', timeout: 5s, maxRetries: 0}}]}}}}"
        ),
    )
    .await;
    let goals: Api<Goal> = ns.api();
    let goal = wait_in(
        &ns,
        "the goal Paused at its third step",
        Duration::from_secs(240),
        || {
            let goals = goals.clone();
            async move {
                let goal = goals.get("ship").await.ok()?;
                (goal.status.as_ref()?.phase == Some(GoalPhase::Paused)).then_some(goal)
            }
        },
    )
    .await;
    let status = goal.status.unwrap();
    println!(
        "e2e[{}]: 3 real steps (one retried, one timed out) -> Paused in {:.1}s",
        ns.name,
        started.elapsed().as_secs_f64()
    );
    for step in &status.steps {
        let took = match (&step.started_at, &step.finished_at) {
            (Some(s), Some(f)) => format!("{:.1}s", s.0.duration_until(f.0).as_secs_f64()),
            _ => "-".into(),
        };
        println!(
            "e2e[{}]: step {} {:?} after {} attempt(s), last attempt {took}, result {:?}",
            ns.name, step.name, step.phase, step.attempts, step.result
        );
    }
    assert_eq!(status.completed_steps, 2, "the checkpoint");
    let [parse, test, wait] = &status.steps[..] else {
        panic!("three steps: {:?}", status.steps)
    };
    assert_eq!((parse.phase, parse.attempts), (StepPhase::Succeeded, 1));
    let result = parse.result.as_deref().unwrap_or_default();
    assert!(
        result.contains("parse done on attempt 1"),
        "termination message: {result}"
    );
    assert_eq!(
        (test.phase, test.attempts),
        (StepPhase::Succeeded, 2),
        "retried once"
    );
    assert!(
        test.result
            .as_deref()
            .unwrap_or_default()
            .contains(r#"test done on attempt 2 after "step":"parse""#),
        "the earlier step's result was in the file the step read: {test:?}"
    );
    assert_eq!(wait.phase, StepPhase::TimedOut, "{wait:?}");

    // The failed attempt's container really exited 3; the timed-out one is not running.
    let pods: Api<Pod> = ns.api();
    let failed = pods
        .get("ship-s1-a1")
        .await
        .expect("the failed attempt's pod");
    let exit = failed.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .expect("terminated")
        .exit_code;
    assert_eq!(exit, 3, "the scripted CLI's exit code");
    let hung = wait_in(
        &ns,
        "the timed-out container stopped",
        Duration::from_secs(60),
        || {
            let pods = pods.clone();
            async move {
                match pods.get_opt("ship-s2-a1").await.ok()? {
                    None => Some("pod deleted".to_string()),
                    Some(pod) => {
                        let status = pod.status?;
                        let running = status
                            .container_statuses?
                            .iter()
                            .any(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()));
                        (!running).then(|| {
                            format!(
                                "phase {}, reason {}",
                                status.phase.unwrap_or_default(),
                                status.reason.unwrap_or_default()
                            )
                        })
                    }
                }
            }
        },
    )
    .await;
    println!("e2e[{}]: the step past its 5s timeout: {hung}", ns.name);
}

/// Two items of a `forEach` step run side by side in real containers, each on a branch
/// of its own cloned from the in-test git server; each lands its work on the goal's
/// branch, and the fan-in after them clones that branch and finds both.
#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn items_side_by_side_land_their_work_and_the_fan_in_finds_it_all() {
    let ns = namespace("goal-fan").await;
    install(&ns).await;
    let git = GitServer::start(address_for_pods(&ns).await).await;
    let repository = git.repository("shop", &[("README.md", "# Shop\n")]);
    let template = git.trusted_in(&ns).await;
    let image = agent_image();
    let started = Instant::now();
    create_object::<Goal>(
        &ns,
        serde_json::json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
            "metadata": {"name": "shop"},
            "spec": {
                "defaults": {"runtime": {"name": "codex", "image": image}, "role": "builder"},
                "workspace": {"git": {"url": repository, "ref": "main"}},
                "podTemplate": template,
                "steps": [
                    {"name": "part", "action": "write the part {{item}}", "forEach": ["api", "web"]},
                    {"name": "list", "action": "list the parts"}
                ]
            }
        }),
    )
    .await;
    let goals: Api<Goal> = ns.api();
    let status = wait_in(&ns, "the goal Succeeded", Duration::from_secs(240), || {
        let goals = goals.clone();
        async move {
            let status = goals.get("shop").await.ok()?.status?;
            (status.phase == Some(GoalPhase::Succeeded)).then_some(status)
        }
    })
    .await;
    println!(
        "e2e[{}]: 2 items side by side, landed, then a fan-in: Succeeded in {:.1}s",
        ns.name,
        started.elapsed().as_secs_f64()
    );
    let files = git.files("shop", "overseer/shop");
    assert!(
        ["README.md", "api.txt", "web.txt"]
            .iter()
            .all(|f| files.contains(&f.to_string())),
        "both items landed on the goal's branch: {files:?}"
    );
    assert_eq!(git.files("shop", "main"), ["README.md"], "main untouched");
    assert!(
        git.files("shop", "overseer-runs/shop/part.1-a1")
            .contains(&"api.txt".to_string()),
        "the item's own branch"
    );
    let list = status.steps[2].result.as_deref().unwrap_or_default();
    assert!(
        list.contains("api.txt web.txt"),
        "the fan-in saw both: {list}"
    );
}
