//! Goal fan-out on the real control plane: the same 20 steps, each taking the same
//! time, run once in sequence and once as a fan-out (`forEach`, `maxParallel: 5`),
//! side by side in one run. The benchmark plays the kubelet: each step pod it sees
//! is finished `WORK` after it appears. Needs the test cluster: `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use overseer::goal::{Goal, GoalPhase};
use serde_json::json;
use support::cluster::{Operator, setup};

const STEPS: usize = 20;
const MAX_PARALLEL: usize = 5;
/// How long each step's agent works.
const WORK: Duration = Duration::from_secs(1);

#[tokio::main]
async fn main() {
    let ns = setup("bench-fanout").await;
    let _operator = Operator::start(&["--namespace", &ns.name]);
    let goals: Api<Goal> = ns.api();
    let pods: Api<Pod> = ns.api();
    let kubelet = tokio::spawn(play_kubelet(pods.clone()));
    let sequence: Vec<_> = (0..STEPS)
        .map(|i| json!({"name": format!("s{i}"), "action": "Implement it"}))
        .collect();
    let items: Vec<String> = (0..STEPS).map(|i| format!("part{i}")).collect();
    let fan_out = vec![json!({
        "name": "part", "action": "Implement {{item}}", "forEach": items,
    })];
    let in_sequence = run(&goals, "in-sequence", sequence, 1).await;
    let fanned = run(&goals, "fan-out", fan_out, MAX_PARALLEL).await;
    kubelet.abort();
    let ideal = |waves: usize| WORK * waves as u32;
    println!(
        "{STEPS} steps of {WORK:?} each: in sequence {:.1} s (ideal {:.0} s), fan-out with \
         maxParallel {MAX_PARALLEL} {:.1} s (ideal {:.0} s), {:.1}x faster; most pods at once {}",
        in_sequence.wall.as_secs_f64(),
        ideal(STEPS).as_secs_f64(),
        fanned.wall.as_secs_f64(),
        ideal(STEPS.div_ceil(MAX_PARALLEL)).as_secs_f64(),
        in_sequence.wall.as_secs_f64() / fanned.wall.as_secs_f64(),
        fanned.most_at_once,
    );
    assert!(
        fanned.most_at_once <= MAX_PARALLEL,
        "maxParallel held: {}",
        fanned.most_at_once
    );
}

struct Outcome {
    wall: Duration,
    most_at_once: usize,
}

/// Runs a goal of `steps` to its end; the most step pods alive at once.
async fn run(
    goals: &Api<Goal>,
    name: &str,
    steps: Vec<serde_json::Value>,
    max_parallel: usize,
) -> Outcome {
    let goal: Goal = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": name},
        "spec": {
            "defaults": {"runtime": {"name": "codex", "image": "example.com/codex:1"}},
            "maxParallel": max_parallel, "steps": steps,
        }
    }))
    .unwrap();
    let started = Instant::now();
    goals.create(&PostParams::default(), &goal).await.unwrap();
    let mut most_at_once = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let goal = goals.get(name).await.unwrap();
        let status = goal.status.unwrap_or_default();
        let running = status
            .steps
            .iter()
            .filter(|s| s.phase == overseer::goal::StepPhase::Running)
            .count();
        most_at_once = most_at_once.max(running);
        if status.phase == Some(GoalPhase::Succeeded) {
            // To the poll: within 100 ms.
            return Outcome {
                wall: started.elapsed(),
                most_at_once,
            };
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "goal {name} did not finish: {:?}",
            status.phase
        );
    }
}

/// Finishes every step pod `WORK` after it first shows.
async fn play_kubelet(pods: Api<Pod>) {
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let mut events = watcher(pods.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    while let Some(Ok(pod)) = events.next().await {
        let name = pod.metadata.name.clone().unwrap_or_default();
        if !seen.lock().unwrap().insert(name.clone()) {
            continue;
        }
        let pods = pods.clone();
        tokio::spawn(async move {
            tokio::time::sleep(WORK).await;
            let status = json!({"status": {"phase": "Succeeded", "containerStatuses": [{
                "name": "agent", "image": "example.com/codex:1", "imageID": "", "ready": false,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "message": "done"}}
            }]}});
            let _ = pods
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await;
        });
    }
}
