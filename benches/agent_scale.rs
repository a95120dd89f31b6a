//! Quiet in-loop agents held by one operator, side by side with a bare controller, in
//! one run on one cluster, at a growing count of agents (`OVERSEER_BENCH_AGENTS`,
//! comma-separated, default 1,000, 3,000 and 10,000). At each count, once every agent
//! runs on a kwok node made for them, this benchmark plays each pod's shim: one activity
//! report (working), then heartbeats for `WINDOW`, status writes under the shim's field
//! manager that change only `heartbeatTime`, at the shim's own period
//! (`HEARTBEAT_FLOOR`, 5 minutes). It measures the heartbeats the API server took per
//! second, the operator's API writes and reads per second, its reconciles, its CPU
//! share of a core and its RSS, beside a bare controller (in this process, on a thread
//! of its own: a kube Controller over the same Agents and pods whose reconcile does
//! nothing). Then it restarts the operator and times its first reconcile of every agent,
//! counting its writes and reads meanwhile (a quiet agent needs none), beside a new bare
//! controller's first reconcile of every agent. At the last count it also runs a window
//! at the old heartbeat of one per `loop.interval` (15 s), and restarts once more with
//! `GOALS` Goals running their first step (`OVERSEER_BENCH_GOALS`, default 1,000). The
//! figures go to a table and to docs/images/agent-scale.svg.
//! Needs the test cluster: `make bench`.

#[path = "agent_scale/chart.rs"]
mod chart;
#[path = "common/plot.rs"]
mod plot;
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
const HEARTBEAT_NOW: Duration = Duration::from_secs(300);
const HEARTBEAT_BEFORE: Duration = Duration::from_secs(15);
/// A run that has not got every agent Running by then has stalled.
const START_LIMIT: Duration = Duration::from_secs(1800);
const NODE: &str = "bench-agents";

fn counts() -> Vec<usize> {
    let counts: Vec<usize> = std::env::var("OVERSEER_BENCH_AGENTS")
        .unwrap_or_else(|_| "1000,3000,10000".into())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("OVERSEER_BENCH_AGENTS: counts, comma-separated")
        })
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] < w[1]),
        "OVERSEER_BENCH_AGENTS: growing counts, the agents of each are kept for the next"
    );
    counts
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
/// A bare controller on a thread of its own: the thread's /proc directory (for its
/// CPU), its count of reconciles, and a sender that stops it.
struct Bare {
    proc_dir: String,
    reconciles: Arc<AtomicU64>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn bare_controller(ns: &str) -> Bare {
    let ns = ns.to_string();
    let (sender, receiver) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let reconciles = Arc::new(AtomicU64::new(0));
    let counted = reconciles.clone();
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
            let run = Controller::new(agents, watcher::Config::default())
                .owns(pods, watcher::Config::default())
                .run(
                    |_, counted: Arc<AtomicU64>| async move {
                        counted.fetch_add(1, Ordering::Relaxed);
                        Ok::<_, kube::Error>(Action::await_change())
                    },
                    |_, _, _| Action::await_change(),
                    counted,
                )
                .for_each(|_| futures::future::ready(()));
            tokio::select! {
                _ = run => {}
                _ = stopped => {}
            }
        });
    });
    Bare {
        proc_dir: receiver.recv().unwrap(),
        reconciles,
        _stop: stop,
    }
}

/// A new bare controller's time to its first reconcile of `agents` agents: the floor of
/// any controller's restart (its lists, and a reconcile that does nothing).
async fn bare_restart(ns: &str, agents: usize) -> Duration {
    let started = Instant::now();
    let bare = bare_controller(ns);
    while bare.reconciles.load(Ordering::Relaxed) < agents as u64 {
        assert!(started.elapsed() < START_LIMIT, "bare restart stalled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
}

/// Creates the agents numbered in `range`.
async fn create_agents(api: &Api<Agent>, range: std::ops::Range<usize>) {
    futures::stream::iter(range)
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

/// What a restart measured: the time to the first reconcile of every agent (and every
/// goal, when there were goals), the writes and reads meanwhile, and the RSS then.
struct Restarted {
    agents: Duration,
    goals: Option<Duration>,
    writes: f64,
    reads: f64,
    rss_mib: f64,
}

/// Restarts the operator and times its first reconcile of every agent and every goal.
async fn restart(operator: &mut Operator, args: &[&str], agents: usize, goals: usize) -> Restarted {
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
            return Restarted {
                agents: agents_done,
                goals: (goals > 0).then_some(goals_done),
                writes: sum_of(&metrics, "overseer_api_writes_total{"),
                reads: sum_of(&metrics, "overseer_api_reads_total{verb=\"read\"}"),
                rss_mib: rss_mib(operator.child.id()),
            };
        }
        assert!(
            started.elapsed() < START_LIMIT,
            "restart: agents reconciled {agents_done:?}, goals {goals_done:?} after {START_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What one window of heartbeats measured.
struct Window {
    heartbeats_per_second: f64,
    writes_per_second: f64,
    reads_per_second: f64,
    reconciles: f64,
    /// API writes and reads per reconcile, from the window's own counts.
    calls_per_reconcile: f64,
    cpu: f64,
    rss_mib: f64,
    bare_cpu: f64,
}

/// Heartbeats for `WINDOW` at one per agent per `period`, and what the operator and the
/// bare controller spent meanwhile.
async fn window(
    operator: &Operator,
    bare: &Bare,
    api: &Api<Agent>,
    running: &Arc<Vec<(String, i64)>>,
    period: Duration,
    since: &str,
) -> Window {
    let before = counters(operator, &bare.proc_dir).await;
    let started = Instant::now();
    let sent = heartbeats(api, running, period, since).await;
    let seconds = started.elapsed().as_secs_f64();
    let after = counters(operator, &bare.proc_dir).await;
    let reconciles = after.reconciles - before.reconciles;
    let calls = (after.writes - before.writes) + (after.reads - before.reads);
    Window {
        heartbeats_per_second: sent as f64 / seconds,
        writes_per_second: (after.writes - before.writes) / seconds,
        reads_per_second: (after.reads - before.reads) / seconds,
        reconciles,
        calls_per_reconcile: calls / reconciles.max(1.0),
        cpu: 100.0 * (after.cpu - before.cpu) / seconds,
        rss_mib: rss_mib(operator.child.id()),
        bare_cpu: 100.0 * (after.bare_cpu - before.bare_cpu) / seconds,
    }
}

fn print_window(label: &str, w: &Window) {
    println!(
        "  {label}: heartbeats/s {:.1}, operator writes/s {:.2}, reads/s {:.2}, reconciles {:.0} ({:.2} calls each), CPU {:.1}%, RSS {:.0} MiB; bare CPU {:.1}%",
        w.heartbeats_per_second,
        w.writes_per_second,
        w.reads_per_second,
        w.reconciles,
        w.calls_per_reconcile,
        w.cpu,
        w.rss_mib,
        w.bare_cpu
    );
}

fn print_restart(r: &Restarted, bare: Duration) {
    let goals = r
        .goals
        .map(|g| format!(" and every goal {:.1} s", g.as_secs_f64()))
        .unwrap_or_default();
    println!(
        "  restart: every agent reconciled {:.1} s{goals} after the operator started (bare controller {:.1} s), with {:.0} API writes and {:.0} reads; RSS {:.0} MiB",
        r.agents.as_secs_f64(),
        bare.as_secs_f64(),
        r.writes,
        r.reads,
        r.rss_mib
    );
}

/// Grows the agents to `count` (from `from`), waits for every one to run and make its
/// first report, and returns them all.
async fn grow(api: &Api<Agent>, from: usize, count: usize) -> Arc<Vec<(String, i64)>> {
    let started = Instant::now();
    create_agents(api, from..count).await;
    let running = all_running(api, count, started).await;
    println!(
        "{count} agents Running {:.0} s after the first of {} new ones was created",
        started.elapsed().as_secs_f64(),
        count - from
    );
    let since = jiff::Timestamp::now().to_string();
    let new: Vec<(String, i64)> = running
        .iter()
        .filter(|(name, _)| name[1..].parse::<usize>().is_ok_and(|i| i >= from))
        .cloned()
        .collect();
    first_reports(api, &new, &since).await;
    // The operator judges each first report (a change); the windows hold only heartbeats.
    tokio::time::sleep(Duration::from_secs(20)).await;
    Arc::new(running)
}

#[tokio::main]
async fn main() {
    let (counts, goals) = (counts(), goals());
    println!(
        "agent_scale: {counts:?} quiet in-loop agents, windows of {WINDOW:?}; a last restart with {goals} goals"
    );
    let last = *counts.last().expect("a count of agents");
    let ns: TestNamespace = setup("bench-agents").await;
    make_room(&ns.client, last + goals).await;
    let args = ["--namespace", ns.name.as_str()];
    let mut operator = Operator::start(&args);
    let bare = bare_controller(&ns.name);
    let api: Api<Agent> = ns.api();
    let since = jiff::Timestamp::now().to_string();
    let mut rows = Vec::new();
    let mut from = 0;
    for &count in &counts {
        let running = grow(&api, from, count).await;
        from = count;
        let now = window(&operator, &bare, &api, &running, HEARTBEAT_NOW, &since).await;
        print_window("heartbeat every 5 min (now)", &now);
        if count == last {
            let before = window(&operator, &bare, &api, &running, HEARTBEAT_BEFORE, &since).await;
            print_window("heartbeat every 15 s (before)", &before);
        }
        let restarted = restart(&mut operator, &args, count, 0).await;
        let bare_restarted = bare_restart(&ns.name, count).await;
        print_restart(&restarted, bare_restarted);
        rows.push(chart::Row {
            agents: count,
            cpu: now.cpu,
            bare_cpu: now.bare_cpu,
            rss_mib: now.rss_mib,
            restart_s: restarted.agents.as_secs_f64(),
            bare_restart_s: bare_restarted.as_secs_f64(),
            restart_reads: restarted.reads,
            restart_writes: restarted.writes,
        });
    }
    let path = std::env::var("OVERSEER_BENCH_CHART").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/docs/images/agent-scale.svg").into()
    });
    std::fs::write(&path, chart::svg(&rows)).expect("write the chart");
    println!("\n{}", chart::table(&rows));
    println!("drawn in {path}");
    if goals > 0 {
        start_goals(&ns.api(), goals).await;
        let restarted = restart(&mut operator, &args, last, goals).await;
        print_restart(&restarted, bare_restart(&ns.name, last).await);
    }
    let nodes: Api<Node> = Api::all(ns.client.clone());
    let _ = nodes.delete(NODE, &DeleteParams::default()).await;
}
