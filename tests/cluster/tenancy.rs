//! Tenants of one operator: what one namespace does must not slow another. These
//! tests run an operator that watches every namespace, so `make test` runs them alone
//! (their names start with `cluster_wide`), after the kwok suite.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::support::cluster::{
    Operator, TestNamespace, create_agent, create_object, setup, wait_in,
};
use crate::support::shim::{route_exec_to, wait_exec_routed};

const WAIT: Duration = Duration::from_secs(60);

/// A socket that takes every connection and answers none: an agent whose exec hangs
/// (its shim's socket replaced by one that never answers). Counts what it holds.
fn hanging_socket(dir: &str) -> (PathBuf, Arc<AtomicUsize>) {
    let dir = crate::support::cluster::repo_root()
        .join("target/test-shim")
        .join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("hang-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let held = Arc::new(AtomicUsize::new(0));
    let count = held.clone();
    tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            open.push(stream);
        }
    });
    (path, held)
}

async fn finish(ns: &TestNamespace, pod: &str) {
    let pods: Api<Pod> = ns.api();
    wait_in(ns, pod, WAIT, || async {
        pods.get_opt(pod).await.ok().flatten()
    })
    .await;
    let done = json!({"metadata": {"annotations": {"kwok.overseer.dev/outcome": "Succeeded"}}});
    pods.patch(pod, &PatchParams::default(), &Patch::Merge(&done))
        .await
        .unwrap();
}

async fn wake_failures(ns: &TestNamespace) -> usize {
    ns.api::<Event>()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("WakeFailed"))
        .count()
}

/// Twelve goals in one namespace tell an overseer whose exec hangs; a goal in another
/// namespace advances its next step while every one of those execs still hangs. When
/// delivery ran inside the reconcile, the hanging execs held every one of the Goal
/// controller's slots, and the other namespace's goal waited for their deadline.
#[tokio::test]
#[ignore = "needs the test cluster: run alone by `make test` (an operator of every namespace)"]
async fn cluster_wide_a_hanging_agent_in_one_namespace_delays_no_goal_in_another() {
    let noisy = setup("tenancy-noisy").await;
    let quiet = setup("tenancy-quiet").await;
    let _operator = Operator::start(&["--input-command", env!("CARGO_BIN_EXE_overseer")]);
    let (socket, held) = hanging_socket(&noisy.name);
    route_exec_to(&noisy, "lead-1", &socket).await;
    create_agent(
        &noisy,
        "lead",
        json!({"role": "overseer", "oversees": ["*"]}),
    )
    .await;
    let agents: Api<overseer::agent::Agent> = noisy.api();
    wait_in(&noisy, "the lead's pod ready", WAIT, || async {
        agents.get("lead").await.ok()?.status?.ready_pod().map(drop)
    })
    .await;
    wait_exec_routed(&noisy, "lead-1", &socket).await;
    let goal = |name: &str, steps: &[&str], overseer: Option<&str>| {
        let mut spec = json!({"defaults": {"runtime": {"name": "pi", "image": "example.com/pi:1"}},
            "steps": steps.iter().map(|s| json!({"name": s, "action": format!("Do {s}")})).collect::<Vec<_>>()});
        if let Some(overseer) = overseer {
            spec["effort"] = json!("high");
            spec["overseer"] = json!(overseer);
        }
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
            "metadata": {"name": name}, "spec": spec})
    };
    const NOISY: usize = 12;
    for i in 0..NOISY {
        create_object::<overseer::goal::Goal>(
            &noisy,
            goal(&format!("g{i}"), &["a", "b"], Some("lead")),
        )
        .await;
    }
    for i in 0..NOISY {
        finish(&noisy, &format!("g{i}-s0-a1")).await;
    }
    wait_in(&noisy, "the overseer's execs hanging", WAIT, || async {
        (held.load(Ordering::SeqCst) >= 2).then_some(())
    })
    .await;
    create_object::<overseer::goal::Goal>(&quiet, goal("calm", &["a", "b"], None)).await;
    finish(&quiet, "calm-s0-a1").await;
    let pods: Api<Pod> = quiet.api();
    wait_in(&quiet, "the quiet goal's next step", WAIT, || async {
        pods.get_opt("calm-s1-a1").await.ok().flatten()
    })
    .await;
    // Every exec into the hanging overseer is still open: the quiet goal did not wait
    // for any of them to give up.
    assert_eq!(
        wake_failures(&noisy).await,
        0,
        "a hanging exec ended before the quiet goal went on"
    );
    let hanging = held.load(Ordering::SeqCst);
    assert!(
        hanging <= overseer::delivery::slots::PER_NAMESPACE,
        "{hanging} execs into one namespace at once"
    );
    // The noisy namespace's own goals go on too: their next steps start, whatever
    // their overseer's exec does.
    let noisy_pods: Api<Pod> = noisy.api();
    wait_in(&noisy, "the noisy goals' next steps", WAIT, || async {
        let made = noisy_pods.list(&ListParams::default()).await.ok()?.items;
        let next = made
            .iter()
            .filter(|p| {
                p.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.ends_with("-s1-a1"))
            })
            .count();
        (next == NOISY).then_some(())
    })
    .await;
}

/// Agents in four namespaces (`OVERSEER_HANGING_NAMESPACES`) whose execs all hang,
/// each with a message to deliver (`OVERSEER_HANGING` of them in all, 8 by default:
/// the controller's `--concurrency`);
/// another tenant's send is delivered, and its goal's next step starts, within a few
/// seconds while every one of those execs still hangs. When deliveries ran inside the
/// Agent controller's reconciles, eight hanging execs held all eight of its slots and
/// the other tenant waited for their 60 s deadline.
#[tokio::test]
#[ignore = "needs the test cluster: run alone by `make test` (an operator of every namespace)"]
async fn cluster_wide_hanging_deliveries_in_four_namespaces_delay_no_other_tenant() {
    use crate::support::shim::pod_shim;
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(default)
    };
    // Measured also with more of them, in more namespaces (docs/security.md).
    let hanging = setting("OVERSEER_HANGING", 8);
    let namespaces = setting("OVERSEER_HANGING_NAMESPACES", 4);
    let per_namespace = hanging.div_ceil(namespaces);
    let mut noisy = Vec::new();
    for i in 0..namespaces {
        noisy.push(setup(&format!("tenancy-hang{i}")).await);
    }
    let quiet = setup("tenancy-calm").await;
    let _operator = Operator::start(&["--input-command", env!("CARGO_BIN_EXE_overseer")]);
    let mut holds = Vec::new();
    for ns in &noisy {
        let (socket, held) = hanging_socket(&ns.name);
        for a in 0..per_namespace {
            route_exec_to(ns, &format!("a{a}-1"), &socket).await;
            create_agent(ns, &format!("a{a}"), json!({})).await;
        }
        holds.push((socket, held));
    }
    for (ns, (socket, _)) in noisy.iter().zip(&holds) {
        let agents: Api<overseer::agent::Agent> = ns.api();
        for a in 0..per_namespace {
            let name = format!("a{a}");
            wait_in(ns, "the agent's pod ready", WAIT, || async {
                agents.get(&name).await.ok()?.status?.ready_pod().map(drop)
            })
            .await;
        }
        wait_exec_routed(ns, "a0-1", socket).await;
        for a in 0..per_namespace {
            let sent = send(ns, &format!("a{a}"), "0");
            assert!(
                sent.status.success(),
                "{}",
                String::from_utf8_lossy(&sent.stderr)
            );
        }
    }
    wait_in(
        &quiet,
        "every noisy namespace's execs hanging",
        WAIT,
        || async {
            holds
                .iter()
                .all(|(_, held)| held.load(Ordering::SeqCst) >= per_namespace.min(2))
                .then_some(())
        },
    )
    .await;
    // The other tenant: a working agent and a goal.
    let _calm = pod_shim(&quiet, "calm", 1, "pi", "tui-works-then-idles.sh").await;
    let created = std::time::Instant::now();
    create_agent(&quiet, "calm", json!({})).await;
    let agents: Api<overseer::agent::Agent> = quiet.api();
    wait_in(&quiet, "the calm agent's pod ready", WAIT, || async {
        agents.get("calm").await.ok()?.status?.ready_pod().map(drop)
    })
    .await;
    let pod_took = created.elapsed();
    let started = std::time::Instant::now();
    let sent = send(&quiet, "calm", "60");
    let send_took = started.elapsed();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    create_object::<overseer::goal::Goal>(
        &quiet,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Goal", "metadata": {"name": "steady"},
            "spec": {"defaults": {"runtime": {"name": "pi", "image": "example.com/pi:1"}},
                "steps": [{"name": "a", "action": "Do a"}, {"name": "b", "action": "Do b"}]}}),
    )
    .await;
    finish(&quiet, "steady-s0-a1").await;
    let finished = std::time::Instant::now();
    let pods: Api<Pod> = quiet.api();
    wait_in(&quiet, "the goal's next step", WAIT, || async {
        pods.get_opt("steady-s1-a1").await.ok().flatten()
    })
    .await;
    let step_took = finished.elapsed();
    let still: usize = holds.iter().map(|(_, h)| h.load(Ordering::SeqCst)).sum();
    println!(
        "hanging deliveries {hanging} ({per_namespace} in each of {namespaces} namespaces, {still} execs held): \
         another tenant's agent had a ready pod {pod_took:?} after it was created, its send was delivered in \
         {send_took:?}, its next step created {step_took:?} after the step ended"
    );
    // Every one of those execs still hangs: none gave up before the other tenant went on.
    for ns in &noisy {
        let failed = ns
            .api::<Event>()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|e| e.reason.as_deref() == Some("SendFailed"))
            .count();
        assert_eq!(
            failed, 0,
            "a hanging exec ended before the other tenant went on"
        );
    }
    for (_, held) in &holds {
        let held = held.load(Ordering::SeqCst);
        assert!(
            held <= overseer::delivery::slots::PER_NAMESPACE,
            "{held} execs into one namespace at once"
        );
    }
    let few = Duration::from_secs(10);
    assert!(pod_took < few, "the other tenant's pod waited {pod_took:?}");
    assert!(
        send_took < few,
        "the other tenant's send took {send_took:?}"
    );
    assert!(
        step_took < few,
        "the other tenant's step waited {step_took:?}"
    );
}

/// `overseer send AGENT` as the test's admin, waiting up to `wait` for its delivery.
fn send(ns: &TestNamespace, agent: &str, wait: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["send", agent, "keep going", "--wait", wait])
        .env("KUBECONFIG", crate::support::cluster::kubeconfig_path())
        .env("OVERSEER_NAMESPACE", &ns.name)
        .env_remove("OVERSEER_AGENT")
        .output()
        .unwrap()
}
