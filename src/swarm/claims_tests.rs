use serde_json::json;

use super::*;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).unwrap()
}

fn swarm(claims: serde_json::Value, phase: &str) -> Swarm {
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
        "metadata": {"name": "team", "namespace": "ns", "uid": "u"},
        "spec": {"agents": [{"name": "a", "role": "builder"}, {"name": "b", "role": "builder"}]},
        "status": {"claims": claims, "phase": phase}
    }))
    .unwrap()
}

/// Member `name` in `phase` at `attempt`, with `requests` (`[seq, secs, release, [paths]]`)
/// and its requests answered through `answered`.
fn member(name: &str, phase: &str, attempt: i64, requests: serde_json::Value) -> Agent {
    let requests: Vec<serde_json::Value> = requests
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            json!({"seq": r[0], "time": at(r[1].as_i64().unwrap()).to_string(),
                   "release": r[2], "paths": r[3]})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"role": "builder", "swarm": "team"},
        "status": {"phase": phase, "attempt": attempt, "claimRequests": requests}
    }))
    .unwrap()
}

fn held(path: &str, holder: &str, attempt: i64, secs: i64) -> serde_json::Value {
    json!({"path": path, "holder": holder, "attempt": attempt, "since": at(secs).to_string()})
}

/// Each member's answers as (member, seq, state, reason).
type Answers = Vec<(String, i64, ClaimState, String)>;

/// The answers, and the claims as (path, holder).
fn outcome(plan: &ClaimPlan) -> (Answers, Vec<(String, String)>) {
    let answers = plan
        .answers
        .iter()
        .flat_map(|(m, a)| {
            a.records.iter().map(move |r| {
                (
                    m.clone(),
                    r.seq,
                    r.state,
                    r.reason.clone().unwrap_or_default(),
                )
            })
        })
        .collect();
    let claims = plan
        .claims
        .iter()
        .map(|c| (c.path.clone(), c.holder.clone()))
        .collect();
    (answers, claims)
}

#[test]
fn claims_are_granted_first_come_first_served_and_refused_with_the_holder_and_since_when() {
    // a asks first for src (a directory), b a second later for a file in it and for docs.
    let a = member("team-a", "Running", 1, json!([[1, 10, false, ["src/"]]]));
    let b = member(
        "team-b",
        "Running",
        1,
        json!([
            [1, 11, false, ["src/lib.rs", "docs"]],
            [2, 12, false, ["./docs//a.md"]]
        ]),
    );
    let plan = plan(&swarm(json!([]), "Running"), &[b, a], at(20));
    let since = at(20);
    assert_eq!(
        outcome(&plan),
        (
            vec![
                ("team-a".into(), 1, ClaimState::Granted, String::new()),
                (
                    "team-b".into(),
                    1,
                    ClaimState::Refused,
                    format!("src is claimed by team-a since {since}")
                ),
                ("team-b".into(), 2, ClaimState::Granted, String::new()),
            ],
            vec![
                ("docs/a.md".into(), "team-b".into()),
                ("src".into(), "team-a".into())
            ]
        ),
        "a refusal claims nothing of the request (docs stays free), the holder is named"
    );
    let refused = &plan.answers["team-b"].records[0];
    assert_eq!(refused.held.len(), 1);
    assert_eq!(plan.answers["team-b"].answered, 2);
}

#[test]
fn claims_end_with_the_holders_loop_its_attempt_its_membership_and_the_run() {
    let claims = json!([
        held("a.rs", "team-a", 1, 0),
        held("b.rs", "team-b", 1, 0),
        held("c.rs", "team-c", 2, 0),
        held("d.rs", "team-d", 1, 0),
        held("e.rs", "team-gone", 1, 0),
        held("f.rs", "team-f", 1, 0)
    ]);
    let members = [
        member("team-a", "Running", 1, json!([])),
        member("team-b", "Done", 1, json!([])),
        member("team-c", "Running", 3, json!([])),
        member("team-d", "Failed", 1, json!([])),
        member("team-f", "Blocked", 1, json!([])),
    ];
    let plan = plan(&swarm(claims.clone(), "Running"), &members, at(5));
    assert_eq!(
        outcome(&plan).1,
        [
            ("a.rs".to_string(), "team-a".to_string()),
            ("f.rs".into(), "team-f".into())
        ],
        "Done, Failed, a new attempt and a member gone end a claim; Blocked keeps it (it may be released to go on)"
    );
    assert_eq!(plan.ended.len(), 4);
    let ended = super::plan(&swarm(claims, "Ended"), &members, at(5));
    assert!(ended.claims.is_empty(), "the run's end ends every claim");
}

#[test]
fn releases_bad_paths_and_members_without_an_attempt() {
    let claims = json!([
        held("a.rs", "team-a", 1, 0),
        held("b.rs", "team-a", 1, 0),
        held("c.rs", "team-b", 1, 0)
    ]);
    let a = member(
        "team-a",
        "Running",
        1,
        json!([
            [1, 1, true, ["a.rs"]],
            [2, 2, false, ["../etc/passwd"]],
            [3, 3, false, []]
        ]),
    );
    let b = member("team-b", "Running", 1, json!([[1, 4, true, []]]));
    let c = member("team-c", "Pending", 0, json!([[1, 5, false, ["x"]]]));
    let mut c = c;
    c.status.as_mut().unwrap().attempt = None;
    let plan = plan(&swarm(claims, "Running"), &[a, b, c], at(9));
    assert_eq!(
        outcome(&plan),
        (
            vec![
                ("team-a".into(), 1, ClaimState::Released, String::new()),
                (
                    "team-a".into(),
                    2,
                    ClaimState::Refused,
                    "\"../etc/passwd\" is not a workspace path: outside the workspace".into()
                ),
                (
                    "team-a".into(),
                    3,
                    ClaimState::Refused,
                    "no path named".into()
                ),
                ("team-b".into(), 1, ClaimState::Released, String::new()),
                (
                    "team-c".into(),
                    1,
                    ClaimState::Refused,
                    "it has no attempt running yet".into()
                ),
            ],
            vec![("b.rs".into(), "team-a".into())]
        ),
        "a release names paths or, without, gives every claim up"
    );
}

#[test]
fn an_answer_already_written_is_not_written_again_and_old_records_go() {
    let mut answer = ClaimAnswer {
        answered: 1,
        records: vec![ClaimRecord {
            seq: 1,
            state: ClaimState::Granted,
            reason: None,
            held: Vec::new(),
            time: Time(at(0)),
        }],
    };
    let ledger = answered(None, &answer).unwrap();
    assert_eq!(ledger.answered, 1);
    assert_eq!(answered(Some(&ledger), &answer), None);
    let mut ledger = ledger;
    for seq in 2..=(RECORDS_KEPT as i64 + 4) {
        answer.answered = seq;
        answer.records[0].seq = seq;
        ledger = answered(Some(&ledger), &answer).unwrap();
    }
    assert_eq!(ledger.records.len(), RECORDS_KEPT);
    assert_eq!(ledger.records[0].seq, 5, "the oldest records go first");
}
