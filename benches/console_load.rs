//! The console at 500 agents in 100 swarms, beside the same console on an empty
//! namespace (the baseline), in one run on the local control plane and one headless
//! chromium: the first load of the runs page (until the last swarm shows), of a swarm's
//! page and of an agent's page; how long a status change takes to show on an open page
//! (the API server's answer to the patch until the page shows it, 10 changes); and the
//! console process's memory after it all. Needs the test cluster and chromium:
//! `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Patch, PatchParams};
use overseer::agent::Agent;
use overseer::swarm::Swarm;
use serde_json::json;
use support::browser::{Browser, Console};
use support::cluster::{TestNamespace, create_object, setup};

const SWARMS: usize = 100;
const MEMBERS: usize = 5;
const CHANGES: usize = 10;
const WAIT: Duration = Duration::from_secs(60);

async fn fill(ns: &TestNamespace) {
    let objects = (0..SWARMS).flat_map(|s| {
        let swarm = format!("swarm-{s:03}");
        let mut objects = vec![
            json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": swarm},
            "spec": {"defaults": {"runtime": {"name": "pi", "image": "example.com/pi:1"}}}}),
        ];
        objects.extend((0..MEMBERS).map(|m| {
            json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
                "metadata": {"name": format!("{swarm}-agent-{m}")},
                "spec": {"role": "builder", "swarm": swarm,
                         "runtime": {"name": "pi", "image": "example.com/pi:1"}}})
        }));
        objects
    });
    futures::stream::iter(objects)
        .for_each_concurrent(16, |object| async move {
            match object["kind"].as_str() {
                Some("Swarm") => drop(create_object::<Swarm>(ns, object).await),
                _ => drop(create_object::<Agent>(ns, object).await),
            }
        })
        .await;
}

struct Figures {
    runs: Duration,
    swarm: Duration,
    agent: Duration,
    changes: Vec<Duration>,
    rss_kib: u64,
}

fn rss_kib(console: &Console) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", console.child.id()))
        .expect("the console's /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Loads the pages of `ns` (whose last swarm is `last`, with agent `agent`) and
/// changes `agent`'s progress `CHANGES` times on its open page.
async fn measure(ns: &TestNamespace, browser: &Browser, last: &str, agent: &str) -> Figures {
    let console = Console::start(ns, None).await;
    let load = |path: String, needle: String| {
        let url = format!("{}{path}", console.url);
        async move {
            let started = Instant::now();
            browser.goto("about:blank").await;
            browser.goto(&url).await;
            browser.wait_for_text(&needle, WAIT).await;
            started.elapsed()
        }
    };
    let runs = load(String::new(), last.to_string()).await;
    let swarm_of = agent.rsplit_once("-agent-").map_or(agent, |(s, _)| s);
    let swarm = load(format!("#/swarm/{}/{swarm_of}", ns.name), agent.to_string()).await;
    let agent_page = load(
        format!("#/agent/{}/{agent}", ns.name),
        format!("Message to {agent}"),
    )
    .await;
    let agents = ns.api::<Agent>();
    let mut changes = Vec::new();
    for n in 0..CHANGES {
        let marker = format!("progress mark {n}");
        let status = json!({"status": {"attempt": 1, "activity": {"state": "working", "attempt": 1,
            "summary": marker, "since": "2026-12-07T10:00:00Z"}}});
        agents
            .patch_status(agent, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("patch the agent's status");
        let started = Instant::now();
        browser.wait_for_text(&marker, WAIT).await;
        changes.push(started.elapsed());
    }
    Figures {
        runs,
        swarm,
        agent: agent_page,
        changes,
        rss_kib: rss_kib(&console),
    }
}

fn line(name: &str, f: &Figures) -> String {
    let mut changes = f.changes.clone();
    changes.sort();
    let ms = |d: Duration| d.as_millis();
    format!(
        "{name}: runs page {} ms, swarm page {} ms, agent page {} ms; a change shown in p50 {} ms, max {} ms; console RSS {:.1} MiB",
        ms(f.runs),
        ms(f.swarm),
        ms(f.agent),
        ms(changes[changes.len() / 2]),
        ms(*changes.last().unwrap()),
        f.rss_kib as f64 / 1024.0
    )
}

#[tokio::main]
async fn main() {
    let empty = setup("bench-console-empty").await;
    create_object::<Swarm>(
        &empty,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "solo"},
               "spec": {"defaults": {"runtime": {"name": "pi", "image": "example.com/pi:1"}}}}),
    )
    .await;
    create_object::<Agent>(
        &empty,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
               "metadata": {"name": "solo-agent-0"},
               "spec": {"role": "builder", "swarm": "solo",
                        "runtime": {"name": "pi", "image": "example.com/pi:1"}}}),
    )
    .await;
    let full = setup("bench-console-full").await;
    let started = Instant::now();
    fill(&full).await;
    println!(
        "created {SWARMS} swarms and {} agents in {:.1} s",
        SWARMS * MEMBERS,
        started.elapsed().as_secs_f64()
    );
    let browser = Browser::start().await;
    let baseline = measure(&empty, &browser, "solo", "solo-agent-0").await;
    let loaded = measure(&full, &browser, "swarm-099", "swarm-050-agent-2").await;
    println!("{}", line("baseline, 1 agent in 1 swarm", &baseline));
    println!(
        "{}",
        line(
            &format!("{} agents in {SWARMS} swarms", SWARMS * MEMBERS),
            &loaded
        )
    );
}
