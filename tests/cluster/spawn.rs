//! Members that spawn members, on the real control plane: `overseer spawn` run as the
//! member's own ServiceAccount, answered by the operator within the swarm's limits;
//! queued members start as others end, each limit and rule refuses with its reason,
//! rights never widen, a repeated or interrupted request never makes two, and deleting
//! the swarm leaves no spawned member behind.

use std::process::Output;
use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use overseer::agent::{Agent, AgentPhase};
use overseer::kinds::spawn::{SpawnState, SpawnedState};
use overseer::swarm::Swarm;
use serde_json::json;

use crate::agent::{WAIT, agent, wait_condition, wait_events, wait_started};
use crate::overseer::{overseer_as, said};
use crate::support::cluster::{
    TestNamespace, agent_account, create_object, operator, setup, wait_in,
};

async fn create_team(ns: &TestNamespace, spawn: serde_json::Value) {
    create_object::<Swarm>(
        ns,
        json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": "team"},
            "spec": {
                "defaults": {
                    "runtime": {"name": "pi", "mode": "tui", "image": "example.com/pi:1"},
                    "loop": {"enabled": true, "interval": "1s", "idleAfter": "1h"}
                },
                "coordination": {"spawn": spawn},
                "agents": [
                    {"name": "lead", "role": "lead"},
                    {"name": "scout", "role": "scout"},
                    {"name": "reviewer", "role": "reviewer"}
                ]
            }
        }),
    )
    .await;
}

/// `overseer spawn ARGS` as `member`'s own ServiceAccount.
fn spawn(ns: &TestNamespace, member: &str, args: &[&str]) -> Output {
    let user = agent_account(ns, member);
    let mut all = vec!["spawn", "--agent", member];
    all.extend_from_slice(args);
    overseer_as(ns, Some(&user), &all)
}

async fn swarm(ns: &TestNamespace) -> Swarm {
    ns.api::<Swarm>().get("team").await.unwrap()
}

fn spawned_states(swarm: &Swarm) -> Vec<(String, SpawnedState)> {
    swarm
        .status
        .iter()
        .flat_map(|s| &s.spawned)
        .map(|e| (e.name.clone(), e.state))
        .collect()
}

async fn exists(ns: &TestNamespace, name: &str) -> bool {
    ns.api::<Agent>().get_opt(name).await.unwrap().is_some()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn three_spawns_with_two_allowed_to_run_give_two_members_and_one_queued_that_starts_later() {
    let ns = setup("spawn-queue").await;
    let _operator = operator(&ns);
    create_team(
        &ns,
        json!({"allow": [{"from": "lead", "roles": ["builder"]}], "maxRunning": 2}),
    )
    .await;
    wait_started(&ns, "team-lead").await;

    let first = spawn(
        &ns,
        "team-lead",
        &["a", "--role", "builder", "--task", "build a"],
    );
    assert!(
        said(&first).contains("spawn #1 a: Running: agent team-a"),
        "{}",
        said(&first)
    );
    let second = spawn(
        &ns,
        "team-lead",
        &["b", "--role", "builder", "--task", "build b"],
    );
    assert!(second.status.success(), "{}", said(&second));
    let third = spawn(
        &ns,
        "team-lead",
        &["c", "--role", "builder", "--task", "build c"],
    );
    assert!(
        said(&third).contains("spawn #3 c: Queued"),
        "{}",
        said(&third)
    );

    // Two members run, each the swarm's, overseen by its spawner, with its task.
    let a = wait_started(&ns, "team-a").await;
    wait_started(&ns, "team-b").await;
    assert!(!exists(&ns, "team-c").await, "c waits in the queue");
    assert_eq!(a.spec.overseer.as_deref(), Some("team-lead"));
    assert_eq!(a.spec.prompt.as_deref(), Some("build a"));
    assert_eq!(a.owner_references()[0].name, "team");
    assert_eq!(
        a.labels().get("overseer.dev/parent").map(String::as_str),
        Some("team-lead")
    );
    let team = wait_in(&ns, "the queue in the swarm's status", WAIT, || async {
        let team = swarm(&ns).await;
        (team.status.as_ref()?.agents.queued == 1).then_some(team)
    })
    .await;
    assert_eq!(
        spawned_states(&team),
        [
            ("a".to_string(), SpawnedState::Running),
            ("b".to_string(), SpawnedState::Running),
            ("c".to_string(), SpawnedState::Queued),
        ]
    );

    // The spawner oversees what it spawned: it may end a's loop; then c starts.
    let released = overseer_as(
        &ns,
        Some(&agent_account(&ns, "team-lead")),
        &["loop", "release", "team-a", "--reason", "enough"],
    );
    assert!(released.status.success(), "{}", said(&released));
    wait_condition(&ns, "team-a", "a released", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Done)
    })
    .await;
    let c = wait_started(&ns, "team-c").await;
    assert_eq!(c.spec.prompt.as_deref(), Some("build c"));

    // The spawner is told by mail, once, and its ledger follows.
    let lead = wait_condition(&ns, "team-lead", "mail that a ended", |lead| {
        lead.status
            .as_ref()
            .is_some_and(|s| s.mailbox.iter().any(|m| m.from == "team-a"))
    })
    .await;
    let status = lead.status.unwrap();
    let ended: Vec<_> = status
        .mailbox
        .iter()
        .filter(|m| m.from == "team-a")
        .collect();
    assert_eq!(ended.len(), 1, "{:?}", status.mailbox);
    assert!(
        ended[0]
            .body
            .contains("The member a (builder) that you spawned has ended: Done")
    );
    let records: Vec<(i64, SpawnState)> = status
        .spawns
        .unwrap()
        .records
        .iter()
        .map(|r| (r.seq, r.state))
        .collect();
    assert_eq!(
        records,
        [
            (1, SpawnState::Ended),
            (2, SpawnState::Running),
            (3, SpawnState::Running)
        ]
    );
    let read = overseer_as(
        &ns,
        Some(&agent_account(&ns, "team-lead")),
        &["mail", "--agent", "team-lead", "read"],
    );
    assert!(
        said(&read).contains("from team-a (ended)"),
        "{}",
        said(&read)
    );

    // The tree: overseer swarms -o wide nests each member under its spawner.
    // (The lead's unread mail may show beside its name: `team-lead(1✉)[...]`.)
    let wide = said(&overseer_as(&ns, None, &["swarms", "-o", "wide"]));
    let children = wide.find("[team-a,team-b,team-c]");
    let lead = wide.find("team-lead");
    let between = lead
        .zip(children)
        .map(|(l, c)| &wide[l + "team-lead".len()..c.max(l)]);
    assert!(
        between.is_some_and(|b| b.is_empty() || (b.starts_with('(') && b.ends_with(')'))),
        "{wide}"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn each_limit_and_rule_refuses_with_its_reason_and_rights_never_widen() {
    let ns = setup("spawn-refused").await;
    let _operator = operator(&ns);
    create_team(
        &ns,
        json!({
            "allow": [
                {"from": "lead", "roles": ["builder", "scout"]},
                {"from": "scout", "roles": ["builder", "scout"]},
                {"from": "builder", "roles": ["builder"]}
            ],
            "perParent": 2,
            "maxDepth": 1
        }),
    )
    .await;
    for member in ["team-lead", "team-scout", "team-reviewer"] {
        wait_started(&ns, member).await;
    }
    let ok = spawn(&ns, "team-lead", &["x", "--role", "builder"]);
    assert!(ok.status.success(), "{}", said(&ok));
    wait_started(&ns, "team-x").await;
    let cases: [(&str, &[&str], &str); 7] = [
        (
            "team-reviewer",
            &["y", "--role", "builder"],
            "role reviewer may not spawn",
        ),
        (
            "team-lead",
            &["y", "--role", "merger"],
            "role lead may not spawn role merger",
        ),
        (
            "team-scout",
            &["y", "--role", "builder"],
            "role scout is read-only, and its children must be too",
        ),
        (
            "team-lead",
            &["scout", "--role", "builder"],
            "NameTaken: the swarm has a member scout",
        ),
        (
            "team-lead",
            &["x", "--role", "builder"],
            "NameTaken: the swarm has a member x",
        ),
        (
            "team-x",
            &["y", "--role", "builder"],
            "spec.coordination.spawn.maxDepth is 1 and this would make 2",
        ),
        (
            "team-scout",
            &["x", "--cancel"],
            "no member x that you spawned is queued or running",
        ),
    ];
    for (member, args, reason) in cases {
        let out = spawn(&ns, member, args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{member} {args:?}: {}",
            said(&out)
        );
        assert!(
            said(&out).contains(reason),
            "{member} {args:?}: {}",
            said(&out)
        );
    }
    let second = spawn(&ns, "team-lead", &["z", "--role", "scout"]);
    assert!(second.status.success(), "{}", said(&second));
    let third = spawn(&ns, "team-lead", &["w", "--role", "builder"]);
    assert!(
        said(&third).contains("spec.coordination.spawn.perParent is 2 and this would make 3"),
        "{}",
        said(&third)
    );
    assert!(!exists(&ns, "team-y").await && !exists(&ns, "team-w").await);
    let refused = wait_events(&ns, "team-reviewer", "SpawnRefused").await;
    assert!(
        refused[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("may not spawn")
    );

    // Nobody asks in another member's name, and a spawned scout reads only.
    let forged = spawn_as(&ns, "team-scout", "team-lead", &["v", "--role", "builder"]);
    assert!(!forged.status.success(), "{}", said(&forged));
    assert!(said(&forged).contains("not allowed"), "{}", said(&forged));
    let z = wait_started(&ns, "team-z").await;
    assert_eq!(z.spec.role, "scout");

    // A cancel deletes the running member; the swarm's spec still lists only its own.
    let cancel = spawn(&ns, "team-lead", &["x", "--cancel"]);
    assert!(said(&cancel).contains("Cancelled"), "{}", said(&cancel));
    wait_in(&ns, "team-x deleted", WAIT, || async {
        let x = ns.api::<Agent>().get_opt("team-x").await.ok()?;
        x.is_none_or(|x| x.meta().deletion_timestamp.is_some())
            .then_some(())
    })
    .await;
    assert_eq!(
        swarm(&ns).await.spec.agents.len(),
        3,
        "nothing writes the spec"
    );
    assert!(
        exists(&ns, "team-z").await,
        "the spec's reconcile keeps spawned members"
    );
}

/// `overseer spawn` in `member`'s name, as `user`'s ServiceAccount.
fn spawn_as(ns: &TestNamespace, user: &str, member: &str, args: &[&str]) -> Output {
    let user = agent_account(ns, user);
    let mut all = vec!["spawn", "--agent", member];
    all.extend_from_slice(args);
    overseer_as(ns, Some(&user), &all)
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_interrupted_spawn_makes_one_member_and_deleting_the_swarm_leaves_none() {
    let ns = setup("spawn-crash").await;
    create_team(
        &ns,
        json!({"allow": [{"from": "lead", "roles": ["builder"]}]}),
    )
    .await;
    // A stop between each step: the operator wrote its intent (a Starting entry) and
    // then stopped before the create, or created it and stopped before answering.
    let requested = json!([
        {"seq": 1, "name": "a", "role": "builder", "task": "build a", "time": "2026-12-01T00:00:00Z"},
        {"seq": 2, "name": "b", "role": "builder", "task": "build b", "time": "2026-12-01T00:00:01Z"}
    ]);
    let operator_process = operator(&ns);
    wait_started(&ns, "team-lead").await;
    drop(operator_process);
    let agents: Api<Agent> = ns.api();
    agents
        .patch_status(
            "team-lead",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"spawnRequests": requested}})),
        )
        .await
        .unwrap();
    let team = swarm(&ns).await;
    let entry = |name: &str, seq: i64| {
        json!({"name": name, "role": "builder", "parent": "team-lead", "seq": seq, "depth": 1,
               "state": "Starting", "requestedTime": "2026-12-01T00:00:00Z"})
    };
    ns.api::<Swarm>()
        .patch_status(
            "team",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"spawned": [entry("a", 1), entry("b", 2)]}})),
        )
        .await
        .unwrap();
    let mut made: Agent = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": "team-b", "labels": {"overseer.dev/swarm": "team", "overseer.dev/parent": "team-lead"}},
        "spec": {"role": "builder", "swarm": "team", "overseer": "team-lead", "prompt": "build b"}
    }))
    .unwrap();
    made.metadata.owner_references = team.controller_owner_ref(&()).map(|r| vec![r]);
    agents.create(&PostParams::default(), &made).await.unwrap();

    let _operator = operator(&ns);
    let lead = wait_condition(&ns, "team-lead", "both requests answered", |lead| {
        lead.status
            .as_ref()
            .and_then(|s| s.spawns.as_ref())
            .is_some_and(|l| l.answered == 2 && l.records.len() == 2)
    })
    .await;
    let ledger = lead.status.unwrap().spawns.unwrap();
    assert!(
        ledger
            .records
            .iter()
            .all(|r| r.state == SpawnState::Running),
        "{ledger:?}"
    );
    wait_started(&ns, "team-a").await;
    let spawned: Vec<String> = agents
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|a| a.labels().contains_key("overseer.dev/parent"))
        .map(|a| a.name_any())
        .collect();
    assert_eq!(spawned, ["team-a", "team-b"], "exactly one each");
    assert_eq!(
        spawned_states(&swarm(&ns).await),
        [
            ("a".to_string(), SpawnedState::Running),
            ("b".to_string(), SpawnedState::Running)
        ]
    );
    assert_eq!(
        agent(&ns, "team-a").await.spec.prompt.as_deref(),
        Some("build a")
    );

    ns.api::<Swarm>()
        .delete("team", &DeleteParams::foreground())
        .await
        .unwrap();
    wait_in(&ns, "no member left", Duration::from_secs(90), || async {
        let left = agents.list(&Default::default()).await.ok()?.items;
        left.is_empty().then_some(())
    })
    .await;
}
