//! Crash injection at every write (src/kubernetes/writes.rs). Each scenario runs once without a
//! fault, which counts the operator's API writes; then, for each crash point N, in a
//! namespace of its own, with an operator that exits just before its Nth write and is
//! started again at once without the fault. Every run must end exactly as the
//! fault-free one: the same outcome of every step, no pod created twice, no step run
//! again, no checkpoint lost.
//!
//! `make test` crashes at a quick sample of points spread over the writes; `make crash`
//! (OVERSEER_CRASH_ALL=1) at every one. The tally goes to target/test-logs/crash.txt.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use overseer::agent::{Agent, AgentPhase};
use overseer::goal::pod::RESULTS_ANNOTATION;
use overseer::goal::{Goal, GoalPhase};
use overseer::kubernetes::writes::{CRASH_BEFORE_WRITE, CRASH_EXIT_CODE};
use overseer::prwatch::PRWatch;
use overseer::swarm::Swarm;
use serde_json::json;

use crate::support::chaos::ChaosProxy;
use crate::support::cluster::{
    Operator, TestNamespace, create_agent, create_object, kubeconfig_path, repo_root,
    restart_api_server, setup,
};
use crate::support::github::{FakeGitHub, Reply, create_watch, fixture};
use crate::support::measure::sum_of;
use crate::support::shim::{Shim, overseer_shim, pod_shim};

/// How long one run may take to reach its end state, crash and restart included.
const RUN_WAIT: Duration = Duration::from_secs(90);

/// Points in a quick sample: the first write, the last every run makes, and evenly
/// between.
const QUICK_SAMPLE: u64 = 6;

/// How often a sampled point not reached in its run is taken again, earlier.
const MAX_TRIES: usize = 4;

/// `make crash`: every write is a crash point.
fn every_point() -> bool {
    std::env::var_os("OVERSEER_CRASH_ALL").is_some()
}

/// The write numbers to crash before, out of the `writes` a fault-free run made. A
/// run's last writes are Events whose number varies from run to run (a swarm's 62
/// writes were 54 in another run), so the quick sample spreads over the first four
/// fifths, which every run makes, and must reach each point.
fn crash_points(writes: u64) -> Vec<u64> {
    if every_point() || writes <= QUICK_SAMPLE {
        return (1..=writes).collect();
    }
    let reliable = (writes * 4 / 5).max(QUICK_SAMPLE);
    let mut points: Vec<u64> = (0..QUICK_SAMPLE)
        .map(|i| 1 + i * (reliable - 1) / (QUICK_SAMPLE - 1))
        .collect();
    points.dedup();
    points
}

/// Objects seen in a namespace over a run: every uid each `Kind/name` had.
type Seen = Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>;

/// The world around the operator: what watches, records and acts on the namespace
/// independently of the operator, so a crash anywhere leaves it acting the same way.
struct World {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    seen: Seen,
    /// The shims (real tmux, scripted CLIs) that stand in for agent pods.
    shims: BTreeMap<&'static str, Shim>,
    /// The stand-in for GitHub, when the scenario watches a pull request.
    github: Option<FakeGitHub>,
    /// What the webhook heard, when the scenario has one.
    heard: Arc<Mutex<Vec<String>>>,
    /// The git remote, when the scenario lands work through a merge queue.
    remote: Option<Arc<crate::merge::Remote>>,
}

impl World {
    fn new() -> World {
        World {
            tasks: Vec::new(),
            seen: Seen::default(),
            shims: BTreeMap::new(),
            github: None,
            heard: Arc::default(),
            remote: None,
        }
    }

    /// Records the uid of every object of kind `K` seen, then hands it to `act`.
    fn watch<K, F, Fut>(&mut self, api: Api<K>, act: F)
    where
        K: kube::Resource<DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug
            + Send
            + 'static,
        F: Fn(K) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let seen = self.seen.clone();
        self.tasks.push(tokio::spawn(async move {
            let stream = watcher(api, watcher::Config::default()).applied_objects();
            let mut stream = std::pin::pin!(stream.backoff(SoonAgain));
            // An error (the API server restarting) is followed by a new watch, soon: the
            // end state of a run through a restart reads what these watches saw.
            while let Some(item) = stream.next().await {
                let Ok(object) = item else { continue };
                let meta = object.meta();
                if let (Some(name), Some(uid)) = (&meta.name, &meta.uid) {
                    let key = format!("{}/{name}", K::kind(&()));
                    seen.lock()
                        .unwrap()
                        .entry(key)
                        .or_default()
                        .insert(uid.clone());
                }
                act(object).await;
            }
        }));
    }

    /// Watches the pods and finishes each Running one as `outcome` says (kwok's Stages).
    fn finish_pods(&mut self, ns: &TestNamespace, outcome: fn(&str) -> (&'static str, String)) {
        let pods: Api<Pod> = ns.api();
        self.watch(pods.clone(), move |pod: Pod| {
            let pods = pods.clone();
            async move {
                let running =
                    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
                let finished = pod
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("kwok.overseer.dev/outcome"));
                let Some(name) = pod.metadata.name.filter(|_| running && !finished) else {
                    return;
                };
                let (phase, message) = outcome(&name);
                let patch = json!({"metadata": {"annotations": {
                    "kwok.overseer.dev/outcome": phase, "kwok.overseer.dev/message": message
                }}});
                let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
                retried(&format!("finish pod {name}"), || {
                    pods.patch(&name, &params, &patch)
                })
                .await;
            }
        });
    }

    /// The names of kind `kind` seen, each once; panics on one created twice.
    fn created_once(&self, kind: &str) -> String {
        let seen = self.seen.lock().unwrap();
        let mut names = Vec::new();
        for (key, uids) in seen.iter() {
            let Some(name) = key.strip_prefix(&format!("{kind}/")) else {
                continue;
            };
            assert_eq!(uids.len(), 1, "{key} was created {} times", uids.len());
            names.push(name);
        }
        names.join(", ")
    }
}

impl Drop for World {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What one scenario creates and how it reads its end state.
trait Scenario {
    /// A short name, used for the namespaces and the tally.
    const NAME: &'static str;
    /// Starts what plays the world around the operator (pods finishing, a person's
    /// edit, the agents' CLIs).
    async fn world(&self, ns: &TestNamespace) -> World;
    /// Creates the objects the operator acts on.
    async fn create(&self, ns: &TestNamespace, world: &World);
    /// The end state in words, once the scenario has ended; None before.
    async fn end_state(&self, ns: &TestNamespace, world: &World) -> Option<String>;
}

/// How one run went.
struct Run {
    end: String,
    /// The operator's writes, read from its metrics (runs that did not crash only).
    writes: Option<u64>,
    /// Whether the injected crash happened (a point past the run's last write never does).
    crashed: bool,
}

fn start_operator(ns: &TestNamespace, crash_before: Option<u64>) -> Operator {
    start_operator_at(ns, crash_before, &kubeconfig_path())
}

/// The operator of a run, reaching the API server through `kubeconfig`.
fn start_operator_at(
    ns: &TestNamespace,
    crash_before: Option<u64>,
    kubeconfig: &std::path::Path,
) -> Operator {
    let point = crash_before.map(|n| n.to_string());
    let env: Vec<(&str, &str)> = point
        .as_deref()
        .map(|n| (CRASH_BEFORE_WRITE, n))
        .into_iter()
        .collect();
    // Exec input runs this build's `overseer` against the shims (kwok's local exec).
    let args = [
        "--namespace",
        &ns.name,
        "--input-command",
        env!("CARGO_BIN_EXE_overseer"),
    ];
    Operator::start_with_env(kubeconfig, &args, &env)
}

async fn writes_of(operator: &Operator) -> Option<u64> {
    let metrics = operator.metrics().await?;
    Some(sum_of(&metrics, "overseer_api_writes_total{") as u64)
}

async fn run_once<S: Scenario>(scenario: &S, crash_before: Option<u64>) -> Run {
    let label = crash_before.map_or("clean".to_string(), |n| n.to_string());
    let ns = setup(&format!("crash-{}-{label}", S::NAME)).await;
    let world = scenario.world(&ns).await;
    let mut operator = start_operator(&ns, crash_before);
    scenario.create(&ns, &world).await;
    let mut crashed = false;
    let deadline = Instant::now() + RUN_WAIT;
    let end = loop {
        if !crashed && let Some(status) = operator.child.try_wait().unwrap() {
            let log = std::fs::read_to_string(&operator.log_path).unwrap_or_default();
            assert_eq!(
                status.code(),
                Some(CRASH_EXIT_CODE),
                "the operator stopped other than by the injected crash:\n{log}"
            );
            crashed = true;
            operator = start_operator(&ns, None);
        }
        if let Some(end) = scenario.end_state(&ns, &world).await {
            break end;
        }
        assert!(
            Instant::now() < deadline,
            "{} crashing before write {label}: no end state after {RUN_WAIT:?}\n{}",
            S::NAME,
            ns.dump().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Writes that follow the end state (its Events) are crash points too.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let writes = if crashed {
        None
    } else {
        writes_of(&operator).await
    };
    Run {
        end,
        writes,
        crashed,
    }
}

/// How long a run behind the chaos proxy may take: a half-open request costs the
/// operator its answer deadline (30 s) each time.
const FAULTY_RUN_WAIT: Duration = Duration::from_secs(240);

/// Runs `scenario` fault-free, then with its operator behind the chaos proxy (API
/// errors, 429s, 410s on watches, half-open requests, and an outage two seconds in,
/// as an API server restart looks); both must end the same. Appends the tally to
/// target/test-logs/chaos.txt.
async fn converges_through_faults<S: Scenario>(scenario: S) {
    let clean = run_once(&scenario, None).await;
    let ns = setup(&format!("chaos-{}", S::NAME)).await;
    let world = scenario.world(&ns).await;
    let proxy = ChaosProxy::start(S::NAME).await;
    let mut operator = start_operator_at(&ns, None, &proxy.kubeconfig);
    scenario.create(&ns, &world).await;
    let started = Instant::now();
    let mut outage = false;
    let end = loop {
        if let Some(status) = operator.child.try_wait().unwrap() {
            let log = std::fs::read_to_string(&operator.log_path).unwrap_or_default();
            panic!("the operator exited ({status}) behind the chaos proxy:\n{log}");
        }
        if !outage && started.elapsed() > Duration::from_secs(2) {
            proxy.outage();
            outage = true;
        }
        if let Some(end) = scenario.end_state(&ns, &world).await {
            break end;
        }
        assert!(
            started.elapsed() < FAULTY_RUN_WAIT,
            "{} behind the chaos proxy: no end state after {FAULTY_RUN_WAIT:?} ({:?} injected)\n{}",
            S::NAME,
            proxy.injected(),
            ns.dump().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        end,
        clean.end,
        "{} behind the chaos proxy: the end state differs from the fault-free run",
        S::NAME
    );
    let tally = format!(
        "{}: {} requests through the proxy, faults injected {:?}; same end state as fault-free, in {:.1}s\n",
        S::NAME,
        proxy.requests(),
        proxy.injected(),
        started.elapsed().as_secs_f64()
    );
    println!("{tally}");
    let injected = proxy.injected();
    for fault in ["503", "429", "410 on a watch", "half-open", "outage"] {
        assert!(
            injected.contains_key(fault),
            "no {fault} was injected: {tally}"
        );
    }
    let log = repo_root().join("target/test-logs/chaos.txt");
    let mut previous = std::fs::read_to_string(&log).unwrap_or_default();
    previous.push_str(&tally);
    std::fs::write(log, previous).unwrap();
}

/// Runs `write` until it succeeds or its object is gone: the world's own writes go on
/// through an API server restart, since a watch may not bring the object that called
/// for them again.
async fn retried<T, Fut>(what: &str, write: impl Fn() -> Fut)
where
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let deadline = Instant::now() + RUN_WAIT;
    loop {
        match write().await {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.code == 404 => return,
            Err(error) => assert!(Instant::now() < deadline, "{what}: {error}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The end state of `scenario` once it reads the same twice, 2 s apart: after a restart
/// the world's watches catch up on what happened while they were broken.
async fn settled_end_state<S: Scenario>(
    scenario: &S,
    ns: &TestNamespace,
    world: &World,
) -> Option<String> {
    let first = scenario.end_state(ns, world).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let second = scenario.end_state(ns, world).await?;
    (first == second).then_some(second)
}

/// A watch of the world that broke is opened again after 200 ms, every time (kube's
/// default backoff grows to 30 s, longer than a scenario takes after a restart).
struct SoonAgain;

impl Iterator for SoonAgain {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(Duration::from_millis(200))
    }
}

impl kube::runtime::utils::Backoff for SoonAgain {
    fn reset(&mut self) {}
}

/// Runs `scenario` fault-free, then with a real restart of the API server as soon as
/// the operator has made its first write (etcd keeps the objects; every connection and
/// watch of the operator breaks); both must end the same. The restart is timed by the
/// operator's progress, not the clock: a fast machine ended the swarm scenario within
/// half a second, and a restart before the operator first reached the API server
/// stopped it at start-up (it exits when it cannot reach a cluster, to be restarted).
/// The restart is felt by every test running at the time, so these tests' names end in
/// `api_server_restart` and `make test` runs them alone.
async fn converges_through_an_api_server_restart<S: Scenario>(scenario: S) {
    let clean = run_once(&scenario, None).await;
    let ns = setup(&format!("restart-{}", S::NAME)).await;
    let world = scenario.world(&ns).await;
    let mut operator = start_operator(&ns, None);
    scenario.create(&ns, &world).await;
    let started = Instant::now();
    let mut away = None;
    let end = loop {
        if let Some(status) = operator.child.try_wait().unwrap() {
            let log = std::fs::read_to_string(&operator.log_path).unwrap_or_default();
            panic!("the operator exited ({status}) through the API server restart:\n{log}");
        }
        if away.is_none() {
            if writes_of(&operator).await.unwrap_or(0) > 0 {
                away = Some(restart_api_server().await);
            }
        } else if let Some(end) = settled_end_state(&scenario, &ns, &world).await {
            break end;
        }
        assert!(
            started.elapsed() < RUN_WAIT * 2,
            "{} through an API server restart: no end state after {:?}\n{}",
            S::NAME,
            RUN_WAIT * 2,
            ns.dump().await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let away = away.expect("an end state is read only after the restart");
    assert_eq!(
        end,
        clean.end,
        "{} through an API server restart: the end state differs from the fault-free run",
        S::NAME
    );
    let tally = format!(
        "{}: API server away {:.1}s, same end state as fault-free, in {:.1}s\n",
        S::NAME,
        away.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    println!("{tally}");
    let log = repo_root().join("target/test-logs/restart.txt");
    let mut previous = std::fs::read_to_string(&log).unwrap_or_default();
    previous.push_str(&tally);
    std::fs::write(log, previous).unwrap();
}

/// Runs `scenario` fault-free, then crashed before each chosen write; every end state
/// must equal the fault-free one. Appends the tally to target/test-logs/crash.txt.
async fn crash_everywhere<S: Scenario>(scenario: S) {
    let clean = run_once(&scenario, None).await;
    let writes = clean.writes.expect("the fault-free run's write count");
    assert!(writes > 0, "the scenario made no writes");
    let points = crash_points(writes);
    let mut tally = format!(
        "{}: fault-free run {writes} writes; crashing before {} of them\n",
        S::NAME,
        points.len()
    );
    let mut crashed = 0;
    for &sampled in &points {
        // A run's write count varies with how watch events batch: a point past a
        // run's last write is taken again at that run's last write, until reached.
        let mut n = sampled;
        for _ in 0..MAX_TRIES {
            let run = run_once(&scenario, Some(n)).await;
            assert_eq!(
                run.end,
                clean.end,
                "{} crashed before write {n}: the end state differs from the fault-free run",
                S::NAME
            );
            if run.crashed {
                crashed += 1;
                let _ = writeln!(tally, "  write {n}: crashed, restarted, same end state");
                break;
            }
            let made = run.writes.unwrap_or(n - 1);
            let _ = writeln!(
                tally,
                "  write {n}: not reached (this run made {made} writes), same end state; taken again at its last"
            );
            n = made.min(n - 1).max(1);
        }
    }
    let _ = writeln!(
        tally,
        "{}: {crashed} crashes injected of {} points, every end state equal",
        S::NAME,
        points.len()
    );
    println!("{tally}");
    if every_point() {
        assert!(
            crashed * 2 >= points.len(),
            "most crash points must be reached: {tally}"
        );
    } else {
        assert_eq!(
            crashed,
            points.len(),
            "every sampled crash point must be reached: {tally}"
        );
    }
    let log = repo_root().join("target/test-logs/crash.txt");
    let mut previous = std::fs::read_to_string(&log).unwrap_or_default();
    previous.push_str(&tally);
    std::fs::write(log, previous).unwrap();
}

/// A Goal of three steps whose second fails once and then succeeds on its retry.
struct GoalWithRetry;

impl Scenario for GoalWithRetry {
    const NAME: &'static str = "goal";

    async fn world(&self, ns: &TestNamespace) -> World {
        let mut world = World::new();
        world.finish_pods(ns, |pod| match pod {
            "ship-s1-a1" => ("Failed", "boom".into()),
            pod => ("Succeeded", format!("{pod} done")),
        });
        world
    }

    async fn create(&self, ns: &TestNamespace, _world: &World) {
        create_object::<Goal>(
            ns,
            json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": "ship"},
            "spec": {
                "defaults": {
                    "runtime": {"name": "codex", "mode": "headless", "image": "example.com/codex:1"},
                    "maxRetries": 2, "backoff": {"initial": "1s", "factor": 2, "max": "2s"}
                },
                "steps": [
                    {"name": "a", "action": "Implement a"},
                    {"name": "b", "action": "Implement b"},
                    {"name": "c", "action": "Implement c"}
                ]
            }
        }),
        )
        .await;
    }

    async fn end_state(&self, ns: &TestNamespace, world: &World) -> Option<String> {
        goal_end_state(ns, world, "ship").await
    }
}

/// The end state of goal `name` once it is over: each step's (or item's) outcome, the
/// results its last step's pod carried (whatever write the operator died at between
/// the status that recorded them and the pod), and the pods made, each once.
async fn goal_end_state(ns: &TestNamespace, world: &World, name: &str) -> Option<String> {
    let status = ns.api::<Goal>().get(name).await.ok()?.status?;
    if !matches!(status.phase, Some(GoalPhase::Succeeded | GoalPhase::Failed)) {
        return None;
    }
    let mut end = format!(
        "phase {:?}, {} steps done\n",
        status.phase, status.completed_steps
    );
    for step in &status.steps {
        let _ = writeln!(
            end,
            "step {} ({:?}): {:?}, {} attempt(s), pod {:?}, result {:?}",
            step.name, step.item, step.phase, step.attempts, step.pod_name, step.result
        );
    }
    let last = status.steps.last()?.pod_name.clone()?;
    let pod = ns.api::<Pod>().get(&last).await.ok()?;
    let carried = pod.metadata.annotations?.remove(RESULTS_ANNOTATION)?;
    let _ = writeln!(end, "results given to {last}: {carried}");
    let _ = write!(end, "pods: {}", world.created_once("Pod"));
    Some(end)
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_goal_with_a_retry_ends_the_same_whatever_write_the_operator_dies_at() {
    crash_everywhere(GoalWithRetry).await;
}

#[tokio::test]
#[ignore = "restarts the test cluster's API server: run alone by `make test`"]
async fn a_goal_with_a_retry_ends_the_same_through_an_api_server_restart() {
    converges_through_an_api_server_restart(GoalWithRetry).await;
}

/// A Goal that fans out: plan, then three items two at a time (the second fails once
/// and succeeds on its retry), then a fan-in after them all.
struct GoalFanOut;

impl Scenario for GoalFanOut {
    const NAME: &'static str = "goal-fan-out";

    async fn world(&self, ns: &TestNamespace) -> World {
        let mut world = World::new();
        world.finish_pods(ns, |pod| match pod {
            "fan-s2-a1" => ("Failed", "boom".into()),
            pod => ("Succeeded", format!("{pod} done")),
        });
        world
    }

    async fn create(&self, ns: &TestNamespace, _world: &World) {
        create_object::<Goal>(
            ns,
            json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": "fan"},
            "spec": {
                "defaults": {
                    "runtime": {"name": "codex", "mode": "headless", "image": "example.com/codex:1"},
                    "maxRetries": 2, "backoff": {"initial": "1s", "factor": 2, "max": "2s"}
                },
                "steps": [
                    {"name": "plan", "action": "Plan it"},
                    {"name": "part", "action": "Build {{item}}", "forEach": ["x", "y", "z"],
                     "maxParallel": 2},
                    {"name": "join", "action": "Join the parts"}
                ]
            }
        }),
        )
        .await;
    }

    async fn end_state(&self, ns: &TestNamespace, world: &World) -> Option<String> {
        goal_end_state(ns, world, "fan").await
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_goal_that_fans_out_ends_the_same_whatever_write_the_operator_dies_at() {
    crash_everywhere(GoalFanOut).await;
}

/// A Swarm of two members, edited by a person once both run: one member removed,
/// one added, the base prompt changed.
struct SwarmEdited;

const CREW_AFTER_EDIT: [&str; 3] = ["crew-builder", "crew-overseer", "crew-tester"];
const CREW_BASE_AFTER_EDIT: &str = "Work only inside the billing service, on branch proration.";

impl Scenario for SwarmEdited {
    const NAME: &'static str = "swarm";

    async fn world(&self, ns: &TestNamespace) -> World {
        let mut world = World::new();
        world.watch(ns.api::<Agent>(), |_| async {});
        let (swarms, edited) = (ns.api::<Swarm>(), Arc::new(AtomicBool::new(false)));
        let seen = world.seen.clone();
        // The edit comes once both members run, so every run sees the same pods.
        world.watch(ns.api::<Pod>(), move |_| {
            let (swarms, edited, seen) = (swarms.clone(), edited.clone(), seen.clone());
            async move {
                let both = ["Pod/crew-scout-1", "Pod/crew-builder-1"]
                    .iter()
                    .all(|key| seen.lock().unwrap().contains_key(*key));
                if !both || edited.swap(true, Ordering::SeqCst) {
                    return;
                }
                let edit = json!({"spec": {
                    "agents": [
                        {"name": "builder", "role": "builder"},
                        {"name": "tester", "role": "builder", "prompt": "Write the tests."}
                    ],
                    "prompts": {"base": CREW_BASE_AFTER_EDIT}
                }});
                let (params, edit) = (PatchParams::default(), Patch::Merge(&edit));
                retried("edit the swarm", || swarms.patch("crew", &params, &edit)).await;
            }
        });
        world
    }

    async fn create(&self, ns: &TestNamespace, _world: &World) {
        create_object::<Swarm>(
            ns,
            json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "crew"},
            "spec": {
                "defaults": {"runtime": {"name": "claude", "mode": "tui", "image": "example.com/claude:1"}},
                "prompts": {"base": "Work only inside the billing service."},
                "agents": [
                    {"name": "scout", "role": "scout"},
                    {"name": "builder", "role": "builder"}
                ]
            }
        }),
        )
        .await;
    }

    async fn end_state(&self, ns: &TestNamespace, world: &World) -> Option<String> {
        let swarm = ns.api::<Swarm>().get("crew").await.ok()?;
        let generation = swarm.metadata.generation?;
        let status = swarm.status?;
        if generation < 2 || status.observed_generation != Some(generation) {
            return None;
        }
        let agents = ns
            .api::<Agent>()
            .list(&ListParams::default().labels("overseer.dev/swarm=crew"))
            .await
            .ok()?;
        let mut names: Vec<&str> = agents
            .items
            .iter()
            .filter_map(|a| a.metadata.name.as_deref())
            .collect();
        names.sort();
        if names != CREW_AFTER_EDIT {
            return None;
        }
        let mut end = String::new();
        for agent in &agents.items {
            let name = agent.metadata.name.as_deref()?;
            let instructions = ns
                .api::<ConfigMap>()
                .get_opt(&format!("{name}-instructions"))
                .await
                .ok()??;
            let text = instructions.data?.into_values().collect::<String>();
            if !text.contains(CREW_BASE_AFTER_EDIT) {
                return None;
            }
            // Every member and its pod of its current attempt have been seen created
            // (a watch of this test that the restart cut relists a moment later).
            let attempt = agent.status.as_ref()?.attempt?;
            let seen = world.seen.lock().unwrap();
            let pod = format!("Pod/{name}-{attempt}");
            if !seen.contains_key(&pod) || !seen.contains_key(&format!("Agent/{name}")) {
                return None;
            }
            drop(seen);
            let _ = writeln!(
                end,
                "agent {name}: role {:?}, overseer {:?}, attempt {attempt}, instructions {} bytes",
                agent.spec.role,
                agent.spec.overseer,
                text.len()
            );
        }
        let mut members: Vec<&str> = status.members.iter().map(|m| m.name.as_str()).collect();
        members.sort();
        let _ = writeln!(end, "members: {}", members.join(", "));
        // The member the edit removes lived only before it, and an API server restart
        // can cut this test's Agent watch for all of that life: its pod shows it was
        // made (the edit waits for that pod), and the Agent line lists the members that
        // stay. `created_once` still fails on any Agent seen created twice.
        let agents = world.created_once("Agent");
        let kept: Vec<&str> = agents
            .split(", ")
            .filter(|name| CREW_AFTER_EDIT.contains(name))
            .collect();
        let _ = writeln!(end, "agents kept, each created once: {}", kept.join(", "));
        let _ = write!(end, "pods created: {}", world.created_once("Pod"));
        Some(end)
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_goal_with_a_retry_ends_the_same_through_api_faults_and_an_outage() {
    converges_through_faults(GoalWithRetry).await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_edited_swarm_ends_the_same_through_api_faults_and_an_outage() {
    converges_through_faults(SwarmEdited).await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_edited_swarm_ends_the_same_whatever_write_the_operator_dies_at() {
    crash_everywhere(SwarmEdited).await;
}

#[tokio::test]
#[ignore = "restarts the test cluster's API server: run alone by `make test`"]
async fn an_edited_swarm_ends_the_same_through_an_api_server_restart() {
    converges_through_an_api_server_restart(SwarmEdited).await;
}

/// The overseer loop: a builder stops too early, its overseer is woken, reads it and
/// sends direction, and the builder ends its loop. Each delivery (the wake, the send)
/// must reach its CLI exactly once whatever write the operator dies at.
struct AgentLoop;

impl Scenario for AgentLoop {
    const NAME: &'static str = "loop";

    async fn world(&self, ns: &TestNamespace) -> World {
        let mut world = World::new();
        world.watch(ns.api::<Pod>(), |_| async {});
        world.shims.insert("lead", overseer_shim(ns, "lead").await);
        let builder = pod_shim(ns, "builder", 1, "pi", "tui-builder.sh").await;
        world.shims.insert("builder", builder);
        world
    }

    async fn create(&self, ns: &TestNamespace, _world: &World) {
        create_agent(ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
        create_agent(
            ns,
            "builder",
            json!({"overseer": "lead",
                "loop": {"enabled": true, "interval": "1s", "idleAfter": "2s", "cooldown": "1m"}}),
        )
        .await;
    }

    async fn end_state(&self, ns: &TestNamespace, world: &World) -> Option<String> {
        let builder = ns.api::<Agent>().get("builder").await.ok()?;
        let status = builder.status?;
        let builder_log = world.shims["builder"].fake_log();
        let lead_log = world.shims["lead"].fake_log();
        // Ended: the builder is Done and its overseer's `send` has returned.
        if status.phase != Some(AgentPhase::Done) || !lead_log.contains("send exit") {
            return None;
        }
        let lines = |log: &str, prefix: &str| -> Vec<String> {
            log.lines()
                .filter(|l| l.starts_with(prefix))
                // Drop the time stamps: what was read and how often is the end state.
                .map(|l| {
                    l.split(' ')
                        .filter(|w| !w.contains('.'))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect()
        };
        let sends = status.sends.unwrap_or_default();
        let outcomes: Vec<String> = sends
            .results
            .iter()
            .map(|r| format!("#{} {:?}", r.seq, r.outcome))
            .collect();
        let loop_status = status.loop_.unwrap_or_default();
        Some(format!(
            "builder: {:?}, attempt {:?}, wakes {}, sends {outcomes:?}\n\
             builder read: {:?}\nbuilder ran: {:?}\n\
             lead: {:?}, {:?}\npods created: {}",
            status.phase,
            status.attempt,
            loop_status.wakes,
            lines(&builder_log, "got "),
            lines(&builder_log, "loop done exit"),
            lines(&lead_log, "woken "),
            lines(&lead_log, "send exit"),
            world.created_once("Pod"),
        ))
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_overseer_loop_delivers_its_wake_and_send_once_whatever_write_the_operator_dies_at() {
    crash_everywhere(AgentLoop).await;
}

#[tokio::test]
#[ignore = "restarts the test cluster's API server: run alone by `make test`"]
async fn the_overseer_loop_delivers_its_wake_and_send_once_through_an_api_server_restart() {
    converges_through_an_api_server_restart(AgentLoop).await;
}

/// A PRWatch whose first poll finds CI failed on the head commit: the agent (a real
/// shim) must read that wake exactly once, and the watch must count it once.
struct PullRequestWake;

impl Scenario for PullRequestWake {
    const NAME: &'static str = "prwatch";

    async fn world(&self, ns: &TestNamespace) -> World {
        let mut world = World::new();
        world.watch(ns.api::<Pod>(), |_| async {});
        let builder = pod_shim(ns, "builder", 1, "pi", "tui-works-then-idles.sh").await;
        world.shims.insert("builder", builder);
        let github = FakeGitHub::start().await;
        github.then([Reply::json(&fixture("failing", jiff::Timestamp::now()))]);
        world.github = Some(github);
        world
    }

    async fn create(&self, ns: &TestNamespace, world: &World) {
        create_agent(ns, "builder", json!({})).await;
        let github = world.github.as_ref().expect("the scenario's GitHub");
        let pr = "https://github.com/acme/billing/pull/7";
        create_watch(ns, github, "pr7", pr, "builder", json!({})).await;
    }

    async fn end_state(&self, ns: &TestNamespace, world: &World) -> Option<String> {
        let status = ns.api::<PRWatch>().get("pr7").await.ok()?.status?;
        let log = world.shims["builder"].fake_log();
        // Ended: the wake is read to its end and no longer in flight.
        if status.wakes == 0
            || status.wake_in_flight.is_some()
            || !log.contains("Read it on GitHub")
        {
            return None;
        }
        let read: Vec<&str> = log
            .lines()
            .filter(|l| l.starts_with("[overseer] pr:"))
            .collect();
        Some(format!(
            "watch: {:?}, wakes {}, reported {:?}\nagent read: {read:?}\npods created: {}",
            status.phase,
            status.wakes,
            status.reported,
            world.created_once("Pod"),
        ))
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_pull_request_wake_is_delivered_once_whatever_write_the_operator_dies_at() {
    crash_everywhere(PullRequestWake).await;
}

#[tokio::test]
#[ignore = "restarts the test cluster's API server: run alone by `make test`"]
async fn a_pull_request_wake_is_delivered_once_through_an_api_server_restart() {
    converges_through_an_api_server_restart(PullRequestWake).await;
}

/// A swarm whose scout sends three messages at once (as `overseer mail send` writes
/// them): one to a member, one to everyone, one to nobody. Routed in order, each
/// recipient takes each message once, whatever write the operator dies at.
struct MailRouted;

const MAIL_TEAM: [&str; 3] = ["mail-builder", "mail-overseer", "mail-scout"];

impl Scenario for MailRouted {
    const NAME: &'static str = "mail";

    async fn world(&self, ns: &TestNamespace) -> World {
        let mut world = World::new();
        let (agents, sent) = (ns.api::<Agent>(), Arc::new(AtomicBool::new(false)));
        let seen = world.seen.clone();
        // The scout writes its outbox once every member exists (its own status, as its
        // ServiceAccount may).
        world.watch(ns.api::<Agent>(), move |_| {
            let (agents, sent, seen) = (agents.clone(), sent.clone(), seen.clone());
            async move {
                let all = MAIL_TEAM
                    .iter()
                    .all(|name| seen.lock().unwrap().contains_key(&format!("Agent/{name}")));
                if !all || sent.swap(true, Ordering::SeqCst) {
                    return;
                }
                // Sent now: nothing expires (policy default 1 h) within the run.
                let now = jiff::Timestamp::now().to_string();
                let mail = |seq: i64, to: &str, body: &str| {
                    json!({"seq": seq, "to": to, "type": "finding", "urgent": false,
                        "body": body, "sentTime": now})
                };
                let outbox = json!({"status": {"outbox": [
                    mail(1, "builder", "first"),
                    mail(2, "@all", "second"),
                    mail(3, "nobody", "third"),
                ]}});
                let (params, patch) = (PatchParams::default(), Patch::Merge(&outbox));
                retried("write the scout's outbox", || {
                    agents.patch_status("mail-scout", &params, &patch)
                })
                .await;
            }
        });
        world
    }

    async fn create(&self, ns: &TestNamespace, _world: &World) {
        create_object::<Swarm>(
            ns,
            json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "mail"},
            "spec": {
                "defaults": {"runtime": {"name": "claude", "mode": "tui", "image": "example.com/claude:1"}},
                "agents": [{"name": "scout", "role": "scout"}, {"name": "builder", "role": "builder"}]
            }
        }),
        )
        .await;
    }

    async fn end_state(&self, ns: &TestNamespace, _world: &World) -> Option<String> {
        let agents = ns.api::<Agent>();
        let scout = agents.get("mail-scout").await.ok()?.status?;
        let record = scout.mail?;
        if record.routed_seq < 3 {
            return None;
        }
        let mut receipts: Vec<String> = record
            .receipts
            .iter()
            .map(|r| format!("#{} {} {:?}", r.seq, r.to, r.state))
            .collect();
        receipts.sort();
        let mut end = format!("scout receipts: {}\n", receipts.join(", "));
        for name in MAIL_TEAM {
            let status = agents.get(name).await.ok()?.status.unwrap_or_default();
            let mailbox: Vec<String> = status
                .mailbox
                .iter()
                .map(|m| format!("{} #{} {:?}", m.from, m.seq, m.body))
                .collect();
            let received = status.mail.map_or(0, |m| m.received_count);
            let _ = writeln!(end, "{name}: {} (taken {received})", mailbox.join(", "));
        }
        Some(end)
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn mail_is_routed_once_in_order_whatever_write_the_operator_dies_at() {
    crash_everywhere(MailRouted).await;
}

/// An agent without a ready overseer escalates twice (critical, and info with a short
/// `ackWithin`) to a webhook: both open, both notified in status, and the webhook never
/// hears one twice, whatever write the operator dies at.
struct Escalated;

impl Scenario for Escalated {
    const NAME: &'static str = "escalation";

    async fn world(&self, ns: &TestNamespace) -> World {
        let mut world = World::new();
        let hook = crate::support::webhook::Webhook::start().await;
        crate::support::webhook::url_secret(ns, "hook", &hook.url).await;
        let heard = world.heard.clone();
        let mut requests = hook.requests;
        world.tasks.push(tokio::spawn(async move {
            while let Some(request) = requests.recv().await {
                heard.lock().unwrap().push(request);
            }
        }));
        let (agents, asked) = (ns.api::<Agent>(), Arc::new(AtomicBool::new(false)));
        world.watch(ns.api::<Agent>(), move |agent: Agent| {
            let (agents, asked) = (agents.clone(), asked.clone());
            async move {
                let started = agent.status.as_ref().and_then(|s| s.attempt).is_some();
                if !started || asked.swap(true, Ordering::SeqCst) {
                    return;
                }
                let request = |seq: i64, severity: &str| {
                    json!({"seq": seq, "severity": severity, "reason": "help",
                        "time": "2026-12-05T00:00:00Z"})
                };
                let asks = json!({"status": {"escalationRequests": [
                    request(1, "critical"), request(2, "info")
                ]}});
                let (params, patch) = (PatchParams::default(), Patch::Merge(&asks));
                retried("escalate", || agents.patch_status("asker", &params, &patch)).await;
            }
        });
        world
    }

    async fn create(&self, ns: &TestNamespace, _world: &World) {
        create_agent(
            ns,
            "asker",
            json!({"notify": {"urlSecretRef": {"name": "hook", "key": "url"}},
                "loop": {"enabled": true, "interval": "1s", "idleAfter": "1h", "ackWithin": "2s"}}),
        )
        .await;
    }

    async fn end_state(&self, ns: &TestNamespace, world: &World) -> Option<String> {
        let status = ns.api::<Agent>().get("asker").await.ok()?.status?;
        if status.escalations.len() < 2
            || status.escalations.iter().any(|e| e.notified_time.is_none())
        {
            return None;
        }
        let mut end = String::new();
        for e in &status.escalations {
            let _ = writeln!(
                end,
                "#{} {:?} {:?} {:?}, notified",
                e.id, e.kind, e.severity, e.state
            );
        }
        let heard = world.heard.lock().unwrap().clone();
        for id in [1, 2] {
            let times = heard
                .iter()
                .filter_map(|r| r.split_once("\r\n\r\n"))
                .filter_map(|(_, body)| serde_json::from_str::<serde_json::Value>(body).ok())
                .filter(|body| body["escalation"]["id"] == id)
                .count();
            let _ = writeln!(
                end,
                "#{id} heard by the webhook at most once: {}",
                times <= 1
            );
        }
        Some(end)
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn escalations_open_and_notify_once_whatever_write_the_operator_dies_at() {
    crash_everywhere(Escalated).await;
}

/// A lead asks for three members with one allowed to run at once; each that starts is
/// ended (released) by the world, so the queue drains in order. Whatever write the
/// operator dies at: each member is created once, every request is answered once, and
/// the lead gets one mail per member that ended.
struct Spawned;

impl Scenario for Spawned {
    const NAME: &'static str = "spawn";

    async fn world(&self, ns: &TestNamespace) -> World {
        let mut world = World::new();
        let (agents, asked) = (ns.api::<Agent>(), Arc::new(AtomicBool::new(false)));
        world.watch(ns.api::<Agent>(), move |agent: Agent| {
            let (agents, asked) = (agents.clone(), asked.clone());
            async move {
                let Some(status) = agent.status.as_ref() else {
                    return;
                };
                let name = agent.metadata.name.clone().unwrap_or_default();
                if name == "band-lead" && status.attempt.is_some() && !asked.swap(true, Ordering::SeqCst) {
                    let ask = |seq: i64, member: &str| {
                        json!({"seq": seq, "name": member, "role": "builder",
                            "task": format!("build {member}"), "time": format!("2026-12-05T00:00:0{seq}Z")})
                    };
                    let asks = json!({"status": {"spawnRequests": [ask(1, "a"), ask(2, "b"), ask(3, "c")]}});
                    let (params, patch) = (PatchParams::default(), Patch::Merge(&asks));
                    retried("spawn", || agents.patch_status("band-lead", &params, &patch)).await;
                    return;
                }
                // A spawned member that started is done at once.
                let spawned = agent.metadata.labels.as_ref().is_some_and(|l| l.contains_key("overseer.dev/parent"));
                if let (true, Some(attempt), None) = (spawned, status.attempt, status.exit.as_ref()) {
                    let exit = json!({"status": {"exit": {"outcome": "done", "attempt": attempt,
                        "time": "2026-12-05T00:01:00Z"}}});
                    let (params, patch) = (PatchParams::default(), Patch::Merge(&exit));
                    retried("end a member", || agents.patch_status(&name, &params, &patch)).await;
                }
            }
        });
        world
    }

    async fn create(&self, ns: &TestNamespace, _world: &World) {
        create_object::<Swarm>(
            ns,
            json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "band"},
            "spec": {
                "defaults": {"runtime": {"name": "claude", "mode": "tui", "image": "example.com/claude:1"}},
                "coordination": {"spawn": {"allow": [{"from": "lead", "roles": ["builder"]}], "maxRunning": 1}},
                "agents": [{"name": "lead", "role": "lead"}]
            }
        }),
        )
        .await;
    }

    async fn end_state(&self, ns: &TestNamespace, world: &World) -> Option<String> {
        let swarm = ns.api::<Swarm>().get("band").await.ok()?;
        let spawned = swarm.status?.spawned;
        let ended = spawned.len() == 3
            && spawned
                .iter()
                .all(|e| e.state == overseer::kinds::spawn::SpawnedState::Ended);
        let lead = ns.api::<Agent>().get("band-lead").await.ok()?.status?;
        let ledger = lead.spawns?;
        let told = lead
            .mailbox
            .iter()
            .filter(|m| m.type_.as_deref() == Some("ended"))
            .count();
        if !ended || told < 3 {
            return None;
        }
        let mut end = String::new();
        for e in &spawned {
            let _ = writeln!(
                end,
                "{} ({}) by {}: {:?}",
                e.name, e.role, e.parent, e.state
            );
        }
        for r in &ledger.records {
            let _ = writeln!(end, "request #{} {}: {:?}", r.seq, r.name, r.state);
        }
        let mut from: Vec<&str> = lead.mailbox.iter().map(|m| m.from.as_str()).collect();
        from.sort();
        let _ = writeln!(end, "mail to the lead from: {}", from.join(", "));
        let _ = write!(
            end,
            "agents, each created once: {}",
            world.created_once("Agent")
        );
        Some(end)
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn spawned_members_start_once_in_order_whatever_write_the_operator_dies_at() {
    crash_everywhere(Spawned).await;
}

/// Two members ask to land disjoint edits through the merge queue; each attempt's pod
/// is played on this machine with real git. Whatever write the operator dies at: both
/// land, in order, each once (two merge commits), and each author gets one mail.
struct Merged;

impl Scenario for Merged {
    const NAME: &'static str = "merge";

    async fn world(&self, ns: &TestNamespace) -> World {
        let mut world = World::new();
        let remote = Arc::new(crate::merge::Remote::new(ns));
        let clones: BTreeMap<&str, std::path::PathBuf> = [
            ("a", remote.push("land-a", "sed -i 's/^1$/one/' a.txt")),
            ("b", remote.push("land-b", "sed -i 's/^3$/three/' b.txt")),
        ]
        .into_iter()
        .collect();
        world.remote = Some(remote);
        // Both ask once both run, so every run queues them in the same order.
        let (agents, asked) = (ns.api::<Agent>(), Arc::new(AtomicBool::new(false)));
        world.watch(ns.api::<Agent>(), move |_: Agent| {
            let (agents, asked, clones) = (agents.clone(), asked.clone(), clones.clone());
            async move {
                for member in ["land-a", "land-b"] {
                    let started = agents.get_opt(member).await.ok().flatten();
                    if started.and_then(|a| a.status?.attempt).is_none() {
                        return;
                    }
                }
                if asked.swap(true, Ordering::SeqCst) {
                    return;
                }
                for (member, clone) in &clones {
                    let sha = crate::merge::sh(clone, "git rev-parse HEAD");
                    let ask = json!({"status": {"mergeRequests": [{"seq": 1,
                        "branch": format!("overseer/land-{member}"), "sha": sha,
                        "time": format!("2026-12-05T00:00:0{}Z", if *member == "a" { 1 } else { 2 })}]}});
                    let (params, patch) = (PatchParams::default(), Patch::Merge(&ask));
                    let name = format!("land-{member}");
                    retried("request a merge", || agents.patch_status(&name, &params, &patch)).await;
                }
            }
        });
        let pods: Api<Pod> = ns.api();
        let namespace = ns.name.clone();
        let played = Arc::new(Mutex::new(BTreeSet::new()));
        world.watch(pods.clone(), move |pod: Pod| {
            let (pods, namespace, played) = (pods.clone(), namespace.clone(), played.clone());
            async move {
                let merge = pod
                    .metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("overseer.dev/merge"));
                let running =
                    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                if !merge || !running || !played.lock().unwrap().insert(uid) {
                    return;
                }
                let name = pod.metadata.name.clone().unwrap_or_default();
                let message =
                    tokio::task::spawn_blocking(move || crate::merge::land_as(&namespace, &pod))
                        .await
                        .unwrap();
                let finish = json!({"metadata": {"annotations": {
                    "kwok.overseer.dev/outcome": "Succeeded", "kwok.overseer.dev/message": message
                }}});
                let (params, patch) = (PatchParams::default(), Patch::Merge(&finish));
                retried(&format!("finish {name}"), || {
                    pods.patch(&name, &params, &patch)
                })
                .await;
            }
        });
        world
    }

    async fn create(&self, ns: &TestNamespace, world: &World) {
        let url = world
            .remote
            .as_ref()
            .map(|r| r.url.clone())
            .unwrap_or_default();
        create_object::<Swarm>(
            ns,
            json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "land"},
            "spec": {
                "defaults": {"runtime": {"name": "claude", "mode": "tui", "image": "example.com/claude:1"}},
                "workspace": {"git": {"url": url, "ref": "main"}},
                "coordination": {"merge": {"checks": [{"name": "files", "command": ["test", "-f", "a.txt"]}]}},
                "agents": [{"name": "a", "role": "builder"}, {"name": "b", "role": "builder"}]
            }
        }),
        )
        .await;
    }

    async fn end_state(&self, ns: &TestNamespace, world: &World) -> Option<String> {
        let swarm = ns.api::<Swarm>().get("land").await.ok()?;
        let queue = swarm.status?.merge_queue;
        let merged = queue.len() == 2
            && queue
                .iter()
                .all(|e| e.state == overseer::kinds::merge::MergeState::Merged);
        let mut mail = Vec::new();
        for member in ["land-a", "land-b"] {
            let status = ns.api::<Agent>().get(member).await.ok()?.status?;
            let told = status
                .mailbox
                .iter()
                .filter(|m| m.from == "merge-queue")
                .count();
            let ledger = status.merges?;
            mail.push(format!(
                "{member}: {told} mail, answered {}",
                ledger.answered
            ));
        }
        if !merged || mail.iter().any(|m| m.contains(": 0 mail")) {
            return None;
        }
        let mut end = String::new();
        for e in &queue {
            let _ = writeln!(
                end,
                "#{} {} {:?} after {} attempt(s)",
                e.id, e.member, e.state, e.attempts
            );
        }
        for line in mail {
            let _ = writeln!(end, "{line}");
        }
        // Each run has its own repository: the commits' names differ, their branches not.
        let merges: Vec<String> = world
            .remote
            .as_ref()?
            .merges()
            .iter()
            .map(|m| m.split(" (").next().unwrap_or_default().to_string())
            .collect();
        let _ = write!(end, "merge commits on main: {}", merges.join(" | "));
        Some(end)
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn merges_land_once_in_order_whatever_write_the_operator_dies_at() {
    crash_everywhere(Merged).await;
}
