//! Mail between the members of one swarm of 50, on the real control plane, beside the
//! baseline of the same run: `overseer send` (the operator's inbox path, one message
//! to each member). Each member is a scripted CLI under a real shim, idle at its
//! prompt. Measured, per message: the command started → the recipient's CLI reading
//! the line typed into it (the message itself for `send`, the notice for mail), and
//! the operator's API writes per message. Needs the test cluster: `make bench`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use overseer::agent::Agent;
use serde_json::json;
use support::cluster::{TestNamespace, create_object, kubeconfig_path, operator, setup};
use support::measure::sum_of;
use support::shim::{Shim, pod_shim_with};

const MEMBERS: usize = 50;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Runs `overseer ARGS` as the test's admin, not waiting for it.
fn overseer(ns: &TestNamespace, args: &[String]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(args)
        .env("KUBECONFIG", kubeconfig_path())
        .env("OVERSEER_NAMESPACE", &ns.name)
        .env_remove("OVERSEER_AGENT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run overseer")
}

/// Sends one message to each member (`command` makes the arguments for member i),
/// then waits until each recipient read a line holding `needle`; the latencies.
async fn round(
    ns: &TestNamespace,
    shims: &[Shim],
    needle: &str,
    command: impl Fn(usize) -> Vec<String>,
) -> Vec<f64> {
    let before: Vec<usize> = shims
        .iter()
        .map(|s| s.fake_log().matches(needle).count())
        .collect();
    let mut started = Vec::new();
    let mut children = Vec::new();
    for i in 0..shims.len() {
        started.push(now());
        children.push(overseer(ns, &command(i)));
    }
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut latencies = vec![None; shims.len()];
    while latencies.iter().any(Option::is_none) {
        if Instant::now() > deadline {
            let read = latencies.iter().filter(|l| l.is_some()).count();
            let missing: Vec<String> = latencies
                .iter()
                .enumerate()
                .filter(|(_, l)| l.is_none())
                .map(|(i, _)| format!("{i}: {:?}", shims[i].fake_log()))
                .take(3)
                .collect();
            panic!(
                "{read} of {} members read a line holding {needle:?}; {missing:?}",
                shims.len()
            );
        }
        for (i, shim) in shims.iter().enumerate() {
            if latencies[i].is_some() {
                continue;
            }
            let log = shim.fake_log();
            // "got TIME LINE": the time each line holding `needle` was read.
            let got: Vec<f64> = log
                .lines()
                .filter(|l| l.contains(needle))
                .filter_map(|l| l.strip_prefix("got ")?.split(' ').next()?.parse().ok())
                .collect();
            if got.len() > before[i] {
                latencies[i] = Some(got[before[i]] - started[i]);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for mut child in children {
        let _ = child.wait();
    }
    let mut latencies: Vec<f64> = latencies.into_iter().flatten().collect();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    latencies
}

fn report(what: &str, latencies: &[f64], writes: f64) {
    let pick = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{what}, {} messages: p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, max {:.0} ms; {:.1} API writes per message",
        latencies.len(),
        pick(0.5) * 1000.0,
        pick(0.9) * 1000.0,
        pick(0.99) * 1000.0,
        latencies.last().unwrap() * 1000.0,
        writes / latencies.len() as f64
    );
}

#[tokio::main]
async fn main() {
    let ns = setup("bench-mail").await;
    let operator = operator(&ns);
    let names: Vec<String> = (0..MEMBERS).map(|i| format!("m{i:02}")).collect();
    let mut shims = Vec::new();
    for name in &names {
        let agent = format!("team-{name}");
        shims.push(pod_shim_with(&ns, &agent, 1, "pi", "bench-mail-member.sh", &[], "5s").await);
    }
    let agents: Vec<serde_json::Value> = names
        .iter()
        .map(|n| json!({"name": n, "role": "builder"}))
        .collect();
    create_object::<overseer::swarm::Swarm>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm", "metadata": {"name": "team"},
               "spec": {"defaults": {"runtime": {"name": "pi", "mode": "tui", "image": "example.com/pi:1"}},
                        "coordination": {"mail": {"perMinute": 600}},
                        "agents": agents}}),
    )
    .await;
    // Every member ready and idle at its prompt.
    let api = ns.api::<Agent>();
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let list = api.list(&Default::default()).await.unwrap();
        let idle = list
            .items
            .iter()
            .filter(|a| {
                a.status
                    .as_ref()
                    .is_some_and(|s| s.is_ready() && s.between_turns())
            })
            .count();
        if idle >= MEMBERS {
            break;
        }
        assert!(Instant::now() < deadline, "only {idle} members idle");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let writes = || async {
        sum_of(
            &operator.metrics().await.unwrap(),
            "overseer_api_writes_total{",
        )
    };

    let w0 = writes().await;
    let sends = round(&ns, &shims, "direct ", |i| {
        vec![
            "send".into(),
            format!("team-{}", names[i]),
            "direct word".into(),
            "--wait".into(),
            "0".into(),
        ]
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let w1 = writes().await;
    // Each member mails the next one round the ring.
    let mails = round(&ns, &shims, "[overseer] mail:", |i| {
        let from = format!("team-{}", names[(i + MEMBERS - 1) % MEMBERS]);
        vec![
            "mail".into(),
            "--agent".into(),
            from,
            "send".into(),
            names[i].clone(),
            "--type".into(),
            "finding".into(),
            "--wait".into(),
            "0".into(),
            "a finding".into(),
        ]
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let w2 = writes().await;
    report(
        &format!("baseline `overseer send` to {MEMBERS} members"),
        &sends,
        w1 - w0,
    );
    report(
        &format!("mail between {MEMBERS} members (send -> notice read)"),
        &mails,
        w2 - w1,
    );
}
