//! Mail between swarm members on the real control plane: a scout (a scripted CLI under
//! a real shim, as its own ServiceAccount) mails a finding to a builder that is busy;
//! the notice waits until the builder is idle, names the sender and type only, the
//! builder reads the body with `overseer mail read` and answers; receipts follow on
//! the sender. Bad mail is refused with its reason, and no member writes another's.

use std::time::Duration;

use overseer::agent::{Agent, ReceiptState};
use serde_json::json;

use crate::agent::{WAIT, agent, wait_condition, wait_started};
use crate::overseer::{logged_at, overseer_as};
use crate::support::cluster::{TestNamespace, agent_account, create_object, operator, setup};
use crate::support::shim::pod_shim_with;

async fn create_team(ns: &TestNamespace, allow: serde_json::Value) {
    create_object::<overseer::swarm::Swarm>(
        ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": "team"},
            "spec": {
                "defaults": {
                    "runtime": {"name": "pi", "mode": "tui", "image": "example.com/pi:1"},
                    "loop": {"enabled": true, "interval": "1s", "idleAfter": "1h"}
                },
                "coordination": {"mail": {"allow": allow, "maxBytes": 200, "perMinute": 5}},
                "agents": [
                    {"name": "scout", "role": "scout"},
                    {"name": "builder", "role": "builder"},
                    {"name": "reviewer", "role": "reviewer"}
                ]
            }
        }),
    )
    .await;
}

/// A member's shim, its `overseer` commands run as its own ServiceAccount.
async fn member_shim(ns: &TestNamespace, agent: &str, script: &str) -> crate::support::shim::Shim {
    let user = agent_account(ns, agent);
    pod_shim_with(
        ns,
        agent,
        1,
        "pi",
        script,
        &[("KUBE_RS_DEBUG_IMPERSONATE_USER", user.as_str())],
        "1s",
    )
    .await
}

fn receipt_state(agent: &Agent, seq: i64, to: &str) -> Option<ReceiptState> {
    agent
        .status
        .as_ref()?
        .mail
        .as_ref()?
        .receipts
        .iter()
        .find(|r| r.seq == seq && r.to == to)
        .map(|r| r.state)
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_finding_is_noticed_only_once_the_builder_is_idle_read_and_answered() {
    let ns = setup("mail").await;
    let _operator = operator(&ns);
    let scout = member_shim(&ns, "team-scout", "tui-mail-scout.sh").await;
    let builder = member_shim(&ns, "team-builder", "tui-mail-builder.sh").await;
    create_team(&ns, json!([])).await;

    let log = scout.wait_for_log_within("mail send exit", WAIT).await;
    assert!(log.contains("mail send exit 0"), "{log}");
    assert!(log.contains("mail #1 to team-builder: Queued"), "{log}");

    // The notice waits for the builder's busy screen to settle, and quotes nothing.
    let log = builder.wait_for_log_within("mail reply exit", WAIT).await;
    let idle = logged_at(&log, "idle ").unwrap();
    let notice = log
        .lines()
        .find(|l| l.starts_with("got ") && l.contains("[overseer] mail:"))
        .unwrap_or_else(|| panic!("no notice: {log}"));
    let noticed: f64 = notice.split(' ').nth(1).unwrap().parse().unwrap();
    assert!(noticed >= idle, "the notice came mid-turn: {log}");
    assert!(
        notice.contains("1 new message(s) for you: 1 from team-scout (finding)"),
        "{notice}"
    );
    assert!(!log.contains("src/total.rs"), "the body was typed: {log}");
    assert!(log.contains("mail read exit 0"), "{log}");
    let read = std::fs::read_to_string(builder.dir.join("read.txt")).unwrap();
    assert!(
        read.contains("from team-scout (finding)") && read.contains("src/total.rs:42"),
        "{read}"
    );
    assert!(log.contains("mail reply exit 0"), "{log}");

    // The receipts follow: Read at the builder; the answer reaches the scout.
    wait_condition(&ns, "team-scout", "its mail read", |a| {
        receipt_state(a, 1, "team-builder") == Some(ReceiptState::Read)
    })
    .await;
    let log = scout.wait_for_log_within("mail read exit", WAIT).await;
    assert!(log.contains("mail read exit 0"), "{log}");
    let read = std::fs::read_to_string(scout.dir.join("read.txt")).unwrap();
    assert!(read.contains("fixed the total"), "{read}");
    let builder_agent = agent(&ns, "team-builder").await;
    let record = builder_agent.status.clone().unwrap();
    assert!(record.mailbox.is_empty(), "read mail is not kept");
    assert_eq!(record.mail.unwrap().received_count, 1);

    // The hop: send -> notice typed (the builder was idle by then).
    let mailed = logged_at(&scout.fake_log(), "mailed ").unwrap();
    let report = format!(
        "mail sent -> notice read by the builder: {:.2}s (of which waiting for it to be idle: {:.2}s)\n",
        noticed - mailed,
        (idle - mailed).max(0.0)
    );
    println!("{report}");
    let logs = crate::support::cluster::repo_root().join("target/test-logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("mail-hop.txt"), report).unwrap();
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn bad_mail_is_refused_with_its_reason_and_nobody_writes_anothers_mail() {
    let ns = setup("mail-refused").await;
    let _operator = operator(&ns);
    let allow = json!([
        {"from": "builder", "to": ["scout", "overseer"]},
        {"from": "scout", "to": ["*"]},
        {"from": "overseer", "to": ["*"]}
    ]);
    create_team(&ns, allow).await;
    for member in ["team-scout", "team-builder", "team-reviewer"] {
        wait_started(&ns, member).await;
    }
    let send = |from: &str, args: &[&str]| {
        let user = agent_account(&ns, from);
        let mut all = vec!["mail", "--agent", from, "send"];
        all.extend_from_slice(args);
        overseer_as(&ns, Some(&user), &all)
    };
    let cases: [(&[&str], &str); 4] = [
        (&["nobody", "hi"], "no member of the swarm is nobody"),
        (
            &["reviewer", "hi"],
            "does not let builder (builder) write to reviewer (reviewer)",
        ),
        (
            &["scout", &"x".repeat(201)],
            "201 bytes; the swarm allows 200",
        ),
        (&["scout", "--type", "Not A Word", "hi"], "--type"),
    ];
    for (args, reason) in cases {
        let out = send("team-builder", args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(reason),
            "{args:?}: {out:?}"
        );
    }
    // Refused by the operator: recorded as Refused on the sender, nothing queued.
    let builder = agent(&ns, "team-builder").await.status.unwrap();
    let refused: Vec<_> = builder.mail.unwrap().receipts;
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(refused.iter().all(|r| r.state == ReceiptState::Refused));
    assert!(
        agent(&ns, "team-reviewer")
            .await
            .status
            .unwrap()
            .mailbox
            .is_empty()
    );

    // A rate: the sixth message in a minute is refused, the five before are queued.
    for n in 1..=5 {
        let out = send("team-scout", &["builder", &format!("note {n}")]);
        assert!(out.status.success(), "{out:?}");
    }
    let sixth = send("team-scout", &["builder", "note 6"]);
    assert!(
        String::from_utf8_lossy(&sixth.stderr).contains("more than 5 messages a minute"),
        "{sixth:?}"
    );
    let mailbox = agent(&ns, "team-builder").await.status.unwrap().mailbox;
    let bodies: Vec<&str> = mailbox.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(
        bodies,
        ["note 1", "note 2", "note 3", "note 4", "note 5"],
        "in order, once"
    );

    // A member that has ended is undeliverable at once.
    let released = overseer_as(
        &ns,
        None,
        &["loop", "release", "team-reviewer", "--reason", "done"],
    );
    assert!(released.status.success(), "{released:?}");
    wait_condition(&ns, "team-reviewer", "released", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(overseer::agent::AgentPhase::Done)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let ended = overseer_as(
        &ns,
        Some(&agent_account(&ns, "team-overseer")),
        &[
            "mail",
            "--agent",
            "team-overseer",
            "send",
            "reviewer",
            "one more thing",
        ],
    );
    let err = String::from_utf8_lossy(&ended.stderr);
    assert!(
        !ended.status.success() && err.contains("has ended"),
        "{ended:?}"
    );

    // Nobody writes another member's outbox or marks its mail read.
    let forged = overseer_as(
        &ns,
        Some(&agent_account(&ns, "team-reviewer")),
        &["mail", "--agent", "team-builder", "send", "scout", "forged"],
    );
    assert!(!forged.status.success(), "{forged:?}");
    let peeked = overseer_as(
        &ns,
        Some(&agent_account(&ns, "team-reviewer")),
        &["mail", "--agent", "team-builder", "read"],
    );
    assert!(!peeked.status.success(), "{peeked:?}");
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn unread_mail_expires_and_its_sender_is_told() {
    let ns = setup("mail-expiry").await;
    let _operator = operator(&ns);
    create_object::<overseer::swarm::Swarm>(
        &ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": "team"},
            "spec": {
                "defaults": {"runtime": {"name": "pi", "mode": "tui", "image": "example.com/pi:1"}},
                "coordination": {"mail": {"expiry": "3s"}},
                "agents": [{"name": "scout", "role": "scout"}, {"name": "builder", "role": "builder"}]
            }
        }),
    )
    .await;
    for member in ["team-scout", "team-builder"] {
        wait_started(&ns, member).await;
    }
    // The builder's CLI never reports itself idle (no shim runs it): no notice, and
    // nobody reads the message.
    let user = agent_account(&ns, "team-scout");
    let sent = overseer_as(
        &ns,
        Some(&user),
        &[
            "mail",
            "--agent",
            "team-scout",
            "send",
            "builder",
            "read me soon",
        ],
    );
    assert!(sent.status.success(), "{sent:?}");
    wait_condition(&ns, "team-scout", "its mail Expired", |a| {
        receipt_state(a, 1, "team-builder") == Some(ReceiptState::Expired)
    })
    .await;
    let builder = agent(&ns, "team-builder").await.status.unwrap();
    assert!(
        builder.mailbox.is_empty(),
        "expired mail leaves the mailbox"
    );
    assert_eq!(builder.mail.unwrap().received_count, 1);
}
