//! What file claims, the fleet monitor and resource reports add to a swarm at rest, on
//! the real control plane: two swarms side by side in one namespace, each an overseer
//! and two builders idle at their prompts (their shims report every 15 s, resources
//! included). One has nothing more (the baseline); the other also holds claims (each
//! builder two paths) and has a monitor that patrols every minute. Every write to their
//! Agents, Swarms, ConfigMaps and Events is counted from watch events over a window
//! that holds two patrols. Needs the test cluster: `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use overseer::agent::{ActivityState, Agent};
use overseer::swarm::Swarm;
use serde_json::json;
use support::cluster::{
    TestNamespace, agent_account, create_object, operator, overseer_as, said, setup,
};
use support::measure::{Seen, count_writes, writes};
use support::shim::{Shim, pod_shim_with};

/// Two patrols of a monitor that patrols every minute, after its first.
const WINDOW: Duration = Duration::from_secs(130);
const INTERVAL: &str = "15s";

async fn swarm(ns: &TestNamespace, name: &str, monitor: bool) -> Vec<Shim> {
    let mut agents = vec![
        json!({"name": "a", "role": "builder"}),
        json!({"name": "b", "role": "builder"}),
    ];
    let mut members = vec!["overseer", "a", "b"];
    if monitor {
        agents.push(json!({"name": "watch", "role": "monitor", "loop": {"interval": INTERVAL, "monitorEvery": "1m"}}));
        members.push("watch");
    }
    let mut shims = Vec::new();
    for member in members {
        let agent = format!("{name}-{member}");
        let shim = pod_shim_with(
            ns,
            &agent,
            1,
            "pi",
            "tui-works-then-idles.sh",
            &[],
            INTERVAL,
        );
        shims.push(shim.await);
    }
    create_object::<Swarm>(
        ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": name},
            "spec": {
                "defaults": {
                    "runtime": {"name": "pi", "mode": "tui", "image": "example.com/pi:1"},
                    "loop": {"interval": INTERVAL}
                },
                "overseer": {"prompt": "lead"},
                "agents": agents
            }
        }),
    )
    .await;
    shims
}

fn claim(ns: &TestNamespace, member: &str, paths: &[&str]) {
    let mut args = vec!["claim"];
    args.extend_from_slice(paths);
    args.extend_from_slice(&["--agent", member]);
    let out = overseer_as(ns, Some(&agent_account(ns, member)), &args);
    assert!(out.status.success(), "{}", said(&out));
}

#[tokio::main]
async fn main() {
    let ns = setup("bench-swarm-rest").await;
    let _operator = operator(&ns);
    let bare = swarm(&ns, "bare", false).await;
    let full = swarm(&ns, "full", true).await;
    for shim in bare.iter().chain(&full) {
        shim.wait_for(ActivityState::Idle).await;
    }
    claim(&ns, "full-a", &["src/a.rs", "docs/a.md"]);
    claim(&ns, "full-b", &["src/b.rs", "docs/b.md"]);
    let seen: Seen = Arc::default();
    count_writes(ns.api::<Agent>(), seen.clone());
    count_writes(ns.api::<Swarm>(), seen.clone());
    count_writes(ns.api::<ConfigMap>(), seen.clone());
    count_writes(ns.api::<Event>(), seen.clone());
    // Settled: the claims answered, every first report in.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let from = Instant::now();
    tokio::time::sleep(WINDOW).await;

    let watch = ns.api::<Agent>().get("full-watch").await.unwrap();
    let patrols = watch.status.and_then(|s| s.patrol).map_or(0, |p| p.patrols);
    let hour = |n: usize, agents: f64| n as f64 * 3600.0 / WINDOW.as_secs_f64() / agents;
    let of = |swarm: &'static str| {
        let agents = writes(&seen, from, |k| k.starts_with(&format!("Agent/{swarm}-")));
        let status = writes(&seen, from, |k| k == format!("Swarm/{swarm}"));
        let maps = writes(&seen, from, |k| {
            k.starts_with(&format!("ConfigMap/{swarm}-"))
        });
        let events = writes(&seen, from, |k| {
            k.starts_with("Event/") && k.contains(swarm)
        });
        format!("{agents} Agent writes, {status} Swarm, {maps} ConfigMap and {events} Event writes")
    };
    let builders = |swarm: &str| {
        writes(&seen, from, |k| {
            k == format!("Agent/{swarm}-a") || k == format!("Agent/{swarm}-b")
        })
    };
    let monitor = writes(&seen, from, |k| k == "Agent/full-watch");
    println!(
        "a swarm at rest, {:.0} s, shims reporting every {INTERVAL} with resources:\n\
         - baseline (overseer, 2 builders): {}\n\
         - with claims and a monitor (overseer, 2 builders holding 2 claims each, a monitor patrolling every minute): {}\n\
         - the builders: {} writes with claims held, {} without ({:.0} and {:.0} per agent per hour)\n\
         - the monitor: {monitor} writes to its Agent over {patrols} patrols",
        WINDOW.as_secs_f64(),
        of("bare"),
        of("full"),
        builders("full"),
        builders("bare"),
        hour(builders("full"), 2.0),
        hour(builders("bare"), 2.0),
    );
}
