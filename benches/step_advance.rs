//! Step-advance latency on the real control plane: from a step pod's status turning
//! Succeeded (written by this benchmark, as a kubelet would) to the next step pod
//! appearing in a watch. Needs the test cluster: `make bench` brings it up.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use overseer::goal::Goal;
use serde_json::json;
use support::cluster::{Operator, setup};

/// Two goals of 51 steps: 100 transitions (a goal holds at most 100 steps).
const GOALS: usize = 2;
const STEPS: usize = 51;

type PodEvents = BoxStream<'static, Result<Pod, watcher::Error>>;

#[tokio::main]
async fn main() {
    let ns = setup("bench-advance").await;
    let operator = Operator::start(&["--namespace", &ns.name]);
    let goals: Api<Goal> = ns.api();
    let pods: Api<Pod> = ns.api();
    let mut created: PodEvents = watcher(pods.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let steps: Vec<_> = (0..STEPS)
        .map(|i| json!({"name": format!("s{i}"), "action": "Implement it"}))
        .collect();
    let mut latencies = Vec::new();
    for g in 0..GOALS {
        let name = format!("bench{g}");
        let goal: Goal = serde_json::from_value(json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": name},
            "spec": {"defaults": {"runtime": {"name": "codex", "image": "example.com/codex:1"}}, "steps": steps}
        }))
        .unwrap();
        goals.create(&PostParams::default(), &goal).await.unwrap();
        run_goal(&pods, &mut created, &name, &mut latencies).await;
    }
    // The operator's own share: pod seen Succeeded → next pod created, inside one reconcile.
    if let Some(metrics) = operator.metrics().await {
        let value = |name: &str| -> f64 {
            metrics
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().last()?.parse().ok())
                .unwrap_or(0.0)
        };
        let (sum, count) = (
            value("overseer_goal_step_advance_seconds_sum"),
            value("overseer_goal_step_advance_seconds_count"),
        );
        println!(
            "inside the operator: {count} advances, mean {:.1} ms",
            1000.0 * sum / count.max(1.0)
        );
    }
    drop(operator);
    report(latencies);
}

/// Finishes each step pod of `goal` as it appears; records succeeded → next created.
async fn run_goal(
    pods: &Api<Pod>,
    created: &mut PodEvents,
    goal: &str,
    latencies: &mut Vec<Duration>,
) {
    let mut succeeded_at: Option<Instant> = None;
    for step in 0..STEPS {
        let name = format!("{goal}-s{step}-a1");
        loop {
            let pod = tokio::time::timeout(Duration::from_secs(30), created.next())
                .await
                .expect("next step pod within 30s")
                .expect("watch open")
                .expect("watch event");
            if pod.metadata.name.as_deref() == Some(name.as_str()) {
                break;
            }
        }
        if let Some(at) = succeeded_at.take() {
            latencies.push(at.elapsed());
        }
        let status = json!({"status": {"phase": "Succeeded", "containerStatuses": [{
            "name": "agent", "image": "example.com/codex:1", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "message": format!("result {step}")}}
        }]}});
        succeeded_at = Some(Instant::now());
        pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
    }
}

fn report(mut latencies: Vec<Duration>) {
    latencies.sort();
    let percentile =
        |p: f64| latencies[((latencies.len() as f64 * p).ceil() as usize).saturating_sub(1)];
    println!(
        "step advance over {} transitions: p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        percentile(0.50),
        percentile(0.90),
        percentile(0.99),
        latencies.last().unwrap()
    );
}
