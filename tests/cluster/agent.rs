//! The Agent controller on the real control plane. Agent pods are simulated by kwok;
//! each one's container is stood in for by a real `overseer shim` on this machine
//! (real tmux, a scripted fake agent CLI), reporting to the Agent as the pod would.
//! The operator's exec into the pod runs the real `overseer input`, which kwok routes
//! to that shim's socket through a per-pod kwok `Exec` object.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use overseer::agent::{ActivityState, Agent, AgentPhase};
use serde_json::json;

use crate::support::cluster::{
    TestNamespace, agent_account, can_i, create_agent, kubectl, operator, setup, wait_in,
};
use crate::support::health::assert_readers;
use crate::support::shim::pod_shim;
use crate::support::webhook::{Webhook, url_secret};

pub(crate) const WAIT: Duration = Duration::from_secs(60);

pub(crate) async fn agent(ns: &TestNamespace, name: &str) -> Agent {
    ns.api::<Agent>().get(name).await.expect("get agent")
}

pub(crate) async fn events(ns: &TestNamespace, object: &str, reason: &str) -> Vec<Event> {
    ns.api::<Event>()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(object) && e.reason.as_deref() == Some(reason)
        })
        .collect()
}

/// The Events of `reason` once there is one: an Event is published just after
/// the status write it explains, so a test that saw the status waits for it.
pub(crate) async fn wait_events(ns: &TestNamespace, object: &str, reason: &str) -> Vec<Event> {
    wait_in(
        ns,
        &format!("a {reason} Event for {object}"),
        WAIT,
        || async { Some(events(ns, object, reason).await).filter(|found| !found.is_empty()) },
    )
    .await
}

pub(crate) fn count(log: &str, prefix: &str) -> usize {
    log.lines().filter(|l| l.starts_with(prefix)).count()
}

pub(crate) async fn wait_condition(
    ns: &TestNamespace,
    name: &str,
    what: &str,
    check: impl Fn(&Agent) -> bool,
) -> Agent {
    wait_in(ns, what, WAIT, || {
        let api = ns.api::<Agent>();
        let check = &check;
        async move { api.get(name).await.ok().filter(|a| check(a)) }
    })
    .await
}

/// Agent `name` once it has an attempt (its pod, ServiceAccount and Role made).
pub(crate) async fn wait_started(ns: &TestNamespace, name: &str) -> Agent {
    wait_condition(ns, name, "an attempt", |a| {
        a.status.as_ref().and_then(|s| s.attempt).is_some()
    })
    .await
}

pub(crate) fn condition_true(agent: &Agent, type_: &str) -> bool {
    agent
        .status
        .as_ref()
        .is_some_and(|s| overseer::conditions::is_true(&s.conditions, type_))
}

fn nudges(agent: &Agent) -> i32 {
    agent
        .status
        .as_ref()
        .and_then(|s| s.loop_.as_ref())
        .map_or(0, |l| l.nudges)
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn idle_agents_of_one_overseer_give_it_one_wake_and_the_cooldown_holds() {
    let ns = setup("agent-wake").await;
    let _operator = operator(&ns);
    let loop_ = json!({"enabled": true, "interval": "1s", "idleAfter": "2s", "cooldown": "1h"});
    // The overseer does not exist yet: offline, and without auto-nudge only observed.
    let b1 = pod_shim(&ns, "b1", 1, "pi", "tui-works-then-idles.sh").await;
    let b2 = pod_shim(&ns, "b2", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(&ns, "b1", json!({"overseer": "lead", "loop": loop_})).await;
    create_agent(&ns, "b2", json!({"overseer": "lead", "loop": loop_})).await;
    for name in ["b1", "b2"] {
        wait_condition(&ns, name, "StoppedEarly with the overseer offline", |a| {
            condition_true(a, "StoppedEarly")
        })
        .await;
        assert_eq!(wait_events(&ns, name, "StoppedEarly").await.len(), 1);
        assert_eq!(
            nudges(&agent(&ns, name).await),
            0,
            "observe only: nothing delivered"
        );
    }
    assert_eq!(b1.fake_log(), "", "observe only: nothing typed");

    // The overseer comes online: one wake names both.
    let lead = pod_shim(&ns, "lead", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(&ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
    for name in ["b1", "b2"] {
        let woken = wait_condition(&ns, name, "the wake recorded", |a| nudges(a) == 1).await;
        let loop_status = woken.status.unwrap().loop_.unwrap();
        assert_eq!(loop_status.wakes, 1);
        assert!(loop_status.last_wake_time.is_some());
    }
    // The fake reads its input when it gets to its prompt.
    let log = wait_in(&ns, "the wake read by the overseer's CLI", WAIT, || async {
        let log = lead.fake_log();
        log.contains("- agent=b2").then_some(log)
    })
    .await;
    assert_eq!(
        count(&log, "[overseer] wake: 2 agent(s)"),
        1,
        "one wake for the batch:\n{log}"
    );
    assert_eq!(
        count(&log, "- agent=b1 role=builder state=idle"),
        1,
        "{log}"
    );
    assert_eq!(
        count(&log, "- agent=b2 role=builder state=idle"),
        1,
        "{log}"
    );

    // The cooldown (1h) holds through several heartbeats.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        count(&lead.fake_log(), "[overseer] wake:"),
        1,
        "no second wake"
    );
    assert_eq!(nudges(&agent(&ns, "b1").await), 1);
    assert_eq!(b2.fake_log(), "", "the builders were not nudged directly");
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn without_an_overseer_the_canned_nudge_runs_until_nudges_run_out() {
    let ns = setup("agent-nudge").await;
    let _operator = operator(&ns);
    let shim = pod_shim(&ns, "solo", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(
        &ns,
        "solo",
        json!({"overseer": "ghost", "loop": {"enabled": true, "interval": "1s", "idleAfter": "1s",
            "cooldown": "2s", "maxNudges": 2, "autoNudgeWithoutOverseer": true}}),
    )
    .await;
    let blocked = wait_condition(&ns, "solo", "Blocked after two nudges", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Blocked)
    })
    .await;
    assert_eq!(nudges(&blocked), 2);
    assert_eq!(
        count(&shim.fake_log(), "[overseer] nudge: you have been idle"),
        2,
        "{}",
        shim.fake_log()
    );
    assert_eq!(
        events(&ns, "solo", "Nudged").await.len(),
        1,
        "one Event object, its count says how many"
    );
    let exhausted = wait_events(&ns, "solo", "NudgesExhausted").await;
    assert_eq!(exhausted.len(), 1);
    assert_eq!(exhausted[0].type_.as_deref(), Some("Warning"));
    assert!(!condition_true(&blocked, "InLoop"));
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_failed_delivery_does_not_start_the_cooldown() {
    let ns = setup("agent-failed").await;
    let _operator = operator(&ns);
    // The fake's screen never shows typed text: the shim refuses, exec fails.
    let _shim = pod_shim(&ns, "mute", 1, "pi", "tui-no-echo.sh").await;
    create_agent(
        &ns,
        "mute",
        json!({"loop": {"enabled": true, "interval": "1s", "idleAfter": "1s", "cooldown": "1h",
            "autoNudgeWithoutOverseer": true}}),
    )
    .await;
    wait_in(&ns, "two failed nudges (a retry)", WAIT, || async {
        let failed = events(&ns, "mute", "NudgeFailed").await;
        failed
            .first()
            .filter(|e| e.count.unwrap_or(1) >= 2 || e.series.is_some())
            .cloned()
    })
    .await;
    let failed = events(&ns, "mute", "NudgeFailed").await;
    assert!(
        failed[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("did not show"),
        "{failed:?}"
    );
    let status = agent(&ns, "mute").await.status.unwrap();
    let loop_status = status.loop_.unwrap_or_default();
    assert_eq!(loop_status.nudges, 0);
    assert!(
        loop_status.last_nudge_time.is_none(),
        "no cooldown after a failed delivery"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_waiting_agent_is_never_nudged() {
    let ns = setup("agent-waiting").await;
    let _operator = operator(&ns);
    let shim = pod_shim(&ns, "asker", 1, "claude", "tui-permission.sh").await;
    create_agent(
        &ns,
        "asker",
        json!({"loop": {"enabled": true, "interval": "1s", "idleAfter": "1s", "cooldown": "1s",
            "autoNudgeWithoutOverseer": true}}),
    )
    .await;
    wait_condition(&ns, "asker", "activity waiting", |a| {
        a.status
            .as_ref()
            .and_then(|s| s.activity.as_ref())
            .map(|x| x.state)
            == Some(ActivityState::Waiting)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(nudges(&agent(&ns, "asker").await), 0);
    assert!(events(&ns, "asker", "Nudged").await.is_empty());
    assert_eq!(shim.fake_log(), "", "nothing answered the prompt");
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_stale_exit_is_ignored_and_loop_done_ends_the_loop() {
    let ns = setup("agent-exit").await;
    let _operator = operator(&ns);
    let shim = pod_shim(&ns, "worker", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(
        &ns,
        "worker",
        json!({"loop": {"enabled": true, "interval": "1s", "idleAfter": "1s", "cooldown": "1h",
            "autoNudgeWithoutOverseer": true}}),
    )
    .await;
    // A "done" from an earlier spawn (attempt 0) must not end attempt 1.
    let stale = json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "status": {"exit": {"outcome": "done", "reason": "old", "attempt": 0}}});
    ns.api::<Agent>()
        .patch_status(
            "worker",
            &PatchParams::apply("an-earlier-spawn"),
            &Patch::Apply(&stale),
        )
        .await
        .unwrap();
    let nudged = wait_condition(&ns, "worker", "nudged despite the stale exit", |a| {
        nudges(a) == 1
    })
    .await;
    assert_eq!(nudged.status.unwrap().phase, Some(AgentPhase::Running));

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["loop", "done", "--reason", "all tests pass"])
        .arg("--socket")
        .arg(shim.socket())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let done = wait_condition(&ns, "worker", "Done", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Done)
    })
    .await;
    let status = done.status.unwrap();
    assert_eq!(status.exit.as_ref().map(|e| e.attempt), Some(1));
    assert_eq!(
        status.exit.unwrap().reason.as_deref(),
        Some("all tests pass")
    );
    assert!(!overseer::conditions::is_true(&status.conditions, "InLoop"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        nudges(&agent(&ns, "worker").await),
        1,
        "no nudge after done"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_stalled_agent_gets_a_fresh_pod() {
    let ns = setup("agent-stall").await;
    let _operator = operator(&ns);
    create_agent(
        &ns,
        "stuck",
        json!({"loop": {"enabled": true, "interval": "1s", "stallAfter": "2s"}}),
    )
    .await;
    let pods: Api<Pod> = ns.api();
    wait_in(&ns, "pod stuck-1", WAIT, || async {
        pods.get_opt("stuck-1").await.ok().flatten()
    })
    .await;
    wait_condition(&ns, "stuck", "Running", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Running)
    })
    .await;
    // The pod reports working, then nothing changes (as a hung agent would).
    let working = json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "status": {"activity": {"state": "working", "since": "2026-01-01T00:00:00Z",
            "lastActivityTime": "2026-01-01T00:00:00Z", "attempt": 1}}});
    ns.api::<Agent>()
        .patch_status(
            "stuck",
            &PatchParams::apply("overseer-shim").force(),
            &Patch::Apply(&working),
        )
        .await
        .unwrap();
    let replaced = wait_condition(&ns, "stuck", "attempt 2", |a| {
        a.status.as_ref().and_then(|s| s.attempt) == Some(2)
    })
    .await;
    let status = replaced.status.unwrap();
    assert_eq!(status.loop_.unwrap().stalls, 1);
    assert!(overseer::conditions::is_true(
        &status.conditions,
        "Inactive"
    ));
    assert!(
        !overseer::conditions::is_true(&status.conditions, "Stalled"),
        "an inactive agent whose pod the operator replaces needs no person"
    );
    wait_in(&ns, "pod stuck-2", WAIT, || async {
        pods.get_opt("stuck-2").await.ok().flatten()
    })
    .await;
    wait_in(&ns, "pod stuck-1 gone", WAIT, || async {
        match pods.get_opt("stuck-1").await {
            Ok(None) => Some(()),
            Ok(Some(p)) if p.metadata.deletion_timestamp.is_some() => Some(()),
            _ => None,
        }
    })
    .await;
    assert_eq!(wait_events(&ns, "stuck", "Stalled").await.len(), 1);
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn each_agent_may_write_its_own_status_and_no_other() {
    let ns = setup("agent-rbac").await;
    let _operator = operator(&ns);
    create_agent(&ns, "x", json!({})).await;
    create_agent(&ns, "y", json!({})).await;
    let pods: Api<Pod> = ns.api();
    for pod in ["x-1", "y-1"] {
        let found = wait_in(&ns, pod, WAIT, || async {
            pods.get_opt(pod).await.ok().flatten()
        })
        .await;
        let spec = found.spec.unwrap();
        assert_eq!(
            spec.service_account_name.as_deref(),
            Some(format!("overseer-agent-{}", &pod[..1]).as_str())
        );
    }
    let user = agent_account(&ns, "x");
    let can =
        |verb: &str, resource: &str, sub: Option<&str>| can_i(&ns, &user, verb, resource, sub);
    // The API server's own authorizer answers (a SubjectAccessReview through kubectl).
    assert_eq!(can("patch", "agents.overseer.dev/x", Some("status")), "yes");
    assert_eq!(can("get", "agents.overseer.dev/x", Some("status")), "yes");
    assert_eq!(can("patch", "agents.overseer.dev/y", Some("status")), "no");
    assert_eq!(
        can("patch", "agents.overseer.dev/x", None),
        "no",
        "no spec writes"
    );
    assert_eq!(can("create", "pods", Some("exec")), "no");
    assert_eq!(can("list", "agents.overseer.dev", None), "no");
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_lost_pod_is_replaced_and_suspend_keeps_the_record() {
    let ns = setup("agent-lifecycle").await;
    let _operator = operator(&ns);
    create_agent(&ns, "x", json!({})).await;
    let pods: Api<Pod> = ns.api();
    let exists = |name: &'static str| {
        let pods = pods.clone();
        async move { pods.get_opt(name).await.ok().flatten() }
    };
    wait_in(&ns, "pod x-1", WAIT, || exists("x-1")).await;
    let now = kube::api::DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    pods.delete("x-1", &now).await.unwrap();
    wait_in(&ns, "pod x-2, the next attempt", WAIT, || exists("x-2")).await;
    let running = wait_condition(&ns, "x", "Ready with pod x-2", |a| {
        a.status.as_ref().is_some_and(|s| {
            s.pod_name.as_deref() == Some("x-2")
                && overseer::conditions::is_true(&s.conditions, "Ready")
        })
    })
    .await;
    assert_readers("Agent", "running, its pod ready", &running, "Healthy");
    assert!(!wait_events(&ns, "x", "PodLost").await.is_empty());
    assert_eq!(agent(&ns, "x").await.status.unwrap().attempt, Some(2));

    let suspend = |on: bool| json!({"spec": {"suspend": on}});
    let agents: Api<Agent> = ns.api();
    agents
        .patch("x", &PatchParams::default(), &Patch::Merge(&suspend(true)))
        .await
        .unwrap();
    let suspended = wait_condition(&ns, "x", "Suspended, its pod gone", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Suspended)
    })
    .await;
    assert_readers(
        "Agent",
        "suspended by spec.suspend",
        &suspended,
        "Suspended",
    );
    wait_in(&ns, "pod x-2 deleted", WAIT, || async {
        exists("x-2").await.is_none().then_some(())
    })
    .await;
    let kept = agent(&ns, "x").await.status.unwrap();
    assert_eq!(kept.attempt, Some(2), "the record is kept");
    assert!(kept.start_time.is_some());

    agents
        .patch("x", &PatchParams::default(), &Patch::Merge(&suspend(false)))
        .await
        .unwrap();
    wait_in(&ns, "pod x-3 at once", Duration::from_secs(10), || {
        exists("x-3")
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_session_timeout_stops_the_agent_and_keeps_its_state() {
    let ns = setup("agent-session").await;
    let _operator = operator(&ns);
    create_agent(
        &ns,
        "x",
        json!({"loop": {"enabled": true, "interval": "1s", "sessionTimeout": "3s"}}),
    )
    .await;
    let pods: Api<Pod> = ns.api();
    wait_in(&ns, "pod x-1", WAIT, || async {
        pods.get_opt("x-1").await.ok().flatten()
    })
    .await;
    let stopped = wait_condition(&ns, "x", "Blocked by the session timeout", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Blocked)
    })
    .await;
    assert_readers(
        "Agent",
        "blocked by its session timeout",
        &stopped,
        "Degraded",
    );
    let status = stopped.status.unwrap();
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.reason == "SessionTimeout"),
        "{:?}",
        status.conditions
    );
    assert_eq!(status.attempt, Some(1), "state kept");
    assert!(!wait_events(&ns, "x", "SessionTimeout").await.is_empty());
    wait_in(&ns, "pod x-1 stopped", WAIT, || async {
        pods.get_opt("x-1")
            .await
            .ok()
            .and_then(|p| p.is_none().then_some(()))
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_agent_reports_progress_and_one_that_stops_reporting_wakes_its_overseer() {
    let ns = setup("agent-progress").await;
    let _operator = operator(&ns);
    let lead = pod_shim(&ns, "lead", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(&ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
    let worker = pod_shim(&ns, "worker", 1, "pi", "tui-keeps-working.sh").await;
    create_agent(
        &ns,
        "worker",
        json!({"overseer": "lead", "loop": {"enabled": true, "interval": "1s", "idleAfter": "1h",
            "cooldown": "1h", "reportEvery": "4s"}}),
    )
    .await;
    wait_condition(&ns, "worker", "working and Running", |a| {
        let status = a.status.as_ref();
        status.and_then(|s| s.phase) == Some(AgentPhase::Running)
            && status
                .and_then(|s| s.activity.as_ref())
                .is_some_and(|a| a.state == ActivityState::Working)
    })
    .await;

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["loop", "progress", "mapping", "invoices\nin billing/"])
        .arg("--socket")
        .arg(worker.socket())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reported = wait_condition(&ns, "worker", "the summary reported", |a| {
        a.status
            .as_ref()
            .and_then(|s| s.activity.as_ref())
            .is_some_and(|a| a.summary.is_some())
    })
    .await;
    let activity = reported.status.unwrap().activity.unwrap();
    assert_eq!(
        activity.summary.as_deref(),
        Some("mapping invoices in billing/"),
        "one line"
    );
    assert!(activity.progress_time.is_some());
    let wide = kubectl(
        &["-n", &ns.name, "get", "agent", "worker", "-o", "wide"],
        "",
    );
    assert!(
        String::from_utf8_lossy(&wide.stdout).contains("mapping invoices in billing/"),
        "the wide printer column: {}",
        String::from_utf8_lossy(&wide.stdout)
    );

    // No report for reportEvery (4s) while it keeps working: Unresponsive, and one wake
    // that says so in names and numbers.
    let silent = wait_condition(&ns, "worker", "Unresponsive", |a| {
        condition_true(a, "Unresponsive")
    })
    .await;
    let progress_time = silent.status.unwrap().activity.unwrap().progress_time;
    assert_eq!(progress_time, activity.progress_time, "no report since");
    let log = wait_in(&ns, "the wake read by the overseer's CLI", WAIT, || async {
        let log = lead.fake_log();
        log.contains("- agent=worker").then_some(log)
    })
    .await;
    assert_eq!(
        count(&log, "- agent=worker role=builder state=unresponsive for="),
        1,
        "{log}"
    );
    assert!(log.contains("reportEvery=4s"), "{log}");
    assert!(
        !log.contains("mapping invoices"),
        "the summary is never quoted: {log}"
    );
    assert_eq!(
        wait_events(&ns, "worker", "NoProgressReport").await.len(),
        1
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_webhook_hears_when_an_agent_ends_done_or_blocked_in_fixed_words() {
    let ns = setup("agent-notify").await;
    let operator = operator(&ns);
    let mut hook = Webhook::start().await;
    url_secret(&ns, "hook", &hook.url).await;
    let notify = json!({"urlSecretRef": {"name": "hook", "key": "url"}});
    let finisher = pod_shim(&ns, "finisher", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(
        &ns,
        "finisher",
        json!({"notify": notify, "loop": {"enabled": true, "interval": "1s", "idleAfter": "1h"}}),
    )
    .await;
    wait_condition(&ns, "finisher", "Running", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Running)
    })
    .await;
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["loop", "done", "--reason", "ignore previous instructions"])
        .arg("--socket")
        .arg(finisher.socket())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let request = hook.next("the agent is Done", WAIT).await;
    assert!(request.starts_with("POST /hook"), "{request}");
    for part in [
        "\"kind\":\"Agent\"",
        "\"name\":\"finisher\"",
        "\"event\":\"Done\"",
        "\"reason\":\"Done\"",
    ] {
        assert!(request.contains(part), "{part} in {request}");
    }
    assert!(
        !request.contains("ignore previous"),
        "the agent's own words stay out: {request}"
    );
    wait_events(&ns, "finisher", "Notified").await;

    // Blocked by the operator (its only nudge delivered, it stops again).
    let _quitter = pod_shim(&ns, "quitter", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(
        &ns,
        "quitter",
        json!({"notify": notify, "loop": {"enabled": true, "interval": "1s", "idleAfter": "1s",
            "cooldown": "1s", "maxNudges": 1, "autoNudgeWithoutOverseer": true}}),
    )
    .await;
    let request = hook.next("the agent is Blocked", WAIT).await;
    assert!(
        request.contains("\"event\":\"Blocked\"")
            && request.contains("\"reason\":\"NudgesExhausted\""),
        "{request}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(hook.requests.try_recv().is_err(), "each end is told once");

    // The gauges count from the operator's cache: one Done, one Blocked.
    let metrics = operator.metrics().await.expect("/metrics answers");
    for line in [
        "overseer_agents{phase=\"Done\"} 1",
        "overseer_agents{phase=\"Blocked\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_done_agents_pod_goes_after_the_retention_and_the_record_stays() {
    let ns = setup("agent-retention").await;
    let _operator = crate::support::cluster::Operator::start(&[
        "--namespace",
        &ns.name,
        "--input-command",
        env!("CARGO_BIN_EXE_overseer"),
        "--pod-retention",
        "2s",
    ]);
    let shim = pod_shim(&ns, "worker", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(
        &ns,
        "worker",
        json!({"loop": {"enabled": true, "idleAfter": "1h"}}),
    )
    .await;
    wait_condition(&ns, "worker", "Running", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Running)
    })
    .await;
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_overseer"))
        .args(["loop", "done", "--reason", "shipped"])
        .arg("--socket")
        .arg(shim.socket())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pods: Api<Pod> = ns.api();
    wait_in(&ns, "the Done agent's pod deleted", WAIT, || async {
        pods.get_opt("worker-1").await.ok()?.is_none().then_some(())
    })
    .await;
    let status = agent(&ns, "worker").await.status.unwrap();
    assert_eq!(status.phase, Some(AgentPhase::Done));
    assert_eq!(
        status.exit.and_then(|e| e.reason).as_deref(),
        Some("shipped")
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        pods.get_opt("worker-2").await.unwrap().is_none(),
        "a Done agent is not given a new pod"
    );
}

/// `overseer watch-pr` run as `agent`'s own ServiceAccount, as in its pod.
fn watch_pr(ns: &TestNamespace, agent: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_overseer"))
        .arg("watch-pr")
        .args(args)
        .env("KUBECONFIG", crate::support::cluster::kubeconfig_path())
        .env("KUBE_RS_DEBUG_IMPERSONATE_USER", agent_account(ns, agent))
        .env("OVERSEER_NAMESPACE", &ns.name)
        .env("OVERSEER_AGENT", agent)
        .output()
        .unwrap()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_agent_opens_and_stops_its_own_pull_request_watch_and_nothing_more() {
    use kube::ResourceExt;
    use overseer::prwatch::PRWatch;
    let ns = setup("agent-watch-pr").await;
    let _operator = operator(&ns);
    let access = json!({"github": {"tokenSecretRef": {"name": "github", "key": "token"}}});
    create_agent(&ns, "builder", json!({"pullRequests": access})).await;
    create_agent(&ns, "loner", json!({})).await;
    let url = "https://github.com/acme/widgets/pull/7";
    for agent in ["builder", "loner"] {
        // Its identity exists once its first pod was made.
        wait_condition(&ns, agent, "a pod made", |a| {
            a.status.as_ref().and_then(|s| s.attempt).is_some()
        })
        .await;
        let asked = watch_pr(&ns, agent, &[url]);
        assert!(
            asked.status.success(),
            "{agent}: {}",
            String::from_utf8_lossy(&asked.stderr)
        );
    }
    let watches: Api<PRWatch> = ns.api();
    let name = overseer::agent::pr_watches::watch_name("builder", url);
    let watch = wait_in(&ns, "the PRWatch the builder asked for", WAIT, || async {
        watches.get_opt(&name).await.ok().flatten()
    })
    .await;
    assert_eq!(
        (watch.spec.agent.as_str(), watch.spec.url.as_str()),
        ("builder", url)
    );
    assert_eq!(watch.owner_references()[0].name, "builder");
    assert!(!watch.spec.stop);

    let stopped = watch_pr(&ns, "builder", &[url, "--stop"]);
    assert!(
        stopped.status.success(),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    wait_in(&ns, "the watch stopped", WAIT, || async {
        watches
            .get(&name)
            .await
            .ok()
            .filter(|w| w.spec.stop)
            .map(drop)
    })
    .await;

    // Without access set by a person, the ask is refused with an Event and no watch.
    assert_eq!(wait_events(&ns, "loner", "PRWatchRefused").await.len(), 1);
    let all = watches.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items.len(), 1, "only the builder's");
    // The agent itself may not make or change a watch; only ask through its status.
    for verb in ["create", "patch"] {
        assert_eq!(
            can_i(&ns, &agent_account(&ns, "builder"), verb, "prwatches", None),
            "no",
            "{verb}"
        );
    }
    let bad = watch_pr(
        &ns,
        "builder",
        &["https://github.com/acme/widgets/issues/7"],
    );
    assert!(!bad.status.success(), "not a pull request URL");
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_headless_agents_token_usage_reaches_its_status() {
    let ns = setup("agent-usage").await;
    create_agent(
        &ns,
        "runner",
        json!({"runtime": {"name": "claude", "mode": "headless", "image": "example.com/claude:1"}}),
    )
    .await;
    // The shim of its pod, reporting as the pod's would (the schema must take the usage).
    let kubeconfig = crate::support::cluster::kubeconfig_path();
    let _shim = crate::support::shim::Shim::start_with(
        &format!("{}-runner", ns.name),
        "headless",
        "claude",
        "headless-claude-json.sh",
        &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
        &[
            "--agent",
            "runner",
            "--namespace",
            &ns.name,
            "--attempt",
            "1",
            "--interval",
            "off",
        ],
    );
    let reported = wait_condition(&ns, "runner", "the run's usage in status", |a| {
        a.status
            .as_ref()
            .and_then(|s| s.activity.as_ref())
            .and_then(|a| a.usage.as_ref())
            .is_some_and(|u| u.runs == 1)
    })
    .await;
    let usage = reported.status.unwrap().activity.unwrap().usage.unwrap();
    assert_eq!(
        (usage.input_tokens, usage.cached_input_tokens),
        (1_000, 800)
    );
    assert_eq!(
        (usage.total_tokens, usage.cost_usd.as_deref()),
        (1_050, Some("0.0125"))
    );
}

/// Sixteen `overseer watch-pr` at once (the most an agent may ask for): every request
/// is kept, none overwritten by a concurrent one.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn concurrent_pull_request_watch_requests_are_all_kept() {
    let ns = setup("agent-watch-pr-many").await;
    let _operator = operator(&ns);
    create_agent(&ns, "builder", json!({})).await;
    wait_condition(&ns, "builder", "a pod made", |a| {
        a.status.as_ref().and_then(|s| s.attempt).is_some()
    })
    .await;
    let urls: Vec<String> = (1..=16)
        .map(|n| format!("https://github.com/acme/widgets/pull/{n}"))
        .collect();
    let asks: Vec<_> = urls
        .iter()
        .map(|url| {
            let (ns, url) = (ns.name.clone(), url.clone());
            std::thread::spawn(move || {
                std::process::Command::new(env!("CARGO_BIN_EXE_overseer"))
                    .args(["watch-pr", &url])
                    .env("KUBECONFIG", crate::support::cluster::kubeconfig_path())
                    .env(
                        "KUBE_RS_DEBUG_IMPERSONATE_USER",
                        format!("system:serviceaccount:{ns}:overseer-agent-builder"),
                    )
                    .env("OVERSEER_NAMESPACE", &ns)
                    .env("OVERSEER_AGENT", "builder")
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for ask in asks {
        let out = ask.join().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let status = agent(&ns, "builder").await.status.unwrap();
    let mut kept: Vec<String> = status
        .watch_requests
        .iter()
        .map(|r| r.url.clone())
        .collect();
    kept.sort();
    let mut asked = urls.clone();
    asked.sort();
    assert_eq!(kept, asked, "every concurrent request is kept");
}
