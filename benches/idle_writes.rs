//! What one idle in-loop agent costs the API server, on the real control plane, at the
//! default loop settings (interval 15s, idleAfter 60s, cooldown 2m): every write to its
//! Agent, to its overseer's Agent and to Events, counted exactly from watch events over
//! a window that holds two wakes. Needs the test cluster: `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::events::v1::Event;
use overseer::agent::{ActivityState, Agent};
use serde_json::json;
use support::cluster::{create_agent, operator, setup};
use support::measure::{Seen, count_writes, writes};
use support::shim::pod_shim_with;

/// Long enough for the wake at idleAfter and the next one a cooldown later.
const WINDOW: Duration = Duration::from_secs(200);
const DEFAULT_INTERVAL: &str = "15s";

#[tokio::main]
async fn main() {
    let ns = setup("bench-idle-writes").await;
    let _operator = operator(&ns);
    let _lead = pod_shim_with(
        &ns,
        "lead",
        1,
        "pi",
        "bench-overseer.sh",
        &[],
        DEFAULT_INTERVAL,
    )
    .await;
    let builder = pod_shim_with(
        &ns,
        "b",
        1,
        "pi",
        "tui-works-then-idles.sh",
        &[],
        DEFAULT_INTERVAL,
    )
    .await;
    create_agent(&ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
    create_agent(
        &ns,
        "b",
        json!({"overseer": "lead", "loop": {"enabled": true}}),
    )
    .await;
    let seen: Seen = Arc::default();
    count_writes(ns.api::<Agent>(), seen.clone());
    count_writes(ns.api::<Event>(), seen.clone());
    builder.wait_for(ActivityState::Idle).await;
    let from = Instant::now();
    tokio::time::sleep(WINDOW).await;

    let status = ns.api::<Agent>().get("b").await.unwrap().status.unwrap();
    let wakes = status.loop_.map_or(0, |l| l.wakes);
    let agent = writes(&seen, from, |k| k == "Agent/b");
    let overseer = writes(&seen, from, |k| k == "Agent/lead");
    let events = writes(&seen, from, |k| k.starts_with("Event/"));
    let window = WINDOW.as_secs_f64();
    let per_hour = |n: usize| n as f64 * 3600.0 / window;
    println!(
        "one idle in-loop agent, default loop settings, {window:.0} s, {wakes} wake(s) to its overseer: \
         {agent} writes to its Agent, {overseer} to the overseer's Agent, {events} Event writes \
         (per hour at this rate: {:.0}, {:.0}, {:.0}; shim heartbeats alone: {:.0} per agent)",
        per_hour(agent),
        per_hour(overseer),
        per_hour(events),
        3600.0 / 15.0
    );
}
