//! Quiet in-loop agents held by one operator, side by side with a bare controller, in
//! one run on one cluster. `AGENTS` in-loop Agents (`OVERSEER_BENCH_AGENTS`, default
//! 10,000) run on a kwok node made for them; once all are Running, this benchmark plays
//! each pod's shim: one activity report (working), then heartbeats, status writes under
//! the shim's field manager that change only `heartbeatTime`. Two windows of `WINDOW`:
//! heartbeats at the shim's own period (`HEARTBEAT_FLOOR`, 5 minutes) and at the
//! `loop.interval` of 15 s that the shim used before. For each window it prints the
//! heartbeats the API server took per second, the operator's API writes and reads per
//! second, its reconciles, its CPU share of a core and its RSS, beside a bare controller
//! (in this process, on a thread of its own: a kube Controller over the same Agents and
//! pods whose reconcile does nothing). Last it starts `GOALS` Goals
//! (`OVERSEER_BENCH_GOALS`, default 1,000) whose first step runs on, restarts the
//! operator and times its first reconcile of every agent and every goal, counting its
//! writes meanwhile (a quiet agent or a goal whose step runs on needs none).
//! Needs the test cluster: `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use overseer::agent::{Agent, AgentPhase};
use overseer::goal::{Goal, GoalPhase};
use serde_json::json;
use support::cluster::{Operator, TestNamespace, client, setup};
use support::measure::{cpu_seconds, cpu_seconds_of, create_goals, rss_mib, sum_of};
use tokio::sync::Semaphore;

/// Writes in flight at once, as the shims of many pods would send them.
const IN_FLIGHT: usize = 64;
/// Each measured window.
const WINDOW: Duration = Duration::from_secs(60);
/// The shim's heartbeat now, and the one it had before (one per `loop.interval`).
const HEARTBEATS: [(&str, Duration); 2] = [
    ("every 5 min (now)", Duration::from_secs(300)),
    ("every 15 s (before)", Duration::from_secs(15)),
];
/// A run that has not got every agent Running by then has stalled.
const START_LIMIT: Duration = Duration::from_secs(1800);
const NODE: &str = "bench-agents";

fn agents() -> usize {
    std::env::var("OVERSEER_BENCH_AGENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

fn goals() -> usize {
    std::env::var("OVERSEER_BENCH_GOALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000)
}

fn agent_name(i: usize) -> String {
    format!("a{i}")
}

/// A kwok node with room for every agent pod (the cluster's two hold 110 each).
async fn make_room(client: &Client, agents: usize) {
    let nodes: Api<Node> = Api::all(client.clone());
    let _ = nodes.delete(NODE, &DeleteParams::default()).await;
    let room = (agents + 100).to_string();
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "annotations": {"kwok.x-k8s.io/node": "fake"},
                     "labels": {"type": "kwok", "kubernetes.io/hostname": NODE}},
        "status": {
            "allocatable": {"cpu": "100000", "memory": "100000Gi", "pods": room},
            "capacity": {"cpu": "100000", "memory": "100000Gi", "pods": room},
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]
        }
    }))
    .unwrap();
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("create the bench's kwok node");
}

/// The baseline: a controller over the same Agents and their pods whose reconcile
/// does nothing, on a thread of its own so that its CPU time can be read.
/// Returns that thread's /proc directory.
fn bare_controller(ns: &str) -> String {
    let ns = ns.to_string();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let thread = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
        sender.send(format!("/proc/{}", thread.display())).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let client = client().await;
            let agents: Api<Agent> = Api::namespaced(client.clone(), &ns);
            let pods: Api<Pod> = Api::namespaced(client, &ns);
            Controller::new(agents, watcher::Config::default())
                .owns(pods, watcher::Config::default())
                .run(
                    |_, _| async { Ok::<_, kube::Error>(Action::await_change()) },
                    |_, _, _| Action::await_change(),
                    Arc::new(()),
                )
                .for_each(|_| futures::future::ready(()))
                .await;
        });
    });
    receiver.recv().unwrap()
}

async fn create_agents(api: &Api<Agent>, agents: usize) {
    futures::stream::iter(0..agents)
        .for_each_concurrent(32, |i| {
            let api = api.clone();
            let agent: Agent = serde_json::from_value(json!({
                "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
                "metadata": {"name": agent_name(i)},
                "spec": {"runtime": {"name": "codex", "image": "example.com/codex:1"},
                         "loop": {"enabled": true}}
            }))
            .unwrap();
            async move {
                api.create(&PostParams::default(), &agent)
                    .await
                    .expect("create agent");
            }
        })
        .await;
}

/// Creates `goals` Goals of 3 steps and waits until each runs its first step (kwok
/// keeps a step pod Running).
async fn start_goals(api: &Api<Goal>, goals: usize) {
    let started = Instant::now();
    create_goals(api, "g", goals, 3).await;
    loop {
        let list = api.list(&ListParams::default()).await.expect("list goals");
        let running = list
            .iter()
            .filter(|g| g.status.as_ref().and_then(|s| s.phase) == Some(GoalPhase::Running))
            .count();
        if running == goals {
            println!(
                "{goals} goals running their first step {:.0} s after the first was created",
                started.elapsed().as_secs_f64()
            );
            return;
        }
        assert!(
            started.elapsed() < START_LIMIT,
            "stalled: {running} of {goals} goals Running after {START_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// Waits until every agent is Running; returns each one's attempt.
async fn all_running(api: &Api<Agent>, agents: usize, since: Instant) -> Vec<(String, i64)> {
    loop {
        let list = api.list(&ListParams::default()).await.expect("list agents");
        let running: Vec<(String, i64)> = list
            .iter()
            .filter_map(|a| {
                let status = a.status.as_ref()?;
                let attempt = status.attempt?;
                (status.phase == Some(AgentPhase::Running)).then(|| (a.name_any(), attempt))
            })
            .collect();
        if running.len() == agents {
            return running;
        }
        assert!(
            since.elapsed() < START_LIMIT,
            "stalled: {} of {agents} agents Running after {START_LIMIT:?}",
            running.len()
        );
        println!(
            "  {:>4.0} s: {} of {agents} agents Running",
            since.elapsed().as_secs_f64(),
            running.len()
        );
        tokio::time::sleep(Duration::from_secs(15)).await;
    }
}

/// One status write as the shim makes it: its activity, `working` since `since`.
async fn shim_report(api: &Api<Agent>, name: &str, attempt: i64, since: &str) {
    let now = jiff::Timestamp::now().to_string();
    let status = json!({"activity": {
        "state": "working", "since": since, "lastActivityTime": since,
        "heartbeatTime": now, "attempt": attempt
    }});
    if let Err(error) =
        overseer::api::apply_status(api, name, overseer::api::SHIM_MANAGER, &status).await
    {
        panic!("shim report of {name}: {error}");
    }
}

/// Every agent's first report, as its shim makes it on start.
async fn first_reports(api: &Api<Agent>, running: &[(String, i64)], since: &str) {
    futures::stream::iter(running)
        .for_each_concurrent(IN_FLIGHT, |(name, attempt)| {
            shim_report(api, name, *attempt, since)
        })
        .await;
}

/// Heartbeats for `WINDOW`, each agent one per `period`, spread evenly; returns how
/// many the API server took.
async fn heartbeats(
    api: &Api<Agent>,
    running: &Arc<Vec<(String, i64)>>,
    period: Duration,
    since: &str,
) -> u64 {
    let per_tick = running.len() as f64 / period.as_secs_f64() / 10.0;
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let (mut owed, mut next) = (0.0, 0usize);
    while started.elapsed() < WINDOW {
        tick.tick().await;
        owed += per_tick;
        while owed >= 1.0 && started.elapsed() < WINDOW {
            owed -= 1.0;
            let slot = slots.clone().acquire_owned().await.unwrap();
            let (api, running, done) = (api.clone(), running.clone(), done.clone());
            let since = since.to_string();
            let (name, attempt) = running[next % running.len()].clone();
            next += 1;
            tokio::spawn(async move {
                shim_report(&api, &name, attempt, &since).await;
                done.fetch_add(1, Ordering::Relaxed);
                drop(slot);
            });
        }
    }
    let _ = slots.acquire_many(IN_FLIGHT as u32).await;
    done.load(Ordering::Relaxed)
}

/// The operator's counters that a window compares.
struct Counters {
    writes: f64,
    reads: f64,
    reconciles: f64,
    cpu: f64,
    bare_cpu: f64,
}

async fn counters(operator: &Operator, bare: &str) -> Counters {
    let metrics = operator.metrics().await.expect("the operator's /metrics");
    Counters {
        writes: sum_of(&metrics, "overseer_api_writes_total{"),
        reads: sum_of(&metrics, "overseer_api_reads_total{verb=\"read\"}"),
        reconciles: sum_of(
            &metrics,
            "overseer_reconciliations_total{controller=\"agent\"}",
        ),
        cpu: cpu_seconds(operator.child.id()),
        bare_cpu: cpu_seconds_of(bare),
    }
}

/// Restarts the operator and times its first reconcile of every agent and every goal.
async fn restart(operator: &mut Operator, args: &[&str], agents: usize, goals: usize) {
    operator.child.kill().unwrap();
    operator.child.wait().unwrap();
    let started = Instant::now();
    *operator = Operator::start(args);
    // A reconcile that found a cache not yet listed decided nothing: not counted.
    let decided = |metrics: &str, controller: &str| {
        sum_of(
            metrics,
            &format!("overseer_reconciliations_total{{controller=\"{controller}\"}}"),
        ) - sum_of(
            metrics,
            &format!("overseer_reconciles_deferred_total{{controller=\"{controller}\"}}"),
        )
    };
    let (mut agents_done, mut goals_done) = (None, None);
    loop {
        let metrics = operator.metrics().await.unwrap_or_default();
        if agents_done.is_none() && decided(&metrics, "agent") >= agents as f64 {
            agents_done = Some(started.elapsed());
        }
        if goals_done.is_none() && decided(&metrics, "goal") >= goals as f64 {
            goals_done = Some(started.elapsed());
        }
        if let (Some(agents_done), Some(goals_done)) = (agents_done, goals_done) {
            let writes = sum_of(&metrics, "overseer_api_writes_total{");
            let reads = sum_of(&metrics, "overseer_api_reads_total{verb=\"read\"}");
            println!(
                "restart: every agent reconciled {:.1} s and every goal {:.1} s after the operator started, with {writes:.0} API writes and {reads:.0} reads; RSS {:.0} MiB",
                agents_done.as_secs_f64(),
                goals_done.as_secs_f64(),
                rss_mib(operator.child.id())
            );
            return;
        }
        assert!(
            started.elapsed() < START_LIMIT,
            "restart: agents reconciled {agents_done:?}, goals {goals_done:?} after {START_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::main]
async fn main() {
    let (agents, goals) = (agents(), goals());
    println!(
        "agent_scale: {agents} quiet in-loop agents, windows of {WINDOW:?}; restart with {goals} goals"
    );
    let ns: TestNamespace = setup("bench-agents").await;
    make_room(&ns.client, agents + goals).await;
    let args = ["--namespace", ns.name.as_str()];
    let mut operator = Operator::start(&args);
    let bare = bare_controller(&ns.name);
    let api: Api<Agent> = ns.api();
    let started = Instant::now();
    create_agents(&api, agents).await;
    let running = Arc::new(all_running(&api, agents, started).await);
    println!(
        "{agents} agents Running {:.0} s after the first was created",
        started.elapsed().as_secs_f64()
    );
    let since = jiff::Timestamp::now().to_string();
    first_reports(&api, &running, &since).await;
    // The operator judges each first report (a change); the windows hold only heartbeats.
    tokio::time::sleep(Duration::from_secs(20)).await;
    println!(
        "{:<20} {:>12} {:>10} {:>10} {:>11} {:>16} {:>10} {:>9} {:>10}",
        "heartbeat",
        "heartbeats/s",
        "writes/s",
        "reads/s",
        "reconciles",
        "calls/reconcile",
        "CPU",
        "RSS MiB",
        "bare CPU"
    );
    for (label, period) in HEARTBEATS {
        let before = counters(&operator, &bare).await;
        let window = Instant::now();
        let sent = heartbeats(&api, &running, period, &since).await;
        let seconds = window.elapsed().as_secs_f64();
        let after = counters(&operator, &bare).await;
        let (writes, reads) = (after.writes - before.writes, after.reads - before.reads);
        let reconciles = after.reconciles - before.reconciles;
        println!(
            "{label:<20} {:>12.1} {:>10.2} {:>10.2} {reconciles:>11.0} {:>16.2} {:>9.1}% {:>9.0} {:>9.1}%",
            sent as f64 / seconds,
            writes / seconds,
            reads / seconds,
            (writes + reads) / reconciles.max(1.0),
            100.0 * (after.cpu - before.cpu) / seconds,
            rss_mib(operator.child.id()),
            100.0 * (after.bare_cpu - before.bare_cpu) / seconds,
        );
    }
    start_goals(&ns.api(), goals).await;
    restart(&mut operator, &args, agents, goals).await;
    let nodes: Api<Node> = Api::all(ns.client.clone());
    let _ = nodes.delete(NODE, &DeleteParams::default()).await;
}
