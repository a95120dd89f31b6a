//! What decoding one Agent of a watch costs the operator: each watch event of an Agent is
//! decoded whole (at 10,000 quiet agents, 33 a second). The same recorded Agent (tests/fixtures/cache/agent.json, a quiet agent of the
//! 10,000-agent benchmark, managed fields included) is decoded as a watch event line,
//! side by side: as kube's `DeserializeGuard` decodes it (a value tree, cloned, then the
//! object from the clone), as `kubernetes::guard::Guarded` does (a JSON tree, then the
//! object from it), and bare (the `Agent` itself, no guard). Needs no cluster.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kube::core::{DeserializeGuard, WatchEvent};
use overseer::agent::Agent;
use overseer::kubernetes::guard::Guarded;
use serde::de::DeserializeOwned;

/// Events decoded per round, and rounds per way (the fastest round is kept).
const EVENTS: usize = 5_000;
const ROUNDS: usize = 5;

/// A watch event as the API server writes it: `type` first, then the object.
fn event_line() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cache/agent.json"
    );
    let agent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the recorded Agent"))
            .expect("JSON");
    format!(r#"{{"type":"MODIFIED","object":{agent}}}"#).into_bytes()
}

/// The fastest of `ROUNDS` rounds of decoding `EVENTS` events as `K`, per event.
fn per_event<K: DeserializeOwned>(line: &[u8]) -> Duration {
    (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..EVENTS {
                let event: WatchEvent<K> = serde_json::from_slice(line).expect("an event");
                black_box(event);
            }
            started.elapsed() / EVENTS as u32
        })
        .min()
        .unwrap()
}

fn main() {
    let line = event_line();
    let kube = per_event::<DeserializeGuard<Agent>>(&line);
    let ours = per_event::<Guarded<Agent>>(&line);
    let bare = per_event::<Agent>(&line);
    println!(
        "watch_decode: one Agent watch event of {} bytes, fastest of {ROUNDS} rounds of {EVENTS}",
        line.len()
    );
    println!("| decoded as | per event | against bare |");
    println!("|---|---:|---:|");
    for (way, took) in [
        ("kube's DeserializeGuard<Agent>", kube),
        ("kubernetes::guard::Guarded<Agent>", ours),
        ("Agent (no guard)", bare),
    ] {
        println!(
            "| {way} | {:.1} µs | {:.2}x |",
            took.as_secs_f64() * 1e6,
            took.as_secs_f64() / bare.as_secs_f64()
        );
    }
}
