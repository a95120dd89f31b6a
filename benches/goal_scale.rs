//! Step advance at scale, side by side with a bare controller, in one run on one
//! cluster. First a bare controller (in this process: a watch that creates a chain's
//! next pod as soon as it sees the previous one Succeeded) runs `GOALS` chains of
//! `STEPS` pods at once; then the operator runs `GOALS` Goals of `STEPS` steps at once.
//! This benchmark plays the kubelet for both: it writes each pod Succeeded as soon as
//! it appears, and times that write to the chain's next pod appearing in its watch.
//! Prints p50, p99 and transitions/s of each, and the operator's ratio to the bare
//! controller. This for each count of `OVERSEER_BENCH_GOALS` (comma-separated; default
//! 100,300,1000,3000), drawn against the count in docs/images/goal-scale.svg (or
//! `OVERSEER_BENCH_CHART`). Then tenant fairness: one namespace's single goal, alone and
//! beside another namespace's 1,000 goals (or the largest count below that).
//! `OVERSEER_BENCH_CONCURRENCY` sets the operator's `--concurrency` (default: its own).
//! Needs the test cluster: `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "goal_scale/chart.rs"]
mod chart;
#[path = "common/plot.rs"]
mod plot;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use overseer::goal::Goal;
use serde_json::json;
use support::cluster::{Operator, TestNamespace, setup};
use support::measure::{
    api_server_reads, api_server_write_seconds, api_server_writes, cpu_seconds, create_goals,
    grown, sum_of,
};
use tokio::sync::Semaphore;

const STEPS: usize = 3;
/// Writes in flight at once, for the kubelet this benchmark plays and for the bare
/// controller alike.
const IN_FLIGHT: usize = 64;
/// The writes of this benchmark itself and of the cluster's other parts, as the API
/// server counts them: the kubelet it plays (pod status), the scheduler's bindings,
/// every component's leases and the Goals it creates.
const NOT_THE_CONTROLLERS: [&str; 4] = ["pods/status ", "pods/binding ", "leases ", "goals POST"];
/// The shortest timer a goal waits on without an error: a pod created and not yet seen
/// (`fresh::CACHE_LAG_LIMIT`), a name taken. An advance slower than this may have been
/// caught by a timer rather than by its pod's watch event.
const SHORTEST_TIMER: Duration = overseer::kubernetes::fresh::CACHE_LAG_LIMIT;
/// A run that has not finished by then has stalled.
const RUN_LIMIT: Duration = Duration::from_secs(900);

/// The counts of concurrent goals measured, smallest first.
fn counts() -> Vec<usize> {
    let listed =
        std::env::var("OVERSEER_BENCH_GOALS").unwrap_or_else(|_| "100,300,1000,3000".into());
    let mut counts: Vec<usize> = listed
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .unwrap_or_else(|_| panic!("OVERSEER_BENCH_GOALS: {n:?} is not a count"))
        })
        .collect();
    counts.sort();
    counts
}

/// `chain`'s pod of `step`, named as the operator names a Goal's step pods.
fn pod_name(chain: &str, step: usize) -> String {
    format!("{chain}-s{step}-a1")
}

/// The chain and step of a pod named by `pod_name`.
fn chain_step(pod: &str) -> Option<(&str, usize)> {
    let (rest, _attempt) = pod.rsplit_once("-a")?;
    let (chain, step) = rest.rsplit_once("-s")?;
    Some((chain, step.parse().ok()?))
}

/// What one run measured.
struct Measured {
    latencies: Vec<Duration>,
    /// From the first Succeeded write to the last transition.
    window: Duration,
}

/// Writes the API server served, and the seconds it spent on them, by `resource VERB`.
struct Writes {
    count: BTreeMap<String, f64>,
    seconds: BTreeMap<String, f64>,
    /// The gets and lists of every client meanwhile (the API server does not say whose).
    reads: BTreeMap<String, f64>,
}

async fn writes_so_far(client: &kube::Client) -> Writes {
    Writes {
        count: api_server_writes(client).await,
        seconds: api_server_write_seconds(client).await,
        reads: api_server_reads(client).await,
    }
}

/// The controller's writes the API server served in a run, by `resource VERB`.
fn controller_writes(before: &Writes, after: &Writes) -> Writes {
    let theirs = |writes: &mut BTreeMap<String, f64>| {
        writes.retain(|key, _| {
            !NOT_THE_CONTROLLERS
                .iter()
                .any(|other| key.starts_with(other))
        })
    };
    let (mut count, mut seconds) = (
        grown(&before.count, &after.count),
        grown(&before.seconds, &after.seconds),
    );
    theirs(&mut count);
    theirs(&mut seconds);
    let reads = grown(&before.reads, &after.reads);
    Writes {
        count,
        seconds,
        reads,
    }
}

/// The API server's mean time per write of each kind: which of a controller's writes
/// cost it most (the operator's status applies against the bare controller's pods).
fn time_per_write(writes: &Writes) -> String {
    let each: Vec<String> = (writes.count.iter())
        .filter(|(_, n)| **n > 0.0)
        .map(|(key, n)| {
            let seconds = writes.seconds.get(key).copied().unwrap_or_default();
            format!("{key} {:.1} ms", 1000.0 * seconds / n)
        })
        .collect();
    each.join(", ")
}

/// `writes` with the Events created counted as the Event objects in `ns` show them, by
/// the controller that reported them: the API server's count of Event creates does not
/// say whose they were (the scheduler reports one per pod it binds).
async fn events_by_reporter(ns: &TestNamespace, writes: &mut BTreeMap<String, f64>) {
    use k8s_openapi::api::events::v1::Event;
    let Some(created) = writes.remove("events POST") else {
        return;
    };
    let events: Api<Event> = ns.api();
    let listed = events
        .list(&Default::default())
        .await
        .expect("list the run's Events");
    let mut by_reporter = BTreeMap::new();
    for event in &listed.items {
        let reporter = event.reporting_controller.clone().unwrap_or_default();
        *by_reporter.entry(reporter).or_insert(0.0) += 1.0;
    }
    let ours = by_reporter.remove("overseer-controller").unwrap_or(0.0);
    writes.insert("events POST".into(), ours);
    println!(
        "Events created in the run: {created:.0} by the API server's count, {ours:.0} the operator's, others by reporter {by_reporter:?}"
    );
}

/// Prints `figure` of the API server's counts in the bare controller's run and then in
/// the operator's.
fn both(what: &str, bare: &Writes, ours: &Writes, figure: impl Fn(&Writes) -> String) {
    println!("API server {what}, bare controller's run: {}", figure(bare));
    println!("API server {what}, operator's run: {}", figure(ours));
}

/// `writes` per goal, each kind and in all.
fn per_goal(writes: &BTreeMap<String, f64>, goals: usize) -> String {
    let total: f64 = writes.values().sum();
    let each: Vec<String> = writes
        .iter()
        .map(|(key, n)| format!("{key} {:.2}", n / goals as f64))
        .collect();
    format!("{:.2} per goal ({})", total / goals as f64, each.join(", "))
}

impl Measured {
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        sorted[((sorted.len() as f64 * p).ceil() as usize).saturating_sub(1)]
    }

    fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.window.as_secs_f64()
    }

    fn summary(&self) -> chart::Summary {
        chart::Summary {
            per_second: self.per_second(),
            p50_ms: ms(self.percentile(0.50)),
            p99_ms: ms(self.percentile(0.99)),
            max_ms: ms(self.percentile(1.0)),
        }
    }

    fn line(&self, who: &str) -> String {
        let slow = self
            .latencies
            .iter()
            .filter(|l| **l >= SHORTEST_TIMER)
            .count();
        format!(
            "{who:<16} p50 {:>7.1} ms, p99 {:>7.1} ms, max {:>7.1} ms, {:>6.1} transitions/s, {slow} advances of {:?} or more (the shortest timer)",
            ms(self.percentile(0.50)),
            ms(self.percentile(0.99)),
            ms(self.percentile(1.0)),
            self.per_second(),
            SHORTEST_TIMER
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Plays the kubelet in `pods`: writes each pod Succeeded as soon as it appears, and
/// times each chain's next pod from that write. Returns after `goals` chains of
/// `STEPS` pods have all appeared.
async fn play_kubelet(pods: Api<Pod>, goals: usize) -> Measured {
    let expected = goals * (STEPS - 1);
    let finished_at: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let writes = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut seen = HashSet::new();
    let mut latencies = Vec::with_capacity(expected);
    let mut last = Instant::now();
    let mut events = watcher(pods.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let deadline = Instant::now() + RUN_LIMIT;
    while latencies.len() < expected {
        let pod = tokio::time::timeout_at(deadline.into(), events.try_next())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "stalled: {} of {expected} transitions in {RUN_LIMIT:?}",
                    latencies.len()
                )
            })
            .expect("pod watch")
            .expect("pod watch open");
        let name = pod.metadata.name.clone().unwrap_or_default();
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some((chain, step)) = chain_step(&name) else {
            continue;
        };
        if step > 0 {
            let previous = finished_at.lock().unwrap()[&pod_name(chain, step - 1)];
            last = Instant::now();
            latencies.push(last - previous);
        }
        let (pods, finished_at, writes) = (pods.clone(), finished_at.clone(), writes.clone());
        tokio::spawn(async move {
            let _slot = writes.acquire().await.unwrap();
            let status = json!({"status": {"phase": "Succeeded", "containerStatuses": [{
                "name": "agent", "image": "example.com/codex:1", "imageID": "", "ready": false,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "message": "done"}}
            }]}});
            finished_at
                .lock()
                .unwrap()
                .insert(name.clone(), Instant::now());
            pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .expect("finish pod");
        });
    }
    let first = finished_at.lock().unwrap().values().min().copied().unwrap();
    Measured {
        latencies,
        window: last - first,
    }
}

fn chain_pod(chain: &str, step: usize) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod_name(chain, step), "labels": {"bench.overseer.dev/chain": chain}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "agent", "image": "example.com/codex:1"}]}
    }))
    .unwrap()
}

/// The baseline: a watch that creates a chain's next pod as soon as it sees the
/// previous one Succeeded. Nothing more: no status, no checks, no retries.
async fn bare_controller(pods: Api<Pod>) {
    let writes = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut created = HashSet::new();
    let mut events = watcher(pods.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    while let Some(Ok(pod)) = events.next().await {
        let succeeded = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded");
        let name = pod.metadata.name.unwrap_or_default();
        let Some((chain, step)) = chain_step(&name).filter(|_| succeeded) else {
            continue;
        };
        if step + 1 == STEPS || !created.insert(pod_name(chain, step + 1)) {
            continue;
        }
        let (pods, writes, next) = (pods.clone(), writes.clone(), chain_pod(chain, step + 1));
        tokio::spawn(async move {
            let _slot = writes.acquire().await.unwrap();
            pods.create(&PostParams::default(), &next)
                .await
                .expect("create next pod");
        });
    }
}

async fn run_bare(ns: &TestNamespace, goals: usize) -> (Measured, Writes) {
    let before = writes_so_far(&ns.client).await;
    let pods: Api<Pod> = ns.api();
    let controller = tokio::spawn(bare_controller(pods.clone()));
    let kubelet = tokio::spawn(play_kubelet(pods.clone(), goals));
    futures::stream::iter(0..goals)
        .for_each_concurrent(32, |g| {
            let pods = pods.clone();
            async move {
                pods.create(&PostParams::default(), &chain_pod(&format!("c{g}"), 0))
                    .await
                    .expect("create first pod");
            }
        })
        .await;
    let measured = kubelet.await.unwrap();
    controller.abort();
    let mut writes = controller_writes(&before, &writes_so_far(&ns.client).await);
    // The bare controller writes no Events; the scheduler's are not its.
    writes.count.remove("events POST");
    (measured, writes)
}

async fn run_operator(ns: &TestNamespace, goals: usize) -> (Measured, Option<String>, Writes) {
    let before = writes_so_far(&ns.client).await;
    let mut args = vec!["--namespace".to_string(), ns.name.clone()];
    if let Ok(concurrency) = std::env::var("OVERSEER_BENCH_CONCURRENCY") {
        args.extend(["--concurrency".to_string(), concurrency]);
    }
    let operator = Operator::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let kubelet = tokio::spawn(play_kubelet(ns.api(), goals));
    let api: Api<Goal> = ns.api();
    create_goals(&api, "c", goals, STEPS).await;
    let started = Instant::now();
    let cpu_before = cpu_seconds(operator.child.id());
    let measured = kubelet.await.unwrap();
    let cpu = cpu_seconds(operator.child.id()) - cpu_before;
    println!(
        "operator process: {:.0}% of a core over the run ({cpu:.1} s of CPU in {:.1} s)",
        100.0 * cpu / started.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    // Events are published behind the reconciles (src/kubernetes/events.rs): the writes are
    // counted once they have all gone out, when the count stops growing.
    let mut metrics = operator.metrics().await;
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let later = operator.metrics().await;
        let writes = |m: &Option<String>| {
            m.as_deref()
                .map(|m| sum_of(m, "overseer_api_writes_total{"))
        };
        let settled = writes(&later) == writes(&metrics);
        metrics = later;
        if settled {
            break;
        }
    }
    let mut writes = controller_writes(&before, &writes_so_far(&ns.client).await);
    events_by_reporter(ns, &mut writes.count).await;
    (measured, metrics, writes)
}

/// Tenant fairness: one tenant's single goal alone, then started while another tenant's
/// `goals` goals are under way, on one operator watching every namespace. Returns the
/// single goal's step advances in each case.
async fn run_tenants(goals: usize) -> (Measured, Measured) {
    let _operator = Operator::start(&[]);
    let alone_ns = setup("bench-tenant-alone").await;
    let kubelet = tokio::spawn(play_kubelet(alone_ns.api(), 1));
    create_goals(&alone_ns.api(), "q", 1, STEPS).await;
    let alone = kubelet.await.unwrap();
    let (busy_ns, quiet_ns) = (
        setup("bench-tenant-busy").await,
        setup("bench-tenant-quiet").await,
    );
    let busy = tokio::spawn(play_kubelet(busy_ns.api(), goals));
    create_goals(&busy_ns.api(), "c", goals, STEPS).await;
    let kubelet = tokio::spawn(play_kubelet(quiet_ns.api(), 1));
    create_goals(&quiet_ns.api(), "q", 1, STEPS).await;
    let beside = kubelet.await.unwrap();
    busy.await.unwrap();
    (alone, beside)
}

/// Deletes `ns` and waits until it is gone: the next count's writes and load must not
/// include its pods' deletion.
async fn removed(ns: TestNamespace) {
    use k8s_openapi::api::core::v1::Namespace;
    let (name, namespaces) = (ns.name.clone(), Api::<Namespace>::all(ns.client.clone()));
    let started = Instant::now();
    drop(ns);
    while namespaces
        .get_opt(&name)
        .await
        .expect("read the namespace")
        .is_some()
    {
        assert!(
            started.elapsed() < RUN_LIMIT,
            "namespace {name} still there"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    println!(
        "namespace {name} gone in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// One count's run of each: the bare controller's and the operator's advances.
async fn run_count(goals: usize) -> chart::Row {
    let transitions = goals * (STEPS - 1);
    println!(
        "\n== {goals} chains of {STEPS} steps started at once ({transitions} transitions each run)"
    );
    // Kept until the operator's run ends: deleting its pods would load that run.
    let bare_ns = setup(&format!("bench-scale-bare-{goals}")).await;
    let (bare, bare_writes) = run_bare(&bare_ns, goals).await;
    println!("{}", bare.line("bare controller"));
    let operator_ns = setup(&format!("bench-scale-operator-{goals}")).await;
    let (ours, metrics, our_writes) = run_operator(&operator_ns, goals).await;
    println!("{}", ours.line("operator"));
    // Of a goal of STEPS steps, a transition at steady state is its status write and its
    // next pod; the first step's start and the goal's end write once per goal.
    both("writes", &bare_writes, &our_writes, |w| {
        per_goal(&w.count, goals)
    });
    both("time per write", &bare_writes, &our_writes, time_per_write);
    let reads = |w: &Writes| per_goal(&w.reads, goals);
    both(
        "gets and lists by every client",
        &bare_writes,
        &our_writes,
        reads,
    );
    if let Some(metrics) = metrics {
        let writes = sum_of(&metrics, "overseer_api_writes_total{");
        let reconciles = sum_of(
            &metrics,
            "overseer_reconcile_duration_seconds_count{controller=\"goal\"}",
        );
        let reconciling = sum_of(
            &metrics,
            "overseer_reconcile_duration_seconds_sum{controller=\"goal\"}",
        );
        let dropped = sum_of(&metrics, "overseer_events_dropped_total");
        let reads = sum_of(&metrics, "overseer_api_reads_total{verb=\"read\"}");
        println!("operator: {reads:.0} API reads (gets and lists)");
        println!(
            "operator: {writes:.0} API writes ({:.1} per transition, Events included, {dropped:.0} Events dropped), {reconciles:.0} goal reconciles of {:.0} ms on average",
            writes / transitions as f64,
            1000.0 * reconciling / reconciles.max(1.0)
        );
    }
    println!(
        "operator / bare: p50 {:.2}x, p99 {:.2}x (target <= 3x), max {:.2}x its own p99 (target <= 2x), transitions/s {:.2}x (target >= 0.5x)",
        ms(ours.percentile(0.50)) / ms(bare.percentile(0.50)),
        ms(ours.percentile(0.99)) / ms(bare.percentile(0.99)),
        ms(ours.percentile(1.0)) / ms(ours.percentile(0.99)),
        ours.per_second() / bare.per_second()
    );
    removed(bare_ns).await;
    removed(operator_ns).await;
    chart::Row {
        goals,
        bare: bare.summary(),
        operator: ours.summary(),
    }
}

#[tokio::main]
async fn main() {
    let counts = counts();
    let mut rows = Vec::new();
    for &goals in &counts {
        rows.push(run_count(goals).await);
    }
    let path = std::env::var("OVERSEER_BENCH_CHART").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/docs/images/goal-scale.svg").into()
    });
    std::fs::write(&path, chart::svg(&rows)).expect("write the chart");
    println!("\n{}", chart::table(&rows));
    println!("drawn in {path}");
    let busy = counts
        .iter()
        .copied()
        .filter(|&n| n <= 1000)
        .max()
        .unwrap_or(counts[0]);
    let (alone, beside) = run_tenants(busy).await;
    println!("{}", alone.line("quiet tenant's goal alone"));
    println!(
        "{}",
        beside.line(&format!("quiet tenant's goal beside {busy} busy goals"))
    );
    println!(
        "the quiet tenant's slowest step advance beside the busy one: {:.2}x its slowest alone (target <= 2x)",
        ms(beside.percentile(1.0)) / ms(alone.percentile(1.0))
    );
}
