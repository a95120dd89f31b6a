//! A swarm's fleet monitor on the real control plane: its rights come from the swarm
//! that made it (it may read every member and peek their pods, never write to one,
//! never reach another swarm's pods; an agent that only names the role gets none),
//! and it is woken on its schedule with the fleet by state, between its turns, from
//! which it looks closer and escalates to the swarm's overseer.

use std::time::Duration;

use overseer::agent::{Agent, EscalationState};
use overseer::swarm::Swarm;
use serde_json::json;

use crate::agent::{count, wait_condition};
use crate::support::cluster::{
    TestNamespace, agent_account, can_i, create_object, operator, setup, wait_in,
};
use crate::support::shim::{overseer_shim_running, pod_shim};

/// Swarm `name` with an overseer and `members` (`[name, role]`), its monitor patrolling
/// every minute.
async fn create_swarm(ns: &TestNamespace, name: &str, members: &[(&str, &str)]) {
    let agents: Vec<serde_json::Value> = members
        .iter()
        .map(|(member, role)| json!({"name": member, "role": role}))
        .collect();
    create_object::<Swarm>(
        ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": name},
            "spec": {
                "defaults": {
                    "runtime": {"name": "pi", "mode": "tui", "image": "example.com/pi:1"},
                    "loop": {"interval": "2s", "monitorEvery": "1m"}
                },
                "overseer": {"prompt": "lead"},
                "agents": agents
            }
        }),
    )
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_monitor_peeks_every_member_writes_to_none_and_patrols_on_its_schedule() {
    let ns = setup("monitor").await;
    let _operator = operator(&ns);
    // Its CLI's commands run as its own ServiceAccount.
    let monitor = overseer_shim_running(&ns, "team-watch", "tui-monitor.sh").await;
    let _member = pod_shim(&ns, "team-a", 1, "pi", "tui-keeps-working.sh").await;
    create_swarm(&ns, "team", &[("watch", "monitor"), ("a", "builder")]).await;
    create_swarm(&ns, "other", &[("b", "builder")]).await;
    // An agent of nobody's swarm that names the role gets no fleet.
    create_object::<Agent>(
        &ns,
        json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
            "metadata": {"name": "pretender"},
            "spec": {"role": "monitor", "swarm": "team",
                "runtime": {"name": "pi", "image": "example.com/pi:1"}}}),
    )
    .await;

    let watch = agent_account(&ns, "team-watch");
    let can = |user: &str, verb: &str, resource: &str, sub: Option<&str>| {
        can_i(&ns, user, verb, resource, sub)
    };
    wait_in(
        &ns,
        "the monitor's Role covers team-a's pod",
        Duration::from_secs(60),
        || async { (can(&watch, "get", "pods/team-a-1", Some("log")) == "yes").then_some(()) },
    )
    .await;
    for (verb, resource, sub, expected) in [
        ("list", "agents.overseer.dev", None, "yes"),
        ("get", "pods/team-a-1", None, "yes"),
        ("get", "pods/team-overseer-1", Some("log"), "yes"),
        ("get", "pods/other-b-1", Some("log"), "no"),
        ("get", "pods/pretender-1", Some("log"), "no"),
        ("list", "pods", None, "no"),
        ("patch", "agents.overseer.dev/team-a", Some("status"), "no"),
        (
            "patch",
            "agents.overseer.dev/team-watch",
            Some("status"),
            "yes",
        ),
        ("create", "pods", Some("exec"), "no"),
        ("get", "configmaps/team-claims", None, "yes"),
        ("get", "configmaps/other-claims", None, "no"),
    ] {
        assert_eq!(
            can(&watch, verb, resource, sub),
            expected,
            "{verb} {resource} {sub:?}"
        );
    }
    let pretender = agent_account(&ns, "pretender");
    wait_in(
        &ns,
        "the pretender's Role",
        Duration::from_secs(60),
        || async {
            (can(
                &pretender,
                "patch",
                "agents.overseer.dev/pretender",
                Some("status"),
            ) == "yes")
                .then_some(())
        },
    )
    .await;
    assert_eq!(can(&pretender, "get", "pods/team-a-1", Some("log")), "no");
    assert_eq!(can(&pretender, "list", "agents.overseer.dev", None), "no");

    // The first patrol, a minute after the monitor started, lists the fleet by state.
    let log = wait_in(
        &ns,
        "the first patrol and what the monitor did",
        Duration::from_secs(150),
        || async { Some(monitor.fake_log()).filter(|l| l.contains("escalate exit")) },
    )
    .await;
    assert_eq!(
        count(&log, "line [overseer] Patrol #1 of swarm team"),
        1,
        "{log}"
    );
    assert!(
        log.contains("line - working (1): team-a (builder)"),
        "{log}"
    );
    assert!(log.contains("team-overseer (overseer)"), "{log}");
    assert!(!log.contains("line - working (1): other-b"), "{log}");
    assert!(!log.contains("pretender"), "{log}");
    assert!(log.contains("ps exit 0"), "{log}");
    assert!(log.contains("peek exit 0"), "{log}");
    assert!(log.contains("peek other exit 1"), "{log}");
    assert!(log.contains("claims exit 0"), "{log}");
    assert!(log.contains("escalate exit 0"), "{log}");
    let send = std::fs::read_to_string(monitor.dir.join("send.txt")).unwrap();
    assert!(log.contains("send exit 1"), "{log}\n{send}");
    assert!(send.contains("not allowed to send to team-a"), "{send}");
    let peeked = std::fs::read_to_string(monitor.dir.join("peek-team-a.txt")).unwrap();
    assert!(peeked.contains("working "), "the member's screen: {peeked}");
    let ps = std::fs::read_to_string(monitor.dir.join("ps.txt")).unwrap();
    assert!(ps.contains("team-a"), "{ps}");

    // Its escalation is open for the swarm's overseer; the patrol is on record.
    let watched = wait_condition(&ns, "team-watch", "the monitor's escalation open", |a| {
        a.status.as_ref().is_some_and(|s| {
            s.escalations
                .iter()
                .any(|e| e.state == EscalationState::Open)
        })
    })
    .await;
    let status = watched.status.unwrap();
    assert_eq!(watched.spec.overseer.as_deref(), Some("team-overseer"));
    let patrol = status.patrol.unwrap();
    assert_eq!(patrol.patrols, 1);
    // No second patrol before the minute is up.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(count(&monitor.fake_log(), "line [overseer] Patrol #"), 1);
}
