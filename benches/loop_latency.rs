//! The whole loop, end to end, on the real control plane: an in-loop builder stops
//! at its prompt; once idle past `idleAfter` the operator wakes its overseer (a
//! scripted CLI under a real shim, as its own ServiceAccount), which runs `overseer
//! peek` and `overseer send`; the operator types the direction into the builder.
//! Measured: idle past the threshold → the builder reading the direction (working
//! again), over many rounds. Needs the test cluster: `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::cluster::{create_agent, operator, setup};
use support::shim::{overseer_shim, pod_shim, stamps};

const ROUNDS: usize = 15;
const IDLE_AFTER: f64 = 2.0;

#[tokio::main]
async fn main() {
    let ns = setup("bench-loop").await;
    let _operator = operator(&ns);
    let lead = overseer_shim(&ns, "lead").await;
    let builder = pod_shim(&ns, "b", 1, "pi", "bench-loop-builder.sh").await;
    create_agent(&ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
    create_agent(
        &ns,
        "b",
        json!({"overseer": "lead", "loop": {"enabled": true,
        "interval": "1s", "idleAfter": "2s", "cooldown": "1s", "maxNudges": 10000}}),
    )
    .await;
    let started = Instant::now();
    while stamps(&builder.fake_log(), "got ").len() < ROUNDS {
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "too few rounds:\nbuilder:\n{}\nlead:\n{}",
            builder.fake_log(),
            lead.fake_log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = builder.fake_log();
    let idles = stamps(&log, "idle ");
    let gots = stamps(&log, "got ");
    // Each message answers the idle spell just before it.
    let mut latencies: Vec<f64> = gots
        .iter()
        .filter_map(|got| {
            let idle = idles.iter().rev().find(|i| *i < got)?;
            Some(got - (idle + IDLE_AFTER))
        })
        .collect();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pick = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "idle past idleAfter → direction from the overseer read by the builder (working again), {} rounds: p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        latencies.len(),
        pick(0.5) * 1000.0,
        pick(0.9) * 1000.0,
        pick(0.99) * 1000.0,
        latencies.last().unwrap() * 1000.0
    );
}
