//! Closing the loop on the real control plane: an overseer (a scripted fake CLI
//! under a real shim, running as its own ServiceAccount through impersonation) is
//! woken, reads its agent with `overseer peek`, sends direction with `overseer
//! send`, or releases it; the operator delivers sends in order and at most once.

use std::process::Output;
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use overseer::agent::{ActivityState, Agent, AgentPhase, SendOutcome};
use serde_json::json;

use crate::agent::{WAIT, agent, condition_true, count, events, wait_condition, wait_events};
use crate::support::cluster::{
    Operator, agent_account, can_i, create_agent, kubectl, operator, setup, wait_in,
};
use crate::support::shim::{overseer_shim, pod_shim};

pub(crate) use crate::support::cluster::{overseer_as, said};

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The time a line of a fake's log starting with `prefix` recorded (epoch seconds).
pub(crate) fn logged_at(log: &str, prefix: &str) -> Option<f64> {
    log.lines()
        .find(|l| l.starts_with(prefix))?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

fn phase(agent: &Agent) -> Option<AgentPhase> {
    agent.status.as_ref().and_then(|s| s.phase)
}

fn wakes(agent: &Agent) -> i32 {
    agent
        .status
        .as_ref()
        .and_then(|s| s.loop_.as_ref())
        .map_or(0, |l| l.wakes)
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_overseer_reads_its_agent_sends_direction_and_the_loop_closes() {
    let ns = setup("loop-e2e").await;
    let _operator = operator(&ns);
    let lead = overseer_shim(&ns, "lead").await;
    let builder = pod_shim(&ns, "builder", 1, "pi", "tui-builder.sh").await;
    create_agent(&ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
    create_agent(
        &ns,
        "builder",
        json!({"overseer": "lead",
            "loop": {"enabled": true, "interval": "1s", "idleAfter": "2s", "cooldown": "1m"}}),
    )
    .await;

    // Woken once, the overseer peeks and sends; the builder reads exactly that text.
    let log = wait_in(
        &ns,
        "the builder ran `overseer loop done`",
        WAIT,
        || async { Some(builder.fake_log()).filter(|l| l.contains("loop done exit")) },
    )
    .await;
    assert!(log.contains("got "), "{log}");
    let got: Vec<&str> = log.lines().filter(|l| l.starts_with("got ")).collect();
    assert_eq!(got.len(), 1, "one message: {log}");
    assert!(
        got[0].ends_with(" continue: add the missing tests"),
        "exactly the text sent: {log}"
    );
    assert!(log.contains("loop done exit 0"), "{log}");
    let lead_log = lead.fake_log();
    assert_eq!(count(&lead_log, "woken "), 1, "{lead_log}");
    assert!(lead_log.contains("peek exit 0"), "{lead_log}");
    assert!(
        lead_log.contains("message #1 delivered to builder"),
        "{lead_log}"
    );
    assert!(lead_log.contains("send exit 0"), "{lead_log}");
    let peeked = std::fs::read_to_string(lead.dir.join("peek-builder.txt")).unwrap();
    assert!(
        peeked.contains("building step 3") && peeked.contains("tests still missing"),
        "peek shows what the builder last did: {peeked}"
    );

    // The loop ends; the message is on record; nobody is woken again.
    let done = wait_condition(&ns, "builder", "Done", |a| {
        phase(a) == Some(AgentPhase::Done)
    })
    .await;
    let status = done.status.clone().unwrap();
    assert!(!status.loop_.clone().unwrap().active);
    let last = status.last_message.unwrap();
    assert_eq!(last.from, "lead");
    assert_eq!(last.excerpt, "continue: add the missing tests");
    let results = status.sends.unwrap().results;
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].outcome, SendOutcome::Delivered);
    assert!(status.inbox.is_empty(), "delivered text is not kept");
    wait_events(&ns, "builder", "MessageDelivered").await;
    let lead_status = agent(&ns, "lead").await.status.unwrap();
    assert_eq!(lead_status.last_message.unwrap().from, "operator");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(wakes(&agent(&ns, "builder").await), 1);
    assert_eq!(count(&lead.fake_log(), "woken "), 1, "no further wake");

    // The hops, from the fakes' own clocks (epoch seconds).
    let idle = logged_at(&log, "idle ").unwrap();
    let woken = logged_at(&lead_log, "woken ").unwrap();
    let received = logged_at(&log, "got ").unwrap();
    let report = format!(
        "idle -> idle past idleAfter (2s) -> wake read by the overseer: {:.2}s\n\
         wake read -> peek, send, direction read by the builder: {:.2}s\n\
         idle past idleAfter -> builder working again: {:.2}s\n",
        woken - idle - 2.0,
        received - woken,
        received - idle - 2.0,
    );
    println!("{report}");
    let logs = crate::support::cluster::repo_root().join("target/test-logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("loop-hops.txt"), report).unwrap();
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_released_agent_is_not_driven_again() {
    let ns = setup("loop-release").await;
    let _operator = operator(&ns);
    let lead = pod_shim(&ns, "lead", 1, "pi", "tui-works-then-idles.sh").await;
    let _solo = pod_shim(&ns, "solo", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(&ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
    // A short cooldown: without the release the overseer would be woken again soon.
    create_agent(
        &ns,
        "solo",
        json!({"overseer": "lead",
            "loop": {"enabled": true, "interval": "1s", "idleAfter": "1s", "cooldown": "2s"}}),
    )
    .await;
    wait_condition(&ns, "solo", "the first wake", |a| wakes(a) >= 1).await;
    let released = overseer_as(
        &ns,
        Some(&agent_account(&ns, "lead")),
        &["loop", "release", "solo", "--reason", "finished by hand"],
    );
    assert!(released.status.success(), "{}", text(&released));
    let done = wait_condition(&ns, "solo", "released", |a| {
        phase(a) == Some(AgentPhase::Done)
    })
    .await;
    assert!(condition_true(&done, "Ready"));
    let in_loop = done
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == "InLoop")
        .cloned()
        .unwrap();
    assert_eq!(
        (in_loop.status.as_str(), in_loop.reason.as_str()),
        ("False", "Released")
    );
    let exit = done.status.clone().unwrap().exit.unwrap();
    assert_eq!(exit.reason.as_deref(), Some("finished by hand"));
    wait_events(&ns, "solo", "Released").await;
    let wakes_at_release = wakes(&done);
    let lead_wakes = count(&lead.fake_log(), "[overseer] wake:");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(wakes(&agent(&ns, "solo").await), wakes_at_release);
    assert_eq!(count(&lead.fake_log(), "[overseer] wake:"), lead_wakes);
    assert!(events(&ns, "solo", "Nudged").await.is_empty());

    // A person puts it back in the loop: the release is taken back, wakes resume.
    let added = overseer_as(&ns, None, &["loop", "add", "solo"]);
    assert!(added.status.success(), "{}", text(&added));
    wait_condition(&ns, "solo", "woken again after `loop add`", |a| {
        wakes(a) > wakes_at_release
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_send_to_an_agent_without_a_pod_fails_visibly() {
    let ns = setup("send-nopod").await;
    let _operator = Operator::start(&[
        "--namespace",
        &ns.name,
        "--input-command",
        env!("CARGO_BIN_EXE_overseer"),
        "--send-expiry",
        "3s",
    ]);
    create_agent(&ns, "away", json!({"suspend": true})).await;
    wait_condition(&ns, "away", "Suspended", |a| {
        phase(a) == Some(AgentPhase::Suspended)
    })
    .await;
    let sent = overseer_as(
        &ns,
        None,
        &["send", "away", "are you there?", "--wait", "30"],
    );
    assert!(!sent.status.success(), "{}", text(&sent));
    assert!(
        String::from_utf8_lossy(&sent.stderr).contains(
            "message #1 was not delivered to away: no running pod could take it within 3s"
        ),
        "{}",
        text(&sent)
    );
    let failed = wait_events(&ns, "away", "SendFailed").await;
    assert_eq!(failed[0].type_.as_deref(), Some("Warning"));
    let sends = agent(&ns, "away").await.status.unwrap().sends.unwrap();
    assert_eq!(sends.results[0].outcome, SendOutcome::Failed);

    // A sender that may read but not watch agents still hears the outcome (the CLI
    // reads the agent instead); before, the refused watch was reported as a failure.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "send-no-watch", "namespace": ns.name},
        "rules": [{"apiGroups": ["overseer.dev"], "resources": ["agents", "agents/status"],
                   "verbs": ["get", "patch"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "send-no-watch", "namespace": ns.name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "send-no-watch"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "no-watch"}]});
    for object in [role, binding] {
        let applied = kubectl(&["apply", "-f", "-"], &object.to_string());
        assert!(applied.status.success(), "{applied:?}");
    }
    assert_eq!(
        can_i(&ns, "no-watch", "watch", "agents.overseer.dev", None),
        "no"
    );
    let sent = overseer_as(
        &ns,
        Some("no-watch"),
        &["send", "away", "still there?", "--wait", "30"],
    );
    assert!(
        String::from_utf8_lossy(&sent.stderr).contains(
            "message #2 was not delivered to away: no running pod could take it within 3s"
        ),
        "{}",
        text(&sent)
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn sends_arrive_in_order_and_never_twice_across_operator_restarts() {
    let ns = setup("send-restart").await;
    let shim = pod_shim(&ns, "b", 1, "pi", "tui-works-then-idles.sh").await;
    let agents: Api<Agent> = ns.api();
    {
        let _operator = operator(&ns);
        create_agent(&ns, "b", json!({})).await;
        wait_condition(&ns, "b", "Running", |a| {
            phase(a) == Some(AgentPhase::Running)
        })
        .await;
        shim.wait_for(ActivityState::Idle).await;
    }
    // As an operator that stopped between claiming message #1 and settling it.
    let status = json!({"status": {
        "inbox": [{"seq": 1, "from": "lead", "text": "maybe sent once", "sentTime": "2026-01-01T00:00:00Z"}],
        "sends": {"handledSeq": 1, "inFlightSeq": 1},
    }});
    agents
        .patch_status("b", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let operator_again = operator(&ns);
    let abandoned = wait_events(&ns, "b", "SendFailed").await;
    assert!(
        abandoned[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("not sent again"),
        "{abandoned:?}"
    );
    // Three queued at once arrive in order, each once.
    for word in ["first", "second", "third"] {
        let queued = overseer_as(&ns, None, &["send", "b", word, "--wait", "0"]);
        assert!(queued.status.success(), "{}", text(&queued));
    }
    let log = wait_in(&ns, "three messages typed", WAIT, || async {
        Some(shim.fake_log()).filter(|l| l.contains("third"))
    })
    .await;
    assert_eq!(
        log, "first\nsecond\nthird\n",
        "in order, nothing else (never #1)"
    );
    drop(operator_again);
    let _operator = operator(&ns);
    wait_condition(&ns, "b", "reconciled by the new operator", |a| {
        a.status
            .as_ref()
            .and_then(|s| s.sends.as_ref())
            .is_some_and(|s| s.handled_seq == 4)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        shim.fake_log(),
        "first\nsecond\nthird\n",
        "nothing delivered twice"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_overseer_may_read_and_direct_its_agents_and_nothing_else() {
    let ns = setup("overseer-rbac").await;
    let _operator = operator(&ns);
    create_agent(
        &ns,
        "lead",
        json!({"role": "overseer", "oversees": ["mine"]}),
    )
    .await;
    create_agent(&ns, "mine", json!({"overseer": "lead"})).await;
    create_agent(&ns, "other", json!({})).await;
    // Another tenant's agent names the lead as its overseer; the lead never agreed.
    create_agent(&ns, "stranger", json!({"overseer": "lead"})).await;
    let lead = agent_account(&ns, "lead");
    let can = |user: &str, verb: &str, resource: &str, sub: Option<&str>| {
        can_i(&ns, user, verb, resource, sub)
    };
    wait_in(
        &ns,
        "the lead's Role covers `mine` and its pod",
        WAIT,
        || async {
            (can(&lead, "patch", "agents.overseer.dev/mine", Some("status")) == "yes"
                && can(&lead, "get", "pods/mine-1", Some("log")) == "yes")
                .then_some(())
        },
    )
    .await;
    let stranger = wait_in(
        &ns,
        "the stranger told its overseer refused",
        WAIT,
        || async {
            let status = agent(&ns, "stranger").await.status?;
            status
                .conditions
                .into_iter()
                .find(|c| c.type_ == "OverseerAccepted" && c.status == "False")
        },
    )
    .await;
    assert_eq!(stranger.reason, "OverseerNotAccepted");
    // The API server's authorizer answers (SubjectAccessReviews through kubectl).
    for (verb, resource, sub, expected) in [
        ("get", "agents.overseer.dev", None, "yes"),
        ("list", "agents.overseer.dev", None, "yes"),
        ("list", "goals.overseer.dev", None, "yes"),
        ("list", "prwatches.overseer.dev", None, "yes"),
        ("get", "pods/mine-1", Some("log"), "yes"),
        ("get", "pods/mine-1", None, "yes"),
        ("get", "pods/other-1", Some("log"), "no"),
        ("get", "pods/stranger-1", Some("log"), "no"),
        ("get", "pods/lead-1", Some("log"), "no"),
        ("list", "pods", None, "no"),
        ("patch", "agents.overseer.dev/lead", Some("status"), "yes"),
        ("patch", "agents.overseer.dev/other", Some("status"), "no"),
        (
            "patch",
            "agents.overseer.dev/stranger",
            Some("status"),
            "no",
        ),
        ("patch", "agents.overseer.dev/mine", None, "no"),
        ("delete", "agents.overseer.dev/mine", None, "no"),
        ("create", "pods", Some("exec"), "no"),
        ("create", "pods", None, "no"),
        ("get", "secrets", None, "no"),
        ("list", "agents.overseer.dev", Some("status"), "no"),
    ] {
        assert_eq!(
            can(&lead, verb, resource, sub),
            expected,
            "{verb} {resource} {sub:?}"
        );
    }
    assert_eq!(can(&lead, "list", "agents.overseer.dev", None), "yes");
    let out = kubectl(
        &[
            "auth",
            "can-i",
            "list",
            "agents.overseer.dev",
            "--namespace=default",
            "--as",
            &lead,
        ],
        "",
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "no",
        "its namespace only"
    );

    // Through the CLI: the overseer may send to its own agent, an agent may not send
    // to another.
    let mine_user = agent_account(&ns, "mine");
    wait_in(&ns, "the Role of `mine`", WAIT, || async {
        (can(
            &mine_user,
            "patch",
            "agents.overseer.dev/mine",
            Some("status"),
        ) == "yes")
            .then_some(())
    })
    .await;
    let refused = overseer_as(
        &ns,
        Some(&mine_user),
        &["send", "other", "do my work", "--wait", "0"],
    );
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("not allowed to send to other"),
        "{}",
        text(&refused)
    );
    let queued = overseer_as(
        &ns,
        Some(&lead),
        &["send", "mine", "continue", "--wait", "0"],
    );
    assert!(queued.status.success(), "{}", text(&queued));
    let stray = overseer_as(
        &ns,
        Some(&lead),
        &["send", "other", "continue", "--wait", "0"],
    );
    assert!(!stray.status.success(), "{}", text(&stray));
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_person_puts_an_agent_back_in_the_loop_and_takes_it_out() {
    let ns = setup("loop-add").await;
    let _operator = operator(&ns);
    let shim = pod_shim(&ns, "p", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(
        &ns,
        "p",
        json!({"loop": {"enabled": true, "interval": "1s", "idleAfter": "1s", "cooldown": "1h",
            "autoNudgeWithoutOverseer": true}}),
    )
    .await;
    wait_condition(&ns, "p", "Running", |a| {
        phase(a) == Some(AgentPhase::Running)
    })
    .await;
    let socket = shim.socket();
    let done = overseer_as(
        &ns,
        None,
        &[
            "loop",
            "done",
            "--reason",
            "looks finished",
            "--socket",
            socket.to_str().unwrap(),
        ],
    );
    assert!(done.status.success(), "{}", text(&done));
    wait_condition(&ns, "p", "Done", |a| phase(a) == Some(AgentPhase::Done)).await;
    shim.wait_for(ActivityState::Idle).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        events(&ns, "p", "Nudged").await.is_empty(),
        "a done agent is left alone"
    );

    // Taken back: the shim does not re-assert its exit, so the loop runs again.
    let added = overseer_as(&ns, None, &["loop", "add", "p"]);
    assert!(added.status.success(), "{}", text(&added));
    assert!(
        String::from_utf8_lossy(&added.stdout).contains("taken back"),
        "{}",
        text(&added)
    );
    let nudged = wait_condition(&ns, "p", "nudged after `loop add`", |a| {
        a.status
            .as_ref()
            .and_then(|s| s.loop_.as_ref())
            .is_some_and(|l| l.nudges == 1)
    })
    .await;
    assert_eq!(phase(&nudged), Some(AgentPhase::Running));
    assert!(nudged.status.unwrap().exit.is_none());

    let removed = overseer_as(&ns, None, &["loop", "remove", "p"]);
    assert!(removed.status.success(), "{}", text(&removed));
    let out = wait_condition(&ns, "p", "out of the loop", |a| {
        a.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "InLoop" && c.reason == "LoopDisabled")
        })
    })
    .await;
    // The switch is an annotation: the spec a GitOps tool owns is never written.
    assert!(out.spec.loop_.enabled, "spec.loop.enabled untouched");
    assert_eq!(
        out.metadata.generation,
        Some(1),
        "the spec was never written"
    );
    assert_eq!(
        out.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("overseer.dev/loop"))
            .map(String::as_str),
        Some("off")
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn high_effort_goals_tell_their_overseer_each_step_outcome() {
    let ns = setup("goal-effort").await;
    let _operator = operator(&ns);
    let lead = pod_shim(&ns, "lead", 1, "pi", "tui-works-then-idles.sh").await;
    create_agent(&ns, "lead", json!({"role": "overseer", "oversees": ["*"]})).await;
    wait_condition(&ns, "lead", "Running", |a| {
        phase(a) == Some(AgentPhase::Running)
    })
    .await;
    let goal = json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
        "metadata": {"name": "ship"},
        "spec": {"effort": "high", "overseer": "lead",
            "defaults": {"runtime": {"name": "pi", "image": "example.com/pi:1"}},
            "steps": [{"name": "a", "action": "Implement it"}, {"name": "b", "action": "Implement more"}]}});
    let applied = kubectl(&["apply", "-n", &ns.name, "-f", "-"], &goal.to_string());
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let pods: Api<k8s_openapi::api::core::v1::Pod> = ns.api();
    let finish = |outcome: &'static str| json!({"metadata": {"annotations": {"kwok.overseer.dev/outcome": outcome}}});
    for (pod, outcome) in [("ship-s0-a1", "Succeeded"), ("ship-s1-a1", "Failed")] {
        wait_in(&ns, pod, WAIT, || async {
            pods.get_opt(pod).await.ok().flatten()
        })
        .await;
        pods.patch(
            pod,
            &PatchParams::default(),
            &Patch::Merge(&finish(outcome)),
        )
        .await
        .unwrap();
    }
    let log = wait_in(
        &ns,
        "both outcomes typed into the overseer",
        WAIT,
        || async { Some(lead.fake_log()).filter(|l| l.contains("name=b")) },
    )
    .await;
    let told: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("[overseer] goal:"))
        .collect();
    assert_eq!(
        told,
        [
            "[overseer] goal: goal=ship step=1/2 name=a attempt=1 outcome=succeeded next=step b starts",
            "[overseer] goal: goal=ship step=2/2 name=b attempt=1 outcome=failed next=retry in 10s",
        ],
        "{log}"
    );
    let woken = wait_events(&ns, "ship", "OverseerWoken").await;
    assert!(
        woken[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .starts_with("overseer lead told")
    );
}
