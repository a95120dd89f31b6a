//! What one idle in-loop agent costs the API server, on the real control plane, at the
//! default loop settings (interval 15s, idleAfter 60s, cooldown 2m): every write to its
//! Agent, to its overseer's Agent and to Events, counted exactly from watch events over
//! a window that holds two wakes. Needs the test cluster: `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::events::v1::Event;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use overseer::agent::{ActivityState, Agent};
use serde_json::json;
use support::cluster::{create_agent, operator, setup};
use support::shim::pod_shim_with;

/// Long enough for the wake at idleAfter and the next one a cooldown later.
const WINDOW: Duration = Duration::from_secs(200);
const DEFAULT_INTERVAL: &str = "15s";

/// Every (kind/name, resourceVersion) seen by a watch, with when it was seen.
type Seen = Arc<Mutex<Vec<(Instant, String, String)>>>;

fn count_writes<K>(api: Api<K>, seen: Seen)
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Some(Ok(event)) = events.next().await {
            if let watcher::Event::Apply(object) | watcher::Event::InitApply(object) = event {
                let kind = K::kind(&K::DynamicType::default()).to_string();
                let version = object.resource_version().unwrap_or_default();
                let key = format!("{kind}/{}", object.name_any());
                seen.lock().unwrap().push((Instant::now(), key, version));
            }
        }
    });
}

/// Distinct versions of `key` (or of every Event when `key` is "Event") after `from`.
fn writes(seen: &Seen, from: Instant, key: &str) -> usize {
    let seen = seen.lock().unwrap();
    seen.iter()
        .filter(|(at, k, _)| {
            *at >= from && (k == key || (key == "Event" && k.starts_with("Event/")))
        })
        .map(|(_, k, v)| (k.clone(), v.clone()))
        .collect::<BTreeSet<_>>()
        .len()
}

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
    let agent = writes(&seen, from, "Agent/b");
    let overseer = writes(&seen, from, "Agent/lead");
    let events = writes(&seen, from, "Event");
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
