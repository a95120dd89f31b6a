//! The overseer loop in real containers: a TUI builder (a scripted CLI in tmux under
//! the shim, in the agent test image) idles past idleAfter; the operator wakes its
//! overseer by exec through the kubelet; the overseer peeks (the builder's real pod
//! log) and sends direction; the builder resumes and runs `overseer loop done`.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use overseer::agent::{Agent, AgentPhase};

use crate::release::{agent_image, create, install, namespace, read_in_pod};
use crate::support::cluster::{repo_root, wait_in};

/// The builder's idleAfter: the loop's one deliberate wait.
const IDLE_AFTER: f64 = 3.0;

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn the_overseer_wakes_reads_and_directs_its_builder_in_real_containers() {
    let ns = namespace("loop").await;
    install(&ns).await;
    let image = agent_image();
    create::<Agent>(
        &ns,
        &format!(
            "{{apiVersion: overseer.dev/v1alpha1, kind: Agent, metadata: {{name: lead}},
              spec: {{role: overseer, oversees: [builder], runtime: {{name: claude, image: '{image}'}},
                      podTemplate: {{env: [{{name: FAKE_AGENT, value: tui-overseer}}]}}}}}}"
        ),
    )
    .await;
    create::<Agent>(
        &ns,
        &format!(
            "{{apiVersion: overseer.dev/v1alpha1, kind: Agent, metadata: {{name: builder}},
              spec: {{overseer: lead, runtime: {{name: claude, image: '{image}'}},
                      loop: {{enabled: true, interval: 1s, idleAfter: {IDLE_AFTER}s, cooldown: 1m}},
                      podTemplate: {{env: [{{name: FAKE_AGENT, value: tui-builder}}]}}}}}}"
        ),
    )
    .await;

    let agents: Api<Agent> = ns.api();
    let done = wait_in(&ns, "the builder Done", Duration::from_secs(180), || {
        let agents = agents.clone();
        async move {
            let agent = agents.get("builder").await.ok()?;
            (agent.status.as_ref()?.phase == Some(AgentPhase::Done)).then_some(agent)
        }
    })
    .await;
    let status = done.status.unwrap();
    assert_eq!(status.loop_.unwrap().wakes, 1, "one wake");
    assert_eq!(
        status.last_message.unwrap().excerpt,
        "continue: add the missing tests"
    );

    // What the scripted CLIs recorded inside their containers (read through exec).
    let builder_log = read_in_pod(&ns, "builder-1", "/tmp/fake/fake.log");
    let lead_log = read_in_pod(&ns, "lead-1", "/tmp/fake/fake.log");
    let got: Vec<&str> = builder_log
        .lines()
        .filter(|l| l.starts_with("got "))
        .collect();
    if got.len() != 1 {
        // The builder's shim and the operators say who typed what, and when.
        panic!("one message: {builder_log}\n{}", ns.dump().await);
    }
    assert!(
        got[0].ends_with(" continue: add the missing tests"),
        "{builder_log}"
    );
    assert!(builder_log.contains("loop done exit 0"), "{builder_log}");
    assert!(
        lead_log.contains("peek exit 0") && lead_log.contains("send exit 0"),
        "{lead_log}"
    );
    let peeked = read_in_pod(&ns, "lead-1", "/tmp/fake/peek-builder.txt");
    assert!(
        peeked.contains("building step 3") && peeked.contains("tests still missing"),
        "the overseer read the builder's pod log: {peeked}"
    );
    let pods: Api<Pod> = ns.api();
    for name in ["builder-1", "lead-1"] {
        let node = pods
            .get(name)
            .await
            .unwrap()
            .spec
            .unwrap()
            .node_name
            .unwrap_or_default();
        println!("e2e[{}]: {name} ran on node {node}", ns.name);
    }

    // The hops, from the containers' own clocks, beside the kwok loop test's.
    let idle = stamp(&builder_log, "idle ");
    let woken = stamp(&lead_log, "woken ");
    let received = stamp(&builder_log, "got ");
    let real = [
        woken - idle - IDLE_AFTER,
        received - woken,
        received - idle - IDLE_AFTER,
    ];
    let kwok = std::fs::read_to_string(repo_root().join("target/test-logs/loop-hops.txt")).ok();
    let kwok: Vec<Option<f64>> = (0..3)
        .map(|i| {
            let line = kwok.as_deref()?.lines().nth(i)?;
            line.rsplit(": ").next()?.trim_end_matches('s').parse().ok()
        })
        .collect();
    let hops = [
        "idle past idleAfter -> wake read by the overseer",
        "wake read -> peek, send, direction read by the builder",
        "idle past idleAfter -> builder working again",
    ];
    let mut report = String::from("hop | real node | kwok (same run)\n");
    for ((hop, real), kwok) in hops.iter().zip(real).zip(kwok) {
        let kwok = kwok.map_or("not run".into(), |k| format!("{k:.2}s"));
        report.push_str(&format!("{hop} | {real:.2}s | {kwok}\n"));
    }
    println!("e2e[{}]: overseer loop hops\n{report}", ns.name);
    let logs = repo_root().join("target/test-logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("e2e-loop-hops.txt"), report).unwrap();
}

/// The epoch-second stamp on the first line of `log` that starts with `prefix`.
fn stamp(log: &str, prefix: &str) -> f64 {
    log.lines()
        .find_map(|l| {
            l.strip_prefix(prefix)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no {prefix:?} line in {log}"))
}
