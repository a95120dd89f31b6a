use serde_json::json;

use super::*;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).unwrap()
}

fn time(secs: i64) -> String {
    at(secs).to_string()
}

fn swarm(spawn: serde_json::Value, spawned: serde_json::Value) -> Swarm {
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
        "metadata": {"name": "team", "namespace": "ns", "uid": "swarm-uid"},
        "spec": {
            "roles": {"tester": {"readOnly": true}},
            "agents": [{"name": "lead", "role": "lead"}, {"name": "scout", "role": "scout"}],
            "coordination": {"spawn": spawn}
        },
        "status": {"spawned": spawned}
    }))
    .unwrap()
}

fn policy() -> serde_json::Value {
    json!({"allow": [{"from": "lead", "roles": ["builder", "tester"]},
                     {"from": "builder", "roles": ["builder"]},
                     {"from": "scout", "roles": ["builder", "tester"]}],
           "maxRunning": 2})
}

fn member(name: &str, role: &str, status: serde_json::Value) -> Agent {
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"role": role, "swarm": "team"},
        "status": status
    }))
    .unwrap()
}

/// A request of seq `seq` for `name` in `role`, made at `secs`.
fn ask(seq: i64, name: &str, role: &str, secs: i64) -> serde_json::Value {
    json!({"seq": seq, "name": name, "role": role, "task": format!("task of {name}"), "time": time(secs)})
}

fn entry(name: &str, parent: &str, seq: i64, state: &str, secs: i64) -> serde_json::Value {
    json!({"name": name, "role": "builder", "parent": parent, "seq": seq, "depth": 1,
           "state": state, "requestedTime": time(secs)})
}

fn states(plan: &SpawnPlan) -> Vec<(String, SpawnedState)> {
    plan.spawned
        .iter()
        .map(|e| (e.name.clone(), e.state))
        .collect()
}

fn records(plan: &SpawnPlan, parent: &str) -> Vec<(i64, SpawnState, Option<String>)> {
    let mut records: Vec<_> = plan.answers[parent]
        .records
        .iter()
        .map(|(r, _)| (r.seq, r.state, r.reason.clone()))
        .collect();
    records.sort_by_key(|r| r.0);
    records
}

#[test]
fn three_requests_with_two_allowed_to_run_start_two_and_queue_one_first_come_first_served() {
    let lead = member(
        "team-lead",
        "lead",
        json!({"spawnRequests": [ask(1, "a", "builder", 10), ask(2, "b", "builder", 20)]}),
    );
    let scout = member(
        "team-scout",
        "scout",
        json!({"spawnRequests": [ask(1, "c", "tester", 15)]}),
    );
    let plan = plan(&swarm(policy(), json!([])), &[lead, scout], &[], at(30));
    assert_eq!(
        states(&plan),
        [
            ("a".to_string(), SpawnedState::Starting),
            ("c".to_string(), SpawnedState::Starting),
            ("b".to_string(), SpawnedState::Queued),
        ]
    );
    let created: Vec<(String, Option<String>, Option<String>)> = plan
        .create
        .iter()
        .map(|d| {
            (
                d.agent.name_any(),
                d.agent.spec.overseer.clone(),
                d.agent.spec.prompt.clone(),
            )
        })
        .collect();
    assert_eq!(
        created,
        [
            (
                "team-a".into(),
                Some("team-lead".into()),
                Some("task of a".into())
            ),
            (
                "team-c".into(),
                Some("team-scout".into()),
                Some("task of c".into())
            ),
        ]
    );
    let labels = plan.create[0].agent.labels();
    assert_eq!(
        labels.get(crate::labels::PARENT).map(String::as_str),
        Some("team-lead")
    );
    assert_eq!(plan.answers["team-lead"].answered, 2);
    assert_eq!(
        records(&plan, "team-lead"),
        [
            (1, SpawnState::Running, Some("agent team-a".into())),
            (2, SpawnState::Queued, None)
        ]
    );
}

#[test]
fn a_member_that_ends_frees_its_slot_for_the_queue_and_its_spawner_gets_mail() {
    let spawned = json!([
        entry("a", "team-lead", 1, "Running", 10),
        entry("c", "team-scout", 1, "Running", 15),
        entry("b", "team-lead", 2, "Queued", 20)
    ]);
    let lead = member(
        "team-lead",
        "lead",
        json!({"spawnRequests": [ask(2, "b", "builder", 20)],
               "spawns": {"answered": 2, "records": [
                   {"seq": 1, "name": "a", "state": "Running", "time": time(10)},
                   {"seq": 2, "name": "b", "state": "Queued", "time": time(20)}]}}),
    );
    let done = member("team-a", "builder", json!({"phase": "Done"}));
    let working = member("team-c", "builder", json!({"phase": "Running"}));
    let members = [
        lead,
        member("team-scout", "scout", json!({})),
        done,
        working,
    ];
    let plan = plan(&swarm(policy(), spawned), &members, &[], at(40));
    assert_eq!(
        states(&plan),
        [
            ("a".to_string(), SpawnedState::Ended),
            ("c".to_string(), SpawnedState::Running),
            ("b".to_string(), SpawnedState::Starting),
        ]
    );
    assert_eq!(plan.create.len(), 1);
    assert_eq!(
        plan.create[0].agent.spec.prompt.as_deref(),
        Some("task of b")
    );
    let answer = &plan.answers["team-lead"];
    let mail: Vec<&String> = answer
        .records
        .iter()
        .filter_map(|(_, m)| m.as_ref())
        .collect();
    assert_eq!(
        mail,
        ["The member a (builder) that you spawned has ended: Done. overseer ps shows it."]
    );
    let (ledger, notices) =
        answered(members[0].status.as_ref().unwrap().spawns.as_ref(), answer).unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        ledger
            .records
            .iter()
            .map(|r| (r.seq, r.state))
            .collect::<Vec<_>>(),
        [(1, SpawnState::Ended), (2, SpawnState::Running)]
    );
    // Written once: the same answer onto the ledger it made tells nothing again.
    assert_eq!(answered(Some(&ledger), answer), None);
}

#[test]
fn each_rule_and_limit_refuses_with_its_reason_and_nothing_is_spawned() {
    let base = policy();
    let with = |field: &str, value: serde_json::Value| {
        let mut p = base.clone();
        p[field] = value;
        p
    };
    let spawned_two = json!([
        entry("x", "team-lead", 1, "Ended", 1),
        entry("y", "team-lead", 2, "Ended", 2)
    ]);
    let deep = json!([{"name": "lead2", "role": "lead", "parent": "team-lead", "seq": 1,
        "depth": 2, "state": "Running", "requestedTime": time(1)}]);
    // (case, policy, spawned, parent (agent, role), request (name, role), other agents, reason starts with)
    type Row<'a> = (
        &'a str,
        serde_json::Value,
        serde_json::Value,
        (&'a str, &'a str),
        (&'a str, &'a str),
        Vec<String>,
        &'a str,
    );
    let rows: Vec<Row> = vec![
        (
            "no policy",
            serde_json::Value::Null,
            json!([]),
            ("team-lead", "lead"),
            ("n", "builder"),
            vec![],
            "the swarm sets no spec.coordination.spawn",
        ),
        (
            "a role that may not spawn",
            base.clone(),
            json!([]),
            ("team-scout", "reviewer"),
            ("n", "builder"),
            vec![],
            "role reviewer may not spawn (spec",
        ),
        (
            "a role outside the allow-list",
            base.clone(),
            json!([]),
            ("team-lead", "lead"),
            ("n", "merger"),
            vec![],
            "role lead may not spawn role merger",
        ),
        (
            "a read-only parent and a writing child",
            base.clone(),
            json!([]),
            ("team-scout", "scout"),
            ("n", "builder"),
            vec![],
            "role scout is read-only, and its children must be too",
        ),
        (
            "the overseer's name",
            base.clone(),
            json!([]),
            ("team-lead", "lead"),
            ("overseer", "builder"),
            vec![],
            "NameTaken: the swarm has a member overseer",
        ),
        (
            "a member of spec.agents",
            base.clone(),
            json!([]),
            ("team-lead", "lead"),
            ("scout", "builder"),
            vec![],
            "NameTaken: the swarm has a member scout",
        ),
        (
            "a name spawned before",
            base.clone(),
            spawned_two.clone(),
            ("team-lead", "lead"),
            ("x", "builder"),
            vec![],
            "NameTaken: the swarm has a member x",
        ),
        (
            "an agent of somebody else",
            base.clone(),
            json!([]),
            ("team-lead", "lead"),
            ("n", "builder"),
            vec!["team-n".to_string()],
            "NameTaken: agent team-n exists and does not belong",
        ),
        (
            "maxDepth",
            with("maxDepth", json!(2)),
            deep,
            ("team-lead2", "lead"),
            ("n", "builder"),
            vec![],
            "spec.coordination.spawn.maxDepth is 2 and this would make 3",
        ),
        (
            "perParent",
            with("perParent", json!(2)),
            spawned_two.clone(),
            ("team-lead", "lead"),
            ("n", "builder"),
            vec![],
            "spec.coordination.spawn.perParent is 2 and this would make 3",
        ),
        (
            "maxTotal",
            with("maxTotal", json!(2)),
            spawned_two.clone(),
            ("team-scout", "scout"),
            ("n", "tester"),
            vec![],
            "spec.coordination.spawn.maxTotal is 2 and this would make 3",
        ),
        (
            "maxMembers",
            with("maxMembers", json!(2)),
            json!([]),
            ("team-lead", "lead"),
            ("n", "builder"),
            vec![],
            "spec.coordination.spawn.maxMembers is 2 and this would make 3",
        ),
        (
            "tokenBudget",
            with("tokenBudget", json!(1000)),
            json!([]),
            ("team-lead", "lead"),
            ("n", "builder"),
            vec![],
            "spec.coordination.spawn.tokenBudget (1000) is spent: the members used 1200 tokens",
        ),
    ];
    for (case, policy, spawned, (parent, role), (name, child), others, reason) in rows {
        let mut swarm = swarm(policy.clone(), spawned.clone());
        if policy.is_null() {
            swarm.spec.coordination = None;
        }
        let asker = member(
            parent,
            role,
            json!({"attempt": 1, "spawnRequests": [ask(5, name, child, 5)],
                   "activity": {"state": "idle", "attempt": 1,
                                "usage": {"runs": 1, "inputTokens": 1000, "cachedInputTokens": 0, "outputTokens": 200, "totalTokens": 1200}}}),
        );
        let members = [asker, member("team-other", "builder", json!({}))];
        let plan = plan(&swarm, &members, &others, at(10));
        let before = swarm.status.as_ref().unwrap().spawned.clone();
        assert_eq!(plan.spawned, before, "{case}: nothing spawned");
        assert!(plan.create.is_empty(), "{case}");
        let answer = &plan.answers[parent];
        let (record, _) = answer.records.iter().find(|(r, _)| r.seq == 5).unwrap();
        assert_eq!(record.state, SpawnState::Refused, "{case}");
        let said = record.reason.clone().unwrap_or_default();
        assert!(said.starts_with(reason), "{case}: {said}");
    }
}

#[test]
fn a_cancel_drops_a_queued_member_deletes_a_running_one_and_refuses_what_is_not_yours() {
    let spawned = json!([
        entry("a", "team-lead", 1, "Running", 10),
        entry("b", "team-lead", 2, "Queued", 20),
        entry("c", "team-scout", 1, "Running", 30)
    ]);
    let cancel =
        |seq: i64, name: &str| json!({"seq": seq, "name": name, "cancel": true, "time": time(50)});
    let lead = member(
        "team-lead",
        "lead",
        json!({"spawnRequests": [cancel(3, "b"), cancel(4, "a"), cancel(5, "c")],
               "spawns": {"answered": 2}}),
    );
    let members = [
        lead,
        member("team-a", "builder", json!({"phase": "Running"})),
        member("team-c", "builder", json!({"phase": "Running"})),
    ];
    let plan = plan(&swarm(policy(), spawned), &members, &[], at(60));
    assert_eq!(
        states(&plan),
        [
            ("a".to_string(), SpawnedState::Cancelled),
            ("b".to_string(), SpawnedState::Cancelled),
            ("c".to_string(), SpawnedState::Running),
        ]
    );
    assert_eq!(plan.delete, ["team-a"]);
    assert!(plan.create.is_empty(), "a cancelled queue starts nothing");
    let told = records(&plan, "team-lead");
    assert_eq!(
        told.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        [
            (1, SpawnState::Cancelled),
            (2, SpawnState::Cancelled),
            (3, SpawnState::Cancelled),
            (4, SpawnState::Cancelled),
            (5, SpawnState::Refused)
        ]
    );
}

#[test]
fn a_start_not_seen_yet_is_created_again_and_a_name_taken_meanwhile_is_refused() {
    let spawned = json!([entry("a", "team-lead", 1, "Starting", 10)]);
    let lead = member(
        "team-lead",
        "lead",
        json!({"spawnRequests": [ask(1, "a", "builder", 10)], "spawns": {"answered": 1}}),
    );
    let swarm = swarm(policy(), spawned);
    let mut again = plan(&swarm, std::slice::from_ref(&lead), &[], at(20));
    assert_eq!(states(&again), [("a".to_string(), SpawnedState::Starting)]);
    assert_eq!(
        again.create.len(),
        1,
        "made again: a create of ours is taken as made"
    );
    name_taken_by_another(&mut again, "team-", "team-a", at(21));
    assert!(again.spawned.is_empty() && again.create.is_empty());
    assert_eq!(records(&again, "team-lead")[0].1, SpawnState::Refused);
    // A stop after the list was written and before the answer: the request is answered
    // as the list has it, never refused as a name taken by itself.
    let unanswered = member(
        "team-lead",
        "lead",
        json!({"spawnRequests": [ask(1, "a", "builder", 10)]}),
    );
    let after_stop = plan(&swarm, &[unanswered], &[], at(20));
    assert_eq!(
        records(&after_stop, "team-lead"),
        [(1, SpawnState::Running, Some("agent team-a".into()))]
    );
    assert_eq!(after_stop.create.len(), 1);
    let seen = plan(
        &swarm,
        &[
            lead,
            member("team-a", "builder", json!({"phase": "Pending"})),
        ],
        &[],
        at(30),
    );
    assert_eq!(states(&seen), [("a".to_string(), SpawnedState::Running)]);
    assert!(seen.create.is_empty());
}

#[test]
fn a_ledger_keeps_every_live_record_and_the_latest_final_ones() {
    let records: Vec<(SpawnRecord, Option<String>)> = (1..=70)
        .map(|seq| {
            let state = if seq % 10 == 0 {
                SpawnState::Queued
            } else {
                SpawnState::Refused
            };
            let record = SpawnRecord {
                seq,
                name: format!("m{seq}"),
                state,
                reason: None,
                time: Time(at(seq)),
            };
            (record, None)
        })
        .collect();
    let answer = Answer {
        answered: 70,
        records,
    };
    let (ledger, _) = answered(None, &answer).unwrap();
    assert_eq!(ledger.records.len(), RECORDS_KEPT);
    assert_eq!(ledger.answered, 70);
    let live = ledger
        .records
        .iter()
        .filter(|r| r.state == SpawnState::Queued)
        .count();
    assert_eq!(live, 7, "no queued record is dropped");
    assert_eq!(ledger.records[0].seq, 7, "the oldest final ones go first");
}

#[test]
fn a_member_that_ended_before_its_request_was_answered_still_gets_its_spawner_mail() {
    // A stop after the start and before the answer; the member ended meanwhile.
    let spawned = json!([entry("a", "team-lead", 1, "Starting", 10)]);
    let lead = member(
        "team-lead",
        "lead",
        json!({"spawnRequests": [ask(1, "a", "builder", 10)]}),
    );
    let done = member("team-a", "builder", json!({"phase": "Done"}));
    let plan = plan(&swarm(policy(), spawned), &[lead, done], &[], at(20));
    let answer = &plan.answers["team-lead"];
    assert_eq!(answer.answered, 1);
    let (record, mail) = &answer.records[0];
    assert_eq!((record.seq, record.state), (1, SpawnState::Ended));
    assert!(
        mail.as_deref()
            .is_some_and(|m| m.contains("has ended: Done")),
        "{mail:?}"
    );
}

#[test]
fn an_end_written_to_the_list_but_not_to_its_spawner_is_told_later_once() {
    // A stop after the list's write (Ended) and before the spawner's answer.
    let spawned = json!([entry("a", "team-lead", 1, "Ended", 10)]);
    let lead = |state: &str| {
        member(
            "team-lead",
            "lead",
            json!({"spawns": {"answered": 1, "records": [
                {"seq": 1, "name": "a", "state": state, "time": time(10)}]}}),
        )
    };
    let done = member("team-a", "builder", json!({"phase": "Done"}));
    let swarm = swarm(policy(), spawned);
    let plan = plan(&swarm, &[lead("Running"), done.clone()], &[], at(20));
    let (record, mail) = &plan.answers["team-lead"].records[0];
    assert_eq!(record.state, SpawnState::Ended);
    assert!(
        mail.as_deref()
            .is_some_and(|m| m.contains("has ended: Done")),
        "{mail:?}"
    );
    let told = super::plan(&swarm, &[lead("Ended"), done], &[], at(30));
    assert!(told.answers.is_empty(), "told once, and nobody asked again");
}
