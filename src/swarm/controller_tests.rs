//! The Swarm reconciler's requests against a scripted API server (controller-rs's
//! fixtures): the Agents it applies and removes, and only ever its own.
use std::sync::Arc;

use http::StatusCode;
use kube::runtime::{reflector, watcher};
use serde_json::{Value, json};

use super::*;
use crate::scripted::{self, Seen};

const SWARM_UID: &str = "5a1e0000-0000-0000-0000-000000000001";
const AGENTS: &str = "/apis/overseer.dev/v1alpha1/namespaces/team/agents/";

/// An API server that answers a read of an agent with `foreign` when it is named so
/// (else 404), and every write as written (a status write with the swarm's spec).
fn scripted_client(foreign: Option<Value>) -> (kube::Client, Seen) {
    scripted::client(move |method, path, body| {
        if method == "GET" {
            return match &foreign {
                Some(agent) if path.ends_with(agent["metadata"]["name"].as_str().unwrap()) => {
                    (StatusCode::OK, agent.clone())
                }
                _ => (
                    StatusCode::NOT_FOUND,
                    scripted::failure(404, "NotFound", "not found"),
                ),
            };
        }
        if method == "DELETE" {
            let deleted = json!({"kind": "Status", "apiVersion": "v1", "status": "Success"});
            return (StatusCode::OK, deleted);
        }
        let uid = format!("uid-of-{}", path.rsplit('/').next().unwrap_or_default());
        let mut written = scripted::as_written(path, body, &uid, "7");
        if path.ends_with("/status") {
            written["spec"] = serde_json::to_value(swarm().spec).unwrap();
        }
        (StatusCode::OK, written)
    })
}

/// A cache that has listed `objects`.
fn listed_store<K>(objects: Vec<K>) -> Store<Guarded<K>>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + 'static,
{
    let (store, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    for object in objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(Guarded(Ok(object))));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    store
}

fn swarm_context(client: kube::Client, members: Vec<Agent>) -> SwarmContext {
    SwarmContext {
        ctx: scripted::context(client),
        members: listed_store(members),
        goals: listed_store(Vec::new()),
        pods: {
            let (store, mut writer) = reflector::store::<k8s_openapi::api::core::v1::Pod>();
            writer.apply_watcher_event(&watcher::Event::Init);
            writer.apply_watcher_event(&watcher::Event::InitDone);
            store
        },
        versions: Default::default(),
        applied: Applied::default(),
    }
}

/// Swarm `billing`: its overseer and two members, `scout` and `builder`.
fn swarm() -> Swarm {
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
        "metadata": {"name": "billing", "namespace": "team", "uid": SWARM_UID,
            "generation": 1, "resourceVersion": "4"},
        "spec": {
            "defaults": {"runtime": {"name": "claude", "image": "example.com/claude:1"}},
            "overseer": {"prompt": "Ship proration."},
            "agents": [{"name": "scout", "role": "scout", "prompt": "Map invoices."},
                       {"name": "builder", "role": "builder", "prompt": "Implement it."}]
        }
    }))
    .unwrap()
}

/// Reconciles `swarm` as the cache holds it, taken as this operator's last write (the
/// reconcile then reads it no more).
async fn reconcile_current(sc: SwarmContext, swarm: Swarm) -> SwarmContext {
    sc.versions.saw(&swarm);
    let sc = Arc::new(sc);
    reconcile(Arc::new(swarm), sc.clone()).await.unwrap();
    Arc::into_inner(sc).expect("the reconcile keeps no hold of its context")
}

/// The requests recorded, as "METHOD path", Events aside (published behind the
/// reconcile).
fn requests(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(_, path, _)| !path.ends_with("/events"))
        .map(|(method, path, _)| format!("{method} {path}"))
        .collect()
}

/// A new swarm: each wanted agent looked for (it may be another's), applied as the
/// swarm's own (controlled by it, labelled for it), then the status; reconciled
/// again with its members in the cache and its status as written, it writes nothing.
#[tokio::test]
async fn a_new_swarm_applies_its_agents_as_its_own_then_its_status_and_then_nothing() {
    let (client, seen) = scripted_client(None);
    let sc = swarm_context(client, Vec::new());
    let first = reconcile_current(sc, swarm()).await;

    let swarm_path = "/apis/overseer.dev/v1alpha1/namespaces/team/swarms/billing/status";
    // The copy of its claims is looked for, once: none, and nothing claimed, so none is made.
    let mut expected = vec!["GET /api/v1/namespaces/team/configmaps/billing-claims".to_string()];
    for member in ["billing-overseer", "billing-scout", "billing-builder"] {
        expected.push(format!("GET {AGENTS}{member}"));
        expected.push(format!("PATCH {AGENTS}{member}"));
    }
    // With `networkPolicy` off, a policy of its own from before is looked for, once.
    expected.push(
        "GET /apis/networking.k8s.io/v1/namespaces/team/networkpolicies/overseer-swarm-billing"
            .into(),
    );
    expected.push(format!("PATCH {swarm_path}"));
    assert_eq!(requests(&seen), expected);
    let applied: Vec<Agent> = scripted::requests(&seen, "PATCH", AGENTS)
        .into_iter()
        .map(|body| serde_json::from_value(scripted::as_written("/x", body, "u", "7")).unwrap())
        .collect();
    for agent in &applied {
        let owner = &agent.owner_references()[0];
        assert_eq!(
            (owner.uid.as_str(), owner.controller),
            (SWARM_UID, Some(true))
        );
        assert_eq!(
            agent.labels().get(crate::labels::SWARM).map(String::as_str),
            Some("billing")
        );
    }
    let status = scripted::requests(&seen, "PATCH", swarm_path).remove(0)["status"].clone();

    // Steady state: the members as applied (named as their paths say), the status as
    // written, this operator's last write, and what it knows of its NetworkPolicy.
    let (client, seen) = scripted_client(None);
    let mut written = swarm();
    written.status = Some(serde_json::from_value(status).unwrap());
    written.metadata.resource_version = Some("8".into());
    let members: Vec<Agent> = applied
        .into_iter()
        .zip(["billing-overseer", "billing-scout", "billing-builder"])
        .map(|(mut agent, name)| {
            agent.metadata.name = Some(name.into());
            agent
        })
        .collect();
    let sc = SwarmContext {
        ctx: scripted::context(client),
        members: listed_store(members),
        ..first
    };
    reconcile_current(sc, written).await;
    assert_eq!(
        requests(&seen),
        Vec::<String>::new(),
        "nothing to do, nothing sent"
    );
}

/// A wanted name held by an agent the swarm does not control: never written or
/// deleted, said in `SpecValid` and once as a Warning.
#[tokio::test]
async fn an_agent_of_another_owner_under_a_wanted_name_is_left_alone_and_said() {
    let theirs = json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": "billing-scout", "namespace": "team", "uid": "theirs",
            "labels": {"overseer.dev/swarm": "billing"}},
        "spec": {"prompt": "Someone else's work."}
    });
    let (client, seen) = scripted_client(Some(theirs.clone()));
    let their_agent: Agent = serde_json::from_value(theirs).unwrap();
    // Even in the cache and labelled for the swarm, and no longer wanted by it.
    let mut smaller = swarm();
    smaller.spec.agents.retain(|a| a.name == "builder");
    let sc = swarm_context(client, vec![their_agent]);
    reconcile_current(sc, smaller).await;
    assert!(
        !requests(&seen)
            .iter()
            .any(|r| r.contains("billing-scout") && !r.starts_with("GET")),
        "{:?}",
        requests(&seen)
    );

    // Not labelled for the swarm: found by name.
    let unlabelled = json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": "billing-scout", "namespace": "team", "uid": "theirs"},
        "spec": {"prompt": "Someone else's work."}
    });
    let (client, seen) = scripted_client(Some(unlabelled));
    let sc = swarm_context(client, Vec::new());
    reconcile_current(sc, swarm()).await;
    let writes = requests(&seen);
    assert!(
        !writes
            .iter()
            .any(|r| r == &format!("PATCH {AGENTS}billing-scout")),
        "{writes:?}"
    );
    let status = scripted::requests(&seen, "PATCH", "/swarms/billing/status").remove(0);
    let valid = status["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == conditions::SPEC_VALID))
        .cloned()
        .unwrap_or_default();
    assert_eq!(valid["status"], "False", "{status}");
    assert!(
        valid["message"]
            .as_str()
            .is_some_and(|m| m.contains("agent billing-scout already exists and does not belong")),
        "{valid}"
    );
    let warned = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let events = scripted::requests(&seen, "POST", "/events");
            if let Some(event) = events.iter().find(|e| e["reason"] == reasons::INVALID_SPEC) {
                return event.clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("a Warning is published");
    assert_eq!(warned["type"], "Warning");
}

/// A member the swarm no longer lists is deleted, once; an agent labelled for the
/// swarm but not controlled by it never is.
#[tokio::test]
async fn a_member_no_longer_listed_is_removed_and_a_look_alike_never() {
    let (client, seen) = scripted_client(None);
    let ours: Agent = serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": "billing-tester", "namespace": "team", "uid": "ours",
            "labels": {"overseer.dev/swarm": "billing"},
            "ownerReferences": [{"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
                "name": "billing", "uid": SWARM_UID, "controller": true}]},
        "spec": {"prompt": "Test it."}
    }))
    .unwrap();
    let mut look_alike = ours.clone();
    look_alike.metadata.name = Some("billing-lookalike".into());
    look_alike.metadata.owner_references = None;
    let sc = swarm_context(client, vec![ours, look_alike]);
    reconcile_current(sc, swarm()).await;
    let deletes: Vec<String> = requests(&seen)
        .into_iter()
        .filter(|r| r.starts_with("DELETE"))
        .collect();
    assert_eq!(deletes, [format!("DELETE {AGENTS}billing-tester")]);
}
