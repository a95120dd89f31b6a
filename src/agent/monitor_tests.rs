use serde_json::json;

use super::*;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).unwrap()
}

fn swarm() -> Swarm {
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
        "metadata": {"name": "team", "namespace": "ns", "uid": "swarm-uid"},
        "spec": {"agents": [{"name": "watch", "role": "monitor"}, {"name": "a", "role": "builder"}]},
        "status": {"spawned": [{"name": "eye", "role": "monitor", "parent": "team-a", "seq": 1,
            "depth": 1, "state": "Running", "requestedTime": at(0).to_string()}]}
    }))
    .unwrap()
}

fn agent(name: &str, role: &str, owner_uid: Option<&str>, status: serde_json::Value) -> Agent {
    let mut metadata = json!({"name": name, "namespace": "ns"});
    if let Some(uid) = owner_uid {
        metadata["ownerReferences"] = json!([{"apiVersion": "overseer.dev/v1alpha1",
            "kind": "Swarm", "name": "team", "uid": uid, "controller": true}]);
    }
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent", "metadata": metadata,
        "spec": {"role": role, "swarm": "team"}, "status": status
    }))
    .unwrap()
}

#[test]
fn a_monitor_is_the_swarms_own_member_of_that_role_never_a_name_or_role_taken() {
    let swarm = swarm();
    let cases = [
        (
            "team-watch",
            "monitor",
            Some("swarm-uid"),
            true,
            "listed in the spec",
        ),
        (
            "team-eye",
            "monitor",
            Some("swarm-uid"),
            true,
            "spawned as a monitor",
        ),
        (
            "team-watch",
            "monitor",
            Some("other-uid"),
            false,
            "another swarm's owner uid",
        ),
        (
            "team-watch",
            "monitor",
            None,
            false,
            "no owner: anybody's agent",
        ),
        (
            "team-a",
            "monitor",
            Some("swarm-uid"),
            false,
            "a builder's name",
        ),
        (
            "team-stranger",
            "monitor",
            Some("swarm-uid"),
            false,
            "a name the swarm never gave",
        ),
        (
            "team-watch",
            "builder",
            Some("swarm-uid"),
            false,
            "not the monitor role",
        ),
    ];
    for (name, role, owner, want, why) in cases {
        let candidate = agent(name, role, owner, json!({}));
        assert_eq!(monitors(&swarm, &candidate), want, "{why}");
    }
    assert!(in_fleet(
        &swarm,
        &agent("team-a", "builder", Some("swarm-uid"), json!({}))
    ));
    assert!(!in_fleet(
        &swarm,
        &agent("x", "builder", Some("other-uid"), json!({}))
    ));
}

#[test]
fn each_member_reads_as_one_state_the_ones_to_look_at_first() {
    let spec: AgentSpec = serde_json::from_value(json!({
        "role": "builder", "loop": {"enabled": true, "idleAfter": "5m", "memoryEscalatesAbove": 90}
    }))
    .unwrap();
    let running = |state: &str, since: i64, memory: i64| {
        json!({"phase": "Running", "attempt": 1, "activity": {"state": state, "attempt": 1,
            "since": at(since).to_string(),
            "resources": {"memoryBytes": memory, "memoryLimitBytes": 100}}})
    };
    let cases = [
        (running("working", 0, 50), FleetState::Working),
        (running("working", 0, 95), FleetState::OverBudget),
        (running("idle", 590, 10), FleetState::Idle),
        (running("idle", 0, 10), FleetState::Stalled),
        (running("waiting", 590, 10), FleetState::Waiting),
        (running("waiting", 0, 10), FleetState::Stalled),
        (
            json!({"phase": "Blocked", "attempt": 1}),
            FleetState::Blocked,
        ),
        (json!({"phase": "Done", "attempt": 1}), FleetState::Done),
        (json!({"phase": "Pending"}), FleetState::Starting),
        (
            json!({"phase": "Running", "attempt": 2}),
            FleetState::Starting,
        ),
    ];
    for (status, want) in cases {
        let member = agent("team-a", "builder", Some("swarm-uid"), status.clone());
        assert_eq!(state_of(&member, &spec, at(600)), want, "{status}");
    }
}

#[test]
fn patrols_come_every_interval_from_the_start_and_never_faster_than_a_minute() {
    let fast: LoopSpec = serde_json::from_value(json!({"monitorEvery": "10s"})).unwrap();
    assert_eq!(every(&fast), MIN_EVERY);
    assert_eq!(every(&LoopSpec::default()), DEFAULT_EVERY);
    let started: AgentStatus =
        serde_json::from_value(json!({"startTime": at(0).to_string()})).unwrap();
    assert_eq!(next_patrol(&started, DEFAULT_EVERY), Some(at(600)));
    let patrolled: AgentStatus = serde_json::from_value(json!({
        "startTime": at(0).to_string(), "patrol": {"patrols": 2, "lastTime": at(900).to_string()}
    }))
    .unwrap();
    assert_eq!(next_patrol(&patrolled, DEFAULT_EVERY), Some(at(1500)));
    assert_eq!(next_patrol(&AgentStatus::default(), DEFAULT_EVERY), None);
}

#[test]
fn the_summary_lists_the_fleet_by_state_with_nothing_a_member_wrote() {
    let member = |name: &str, role: &str, state, open_escalations| FleetMember {
        name: name.into(),
        role: role.into(),
        state,
        open_escalations,
    };
    let fleet = [
        member("team-b", "builder", FleetState::Working, 0),
        member("team-a", "builder", FleetState::Working, 0),
        member("team-c", "builder", FleetState::Stalled, 1),
        member("team-d", "scout", FleetState::Blocked, 2),
        member("team-e", "builder", FleetState::OverBudget, 0),
        member("team-overseer", "overseer", FleetState::Idle, 0),
    ];
    insta::assert_snapshot!(summary("team", 3, &fleet, at(0)), @r#"
[overseer] Patrol #3 of swarm team at 2027-01-15T08:00:00Z: 6 members.
- over budget (1): team-e (builder)
- stalled (1): team-c (builder)
- blocked (1): team-d (scout)
- working (2): team-a (builder), team-b (builder)
- idle (1): team-overseer (overseer)
Open escalations: team-c 1, team-d 2.
Look closer with `overseer ps`, `overseer peek NAME`, `overseer escalations NAME` and `overseer claims`. Raise what needs the overseer with `overseer escalate --severity warning --reason "<who and what>"`; then wait for the next patrol.
"#);
}
