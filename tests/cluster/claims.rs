//! File claims on the real control plane: `overseer claim` run as each member's own
//! ServiceAccount, answered by the operator; a path another member holds is refused
//! with the holder and since when, `overseer claims` lists them, a claim ends when its
//! holder is Done, and an operator that restarts keeps no claim of a member that left
//! while it was down.

use std::process::Output;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use overseer::agent::AgentPhase;
use overseer::kinds::claim::{Claim, ClaimState};
use overseer::swarm::Swarm;
use serde_json::json;

use crate::agent::{wait_condition, wait_events, wait_started};
use crate::overseer::{overseer_as, said};
use crate::support::cluster::{TestNamespace, agent_account, create_object, operator, setup};

async fn create_team(ns: &TestNamespace) {
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
                "agents": [
                    {"name": "a", "role": "builder"},
                    {"name": "b", "role": "builder"},
                    {"name": "c", "role": "builder"}
                ]
            }
        }),
    )
    .await;
}

/// `overseer ARGS --agent MEMBER` as the member's own ServiceAccount.
fn as_member(ns: &TestNamespace, member: &str, args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--agent", member]);
    overseer_as(ns, Some(&agent_account(ns, member)), &all)
}

/// The swarm's claims as (path, holder), from its status.
async fn held(ns: &TestNamespace) -> Vec<(String, String)> {
    let team = ns.api::<Swarm>().get("team").await.unwrap();
    team.status
        .iter()
        .flat_map(|s| &s.claims)
        .map(|c| (c.path.clone(), c.holder.clone()))
        .collect()
}

/// The members' copy of the claims, as (path, holder).
async fn copied(ns: &TestNamespace) -> Vec<(String, String)> {
    let map = ns.api::<ConfigMap>().get("team-claims").await.unwrap();
    let text = map.data.unwrap().remove("claims.json").unwrap();
    let claims: Vec<Claim> = serde_json::from_str(&text).unwrap();
    claims.into_iter().map(|c| (c.path, c.holder)).collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(p, h)| (p.to_string(), h.to_string()))
        .collect()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_claim_held_by_another_is_refused_by_name_and_ends_when_its_holder_is_done() {
    let ns = setup("claims").await;
    let _operator = operator(&ns);
    create_team(&ns).await;
    for member in ["team-a", "team-b"] {
        wait_started(&ns, member).await;
    }

    let granted = as_member(&ns, "team-a", &["claim", "src/lib.rs", "docs/"]);
    assert!(
        said(&granted).contains("claimed: src/lib.rs docs"),
        "{}",
        said(&granted)
    );
    let refused = as_member(&ns, "team-b", &["claim", "docs/guide.md", "README.md"]);
    let text = said(&refused);
    assert_eq!(refused.status.code(), Some(1), "{text}");
    assert!(
        text.contains("docs is claimed by team-a since 20"),
        "the holder and since when are named: {text}"
    );
    let refusals = wait_events(&ns, "team-b", "ClaimRefused").await;
    assert!(!refusals.is_empty());
    let listed = as_member(&ns, "team-b", &["claims"]);
    let text = said(&listed);
    assert!(listed.status.success(), "{text}");
    assert!(text.contains("docs\tteam-a\tsince "), "{text}");
    assert!(text.contains("src/lib.rs\tteam-a\tsince "), "{text}");
    assert!(
        !text.contains("README.md"),
        "a refused request claims nothing: {text}"
    );

    // Bad input: a path outside the workspace is refused by the CLI, naming it, and
    // nothing is asked; a member may not claim in another's name.
    let outside = as_member(&ns, "team-b", &["claim", "/etc/passwd"]);
    assert_eq!(outside.status.code(), Some(2), "{}", said(&outside));
    assert!(said(&outside).contains("PATH \"/etc/passwd\": outside the workspace"));
    let forged = overseer_as(
        &ns,
        Some(&agent_account(&ns, "team-b")),
        &["claim", "x", "--agent", "team-a"],
    );
    assert_ne!(forged.status.code(), Some(0), "{}", said(&forged));
    assert!(said(&forged).contains("not allowed"), "{}", said(&forged));

    // A release gives up what it names; the rest stays a's.
    let released = as_member(&ns, "team-a", &["claim", "--release", "src/lib.rs"]);
    assert!(released.status.success(), "{}", said(&released));
    assert_eq!(held(&ns).await, pairs(&[("docs", "team-a")]));
    assert_eq!(copied(&ns).await, pairs(&[("docs", "team-a")]));

    // a is Done: its claims end, and b gets the file.
    let done = overseer_as(
        &ns,
        None,
        &["loop", "release", "team-a", "--reason", "finished"],
    );
    assert!(done.status.success(), "{}", said(&done));
    wait_condition(&ns, "team-a", "a Done", |a| {
        a.status.as_ref().and_then(|s| s.phase) == Some(AgentPhase::Done)
    })
    .await;
    let taken = as_member(&ns, "team-b", &["claim", "docs/guide.md"]);
    assert!(taken.status.success(), "{}", said(&taken));
    assert_eq!(held(&ns).await, pairs(&[("docs/guide.md", "team-b")]));
    let b = ns
        .api::<overseer::agent::Agent>()
        .get("team-b")
        .await
        .unwrap();
    let ledger = b.status.unwrap().claims.unwrap();
    assert_eq!(
        ledger.records.iter().map(|r| r.state).collect::<Vec<_>>(),
        [ClaimState::Refused, ClaimState::Granted]
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn an_operator_that_restarts_keeps_no_claim_of_a_member_that_left_meanwhile() {
    let ns = setup("claims-restart").await;
    let first = operator(&ns);
    create_team(&ns).await;
    for member in ["team-a", "team-b", "team-c"] {
        wait_started(&ns, member).await;
    }
    for (member, path) in [("team-b", "b.rs"), ("team-c", "c.rs")] {
        let granted = as_member(&ns, member, &["claim", path]);
        assert!(granted.status.success(), "{}", said(&granted));
    }
    assert_eq!(
        held(&ns).await,
        pairs(&[("b.rs", "team-b"), ("c.rs", "team-c")])
    );

    // While the operator is down, c leaves the swarm's spec.
    drop(first);
    ns.api::<Swarm>()
        .patch(
            "team",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"agents": [
                {"name": "a", "role": "builder"}, {"name": "b", "role": "builder"}
            ]}})),
        )
        .await
        .unwrap();
    let _second = operator(&ns);
    crate::support::cluster::wait_in(
        &ns,
        "c's claim gone after the restart",
        crate::agent::WAIT,
        || async { (held(&ns).await == pairs(&[("b.rs", "team-b")])).then_some(()) },
    )
    .await;
    // The copy follows the record (written just after it).
    crate::support::cluster::wait_in(
        &ns,
        "c's claim gone from the copy",
        crate::agent::WAIT,
        || async { (copied(&ns).await == pairs(&[("b.rs", "team-b")])).then_some(()) },
    )
    .await;
    // c's path is free for a; b's is still b's.
    let free = as_member(&ns, "team-a", &["claim", "c.rs"]);
    assert!(free.status.success(), "{}", said(&free));
    let kept = as_member(&ns, "team-a", &["claim", "b.rs"]);
    assert_eq!(kept.status.code(), Some(1), "{}", said(&kept));
}
