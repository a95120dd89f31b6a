//! Idle-past-threshold → delivered wake, on the real control plane: a builder's fake
//! CLI (under a real shim) goes silent; the time from its last output plus `idleAfter`
//! to its overseer's fake CLI reading the wake is measured, over many stops. Also
//! counts the builder Agent's writes. Needs the test cluster: `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use overseer::agent::Agent;
use serde_json::json;
use support::cluster::{create_agent, operator, setup};
use support::shim::{pod_shim, stamps};

const STOPS: usize = 12;
const IDLE_AFTER: f64 = 2.0;

#[tokio::main]
async fn main() {
    let ns = setup("bench-wake").await;
    let _operator = operator(&ns);
    let lead = pod_shim(&ns, "lead", 1, "pi", "bench-overseer.sh").await;
    let builder = pod_shim(&ns, "b", 1, "pi", "bench-builder.sh").await;
    create_agent(&ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
    create_agent(
        &ns,
        "b",
        json!({"overseer": "lead", "loop": {"enabled": true,
        "interval": "1s", "idleAfter": "2s", "cooldown": "3s", "maxNudges": 10000}}),
    )
    .await;
    let started = Instant::now();
    let mut versions = std::collections::BTreeSet::new();
    while stamps(&builder.fake_log(), "stop ").len() <= STOPS {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "too few wakes:\n{}",
            lead.fake_log()
        );
        if let Ok(agent) = ns.api::<Agent>().get("b").await {
            versions.insert(agent.metadata.resource_version.unwrap_or_default());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let stops = stamps(&builder.fake_log(), "stop ");
    let wakes = stamps(&lead.fake_log(), "wake ");
    // The first wake after each stop answers it (later ones repeat after the cooldown).
    let mut latencies: Vec<f64> = stops
        .iter()
        .zip(stops.iter().skip(1).map(Some).chain([None]))
        .filter_map(|(stop, next)| {
            let wake = wakes
                .iter()
                .find(|w| **w > *stop && next.is_none_or(|n| **w < *n))?;
            Some(wake - (stop + IDLE_AFTER))
        })
        .collect();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pick = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "idle-past-threshold → wake read by the overseer CLI, {} stops: p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        latencies.len(),
        pick(0.5) * 1000.0,
        pick(0.9) * 1000.0,
        pick(0.99) * 1000.0,
        latencies.last().unwrap() * 1000.0
    );
    println!(
        "builder Agent writes seen (sampled every 100 ms, a lower bound): {} in {elapsed:.0} s, {:.0} per hour at interval 1s",
        versions.len(),
        versions.len() as f64 * 3600.0 / elapsed
    );
}
