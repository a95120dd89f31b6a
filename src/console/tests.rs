use jiff::Timestamp;
use serde_json::json;

use super::actions::{Action, What, parse};
use super::context::Console;
use super::server::{page_of, same_page};
use super::view::{Page, Snapshot, page};
use crate::agent::Agent;
use crate::goal::Goal;
use crate::swarm::Swarm;

fn now() -> Timestamp {
    "2026-12-07T10:00:00Z".parse().unwrap()
}

fn objects<K: serde::de::DeserializeOwned>(yaml: &str) -> Vec<K> {
    serde_saphyr::from_str(yaml).unwrap()
}

fn swarms() -> Vec<Swarm> {
    objects(
        r#"
- metadata: {name: team, namespace: a, creationTimestamp: "2026-12-07T09:00:00Z"}
  spec: {}
  status:
    agents: {total: 2, working: 1, pending: 0, running: 2, done: 0, blocked: 0, failed: 0, suspended: 0, escalations: 1, unreadMail: 0}
    conditions:
      - {type: Ready, status: "True", reason: Ready, message: "", lastTransitionTime: "2026-12-07T09:00:00Z"}
"#,
    )
}

fn agents() -> Vec<Agent> {
    objects(
        r#"
- metadata: {name: team-builder, namespace: a}
  spec: {role: builder, swarm: team, runtime: {name: pi}}
  status:
    attempt: 1
    activity: {state: working, attempt: 1, usage: {runs: 2, inputTokens: 1000, cachedInputTokens: 0, outputTokens: 234, totalTokens: 1234}}
    inbox:
      - {seq: 3, from: user, text: "queued one", sentTime: "2026-12-07T09:59:00Z"}
      - {seq: 2, from: team-lead, text: "in flight", sentTime: "2026-12-07T09:58:00Z"}
    sends:
      handledSeq: 1
      inFlightSeq: 2
      results:
        - {seq: 1, from: user, outcome: Failed, reason: "no running pod could take it", time: "2026-12-07T09:50:00Z"}
    escalations:
      - {id: 1, kind: StallLimit, severity: warning, state: Open, attempt: 1, reason: "no output for 10m", openedTime: "2026-12-07T09:40:00Z"}
- metadata: {name: loner, namespace: a}
  spec: {role: builder, runtime: {name: pi}}
"#,
    )
}

fn goals() -> Vec<Goal> {
    objects(
        r#"
- metadata: {name: ship, namespace: a, creationTimestamp: "2026-12-07T09:00:00Z"}
  spec: {swarm: team, paused: true, steps: [{name: build, action: Build it.}, {name: test, action: Test it.}]}
  status:
    phase: Running
    completedSteps: 1
    steps:
      - {name: build, phase: Succeeded, attempts: 1, startedAt: "2026-12-07T09:10:00Z", finishedAt: "2026-12-07T09:12:05Z", result: "built"}
      - {name: test, phase: Running, attempts: 2, startedAt: "2026-12-07T09:55:00Z", message: "retrying after a failure"}
"#,
    )
}

fn shown(at: &Page) -> serde_json::Value {
    let (swarms, goals, agents) = (swarms(), goals(), agents());
    page(
        at,
        &Snapshot {
            swarms: &swarms,
            goals: &goals,
            agents: &agents,
            events: &[],
            trouble: None,
            now: now(),
        },
    )
}

#[test]
fn the_runs_page_is_every_swarm_and_goal_as_the_cli_lists_them() {
    insta::assert_yaml_snapshot!(shown(&Page::Runs));
}

#[test]
fn a_swarm_page_is_its_members_goals_and_open_escalations() {
    let view = shown(&Page::Swarm {
        namespace: "a".into(),
        name: "team".into(),
    });
    let members: Vec<&str> = view["members"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cells"][2].as_str().unwrap())
        .collect();
    assert_eq!(members, ["team-builder"], "only the swarm's own agents");
    assert_eq!(
        view["members"]["link"],
        json!(2),
        "linked by the AGENT column"
    );
    assert_eq!(view["escalations"][0]["reason"], json!("no output for 10m"));
    assert_eq!(view["goals"]["rows"][0]["href"], json!("#/goal/a/ship"));
}

#[test]
fn an_agent_page_follows_each_message_to_its_outcome() {
    let view = shown(&Page::Agent {
        namespace: "a".into(),
        name: "team-builder".into(),
    });
    let states: Vec<(i64, &str)> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["seq"].as_i64().unwrap(), m["state"].as_str().unwrap()))
        .collect();
    assert_eq!(states, [(3, "queued"), (2, "delivering"), (1, "failed")]);
    assert_eq!(
        view["messages"][2]["reason"],
        json!("no running pod could take it")
    );
}

#[test]
fn a_goal_page_is_its_steps_with_checkpoints_and_durations() {
    let view = shown(&Page::Goal {
        namespace: "a".into(),
        name: "ship".into(),
    });
    insta::assert_yaml_snapshot!(view["steps"]);
    assert_eq!(view["paused"], json!(true));
}

#[test]
fn a_page_of_an_object_that_is_gone_says_so() {
    let view = shown(&Page::Agent {
        namespace: "b".into(),
        name: "team-builder".into(),
    });
    assert_eq!(view["found"], json!(false), "another namespace's is not it");
}

#[test]
fn a_query_names_a_page() {
    let query = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let rows = [
        (query(&[]), Ok(Page::Runs)),
        (
            query(&[("view", "agent"), ("namespace", "a"), ("name", "x")]),
            Ok(Page::Agent {
                namespace: "a".into(),
                name: "x".into(),
            }),
        ),
        (
            query(&[("view", "goal"), ("namespace", "a")]),
            Err("namespace and name are required".to_string()),
        ),
        (
            query(&[("view", "secrets")]),
            Err("no view \"secrets\"".to_string()),
        ),
    ];
    for (query, expected) in rows {
        assert_eq!(page_of(&query), expected, "{query:?}");
    }
}

fn console() -> Console {
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    Console::new(super::live::Live::empty(), client, 8765, "default".into())
}

#[tokio::test]
async fn an_action_comes_only_from_the_consoles_own_page() {
    let console = console();
    let headers = |pairs: &[(&'static str, &str)]| {
        let mut headers = axum::http::HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, value.parse().unwrap());
        }
        headers
    };
    let token = console.csrf.clone();
    let json_type = ("content-type", "application/json");
    let rows: Vec<(axum::http::HeaderMap, bool)> = vec![
        (headers(&[("x-csrf-token", &token), json_type]), true),
        (
            headers(&[
                ("x-csrf-token", &token),
                json_type,
                ("origin", "http://localhost:8765"),
            ]),
            true,
        ),
        (headers(&[json_type]), false),
        (headers(&[("x-csrf-token", "0000"), json_type]), false),
        (
            headers(&[("x-csrf-token", &token), ("content-type", "text/plain")]),
            false,
        ),
        (
            headers(&[
                ("x-csrf-token", &token),
                json_type,
                ("origin", "http://evil.example"),
            ]),
            false,
        ),
    ];
    for (headers, allowed) in rows {
        assert_eq!(
            same_page(&console, &headers).is_ok(),
            allowed,
            "{headers:?}"
        );
    }
    assert_eq!(console.csrf.len(), 64, "32 random bytes");
    assert_ne!(
        console.csrf,
        self::console().csrf,
        "a new token per console"
    );
}

#[test]
fn a_new_run_is_checked_before_anything_is_sent() {
    let goal =
        "apiVersion: overseer.dev/v1alpha1\nkind: Goal\nmetadata: {name: g}\nspec: {steps: []}\n";
    let (kind, namespace, object) = parse(goal, "team").unwrap();
    assert_eq!((kind.as_str(), namespace.as_str()), ("Goal", "team"));
    assert_eq!(object["metadata"]["namespace"], json!("team"));
    let refused = |yaml: &str| {
        let error = parse(yaml, "team").unwrap_err();
        error["causes"][0]["field"].as_str().unwrap().to_string()
    };
    assert_eq!(refused("kind: [unclosed"), "yaml");
    assert_eq!(
        refused("apiVersion: v1\nkind: Pod\nmetadata: {name: p}"),
        "apiVersion"
    );
    assert_eq!(
        refused("apiVersion: overseer.dev/v1alpha1\nkind: PRWatch\nmetadata: {name: p}"),
        "kind"
    );
    assert_eq!(
        refused("apiVersion: overseer.dev/v1alpha1\nkind: Swarm\nmetadata: {}"),
        "metadata.name"
    );
}

#[test]
fn an_action_is_one_of_those_known_and_nothing_more() {
    let action: Action = serde_json::from_value(json!({"key": "k", "action": "send",
        "namespace": "a", "name": "x", "text": "hi"}))
    .unwrap();
    assert_eq!(
        action.what,
        What::Send {
            namespace: "a".into(),
            name: "x".into(),
            text: "hi".into()
        }
    );
    for refused in [
        json!({"key": "k", "action": "delete", "namespace": "a", "name": "x"}),
        json!({"action": "pause", "namespace": "a", "name": "x"}),
    ] {
        assert!(
            serde_json::from_value::<Action>(refused.clone()).is_err(),
            "{refused}"
        );
    }
}

#[test]
fn a_goal_before_its_first_status_shows_the_steps_of_its_spec() {
    let goals: Vec<Goal> = objects(
        "- metadata: {name: new, namespace: a}\n  spec: {steps: [{name: build, action: Build it.}, {name: ship, role: guardian, action: Ship it.}]}\n",
    );
    let view = page(
        &Page::Goal {
            namespace: "a".into(),
            name: "new".into(),
        },
        &Snapshot {
            swarms: &[],
            goals: &goals,
            agents: &[],
            events: &[],
            trouble: Some("watching Agents failed: 403; retrying"),
            now: now(),
        },
    );
    let rows: Vec<(String, String, String)> = view["steps"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let cell = |i: usize| r["cells"][i].as_str().unwrap().to_string();
            (cell(0), cell(1), cell(2))
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("build".into(), "-".into(), "Pending".into()),
            ("ship".into(), "guardian".into(), "Pending".into())
        ]
    );
    assert_eq!(
        view["trouble"],
        json!("watching Agents failed: 403; retrying")
    );
}

#[test]
fn a_websocket_upgrade_is_answered_as_rfc_6455_says() {
    // The RFC's own example (section 1.3).
    assert_eq!(
        super::attach::accept("dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
}

#[tokio::test]
async fn a_terminal_is_joined_only_from_the_consoles_own_page() {
    let console = console();
    let ours = format!("overseer.csrf.{}", console.csrf);
    let headers = |origin: &str, protocols: &str| {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("origin", origin.parse().unwrap());
        headers.insert("sec-websocket-protocol", protocols.parse().unwrap());
        headers
    };
    let rows = [
        (headers("http://127.0.0.1:8765", &ours), Ok(ours.clone())),
        (
            headers("http://localhost:8765", &format!("chat, {ours}")),
            Ok(ours.clone()),
        ),
        (
            headers("http://evil.example", &ours),
            Err("a terminal from \"http://evil.example\" is not the console's".to_string()),
        ),
        (
            headers("http://127.0.0.1:8765", "overseer.csrf.0000"),
            Err("this terminal did not come from the console's page (no valid CSRF token)".into()),
        ),
    ];
    for (headers, expected) in rows {
        assert_eq!(
            super::attach::from_the_page(&console, &headers),
            expected,
            "{headers:?}"
        );
    }
}
