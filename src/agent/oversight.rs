//! Whom an overseer oversees. Naming an Agent in `spec.overseer` asks it to oversee;
//! the overseer agrees by listing the agent in its own `spec.oversees`, or by being the
//! overseer of the swarm that made the agent. Only then does the operator wake it about
//! the agent and give it rights over the agent (its status, its pod's log): otherwise
//! anyone who may create an Agent could name another person's agent as its overseer,
//! widen that agent's Role and type wakes into it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt};

use crate::kinds::agent::Agent;
use crate::roles::{OVERSEER_MEMBER, member_name};
use crate::swarm::Swarm;

/// In `spec.oversees`: every agent of the overseer's namespace.
pub const ANY: &str = "*";

/// Whether `overseer` agrees to oversee `agent`, which names it: `agent` is listed in
/// its `spec.oversees` (or `*` is), or both were made by `swarm`, the overseer as its
/// overseer and the agent as one of its members. `swarm` is the Swarm `agent`'s
/// controller owner reference names, as cached; an owner reference alone proves
/// nothing, since whoever creates an object writes them.
pub fn accepts(overseer: &Agent, agent: &Agent, swarm: Option<&Swarm>) -> bool {
    asks(overseer, agent, agent.spec.overseer.as_deref())
        && (lists(overseer, agent) || swarm.is_some_and(|swarm| same_swarm(swarm, overseer, agent)))
}

/// Whether `overseer` agrees to hear of `goal`'s step outcomes (`effort: high`): the
/// goal is listed in its `spec.oversees` (or `*` is), or the goal names the swarm whose
/// overseer it is. A goal's swarm is the goal's own claim, so within a namespace anyone
/// who may create Goals can have a swarm's overseer told fixed step outcomes; no rights
/// come with it.
pub fn accepts_goal(overseer: &Agent, goal: &crate::goal::Goal) -> bool {
    asks(overseer, goal, goal.spec.overseer.as_deref())
        && (lists(overseer, goal)
            || goal.spec.swarm.as_deref().is_some_and(|swarm| {
                overseer.name_any() == member_name(swarm, OVERSEER_MEMBER)
                    && swarm_owner(overseer).is_some_and(|o| o.name == swarm)
            }))
}

/// Whether `asker`, whose spec names `named` as its overseer, asks `overseer`: the
/// name is the overseer's, in the overseer's namespace.
fn asks(overseer: &Agent, asker: &impl Resource, named: Option<&str>) -> bool {
    named == Some(overseer.name_any().as_str()) && asker.namespace() == overseer.namespace()
}

/// Whether `overseer`'s `spec.oversees` lists `asker` by name, or `*`.
fn lists(overseer: &Agent, asker: &impl Resource) -> bool {
    let name = asker.name_any();
    overseer
        .spec
        .oversees
        .iter()
        .any(|n| n == ANY || *n == name)
}

/// The Swarm that made `agent`, by its controller owner reference.
pub fn swarm_owner(agent: &Agent) -> Option<&OwnerReference> {
    agent
        .owner_references()
        .iter()
        .find(|o| o.kind == "Swarm" && o.controller == Some(true))
}

/// Both owned by `swarm` (its uid), and either the overseer under the name the swarm
/// gives its overseer and the agent under a name its spec gives a member, or the agent
/// one the swarm spawned for the overseer (its status says so).
fn same_swarm(swarm: &Swarm, overseer: &Agent, agent: &Agent) -> bool {
    let Some(uid) = swarm.meta().uid.as_deref() else {
        return false;
    };
    let owned = |a: &Agent| swarm_owner(a).is_some_and(|o| o.uid == uid);
    let swarm_name = swarm.name_any();
    let is_member = swarm
        .spec
        .agents
        .iter()
        .any(|m| member_name(&swarm_name, &m.name) == agent.name_any());
    // A member the swarm spawned, as its own status records it, is its spawner's.
    let spawned_by_overseer = swarm.status.as_ref().is_some_and(|s| {
        s.spawned.iter().any(|e| {
            member_name(&swarm_name, &e.name) == agent.name_any() && e.parent == overseer.name_any()
        })
    });
    owned(overseer)
        && owned(agent)
        && ((overseer.name_any() == member_name(&swarm_name, OVERSEER_MEMBER) && is_member)
            || spawned_by_overseer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent(name: &str, spec: serde_json::Value, owner: Option<&str>) -> Agent {
        let mut metadata = json!({"name": name, "namespace": "team"});
        if let Some(uid) = owner {
            metadata["ownerReferences"] = json!([{"apiVersion": "overseer.dev/v1alpha1",
                "kind": "Swarm", "name": "run", "uid": uid, "controller": true}]);
        }
        let mut spec = spec;
        spec["runtime"] = json!({"name": "claude", "image": "agent:1"});
        serde_json::from_value(
            json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
            "metadata": metadata, "spec": spec}),
        )
        .unwrap()
    }

    fn swarm() -> Swarm {
        serde_json::from_value(
            json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": "run", "namespace": "team", "uid": "swarm-uid"},
            "spec": {"defaults": {"runtime": {"name": "claude", "image": "agent:1"}},
                "agents": [{"name": "builder", "role": "builder"}]}}),
        )
        .unwrap()
    }

    #[test]
    fn an_overseer_oversees_only_whom_it_agreed_to() {
        let swarm = swarm();
        let names = |overseer: &str| json!({"overseer": overseer});
        let lead = agent("lead", json!({"oversees": ["mine"]}), None);
        let open = agent("open", json!({"oversees": ["*"]}), None);
        let swarm_lead = agent("run-overseer", json!({}), Some("swarm-uid"));
        let swarm_builder = agent("run-builder", json!({}), Some("swarm-uid"));
        let mut spawning = swarm.clone();
        spawning.status = serde_json::from_value(json!({"spawned": [
            {"name": "worker", "role": "builder", "parent": "run-builder", "seq": 1, "depth": 1,
             "state": "Running", "requestedTime": "2026-01-01T00:00:00Z"},
            {"name": "helper", "role": "builder", "parent": "run-overseer", "seq": 1, "depth": 1,
             "state": "Running", "requestedTime": "2026-01-01T00:00:00Z"}]}))
        .unwrap();
        // (case, overseer, agent, the agent's swarm as cached, accepted)
        let rows = [
            (
                "listed",
                &lead,
                agent("mine", names("lead"), None),
                None,
                true,
            ),
            (
                "not listed",
                &lead,
                agent("theirs", names("lead"), None),
                None,
                false,
            ),
            (
                "listed, but names another",
                &lead,
                agent("mine", names("open"), None),
                None,
                false,
            ),
            (
                "any agent",
                &open,
                agent("theirs", names("open"), None),
                None,
                true,
            ),
            (
                "no spec.oversees: a role is no consent",
                &agent("boss", json!({"role": "overseer"}), None),
                agent("theirs", names("boss"), None),
                None,
                false,
            ),
            (
                "a member of its swarm",
                &swarm_lead,
                agent("run-builder", names("run-overseer"), Some("swarm-uid")),
                Some(&swarm),
                true,
            ),
            (
                "an owner reference to the swarm, not a member of its spec",
                &swarm_lead,
                agent("run-intruder", names("run-overseer"), Some("swarm-uid")),
                Some(&swarm),
                false,
            ),
            (
                "a member name owned by another swarm uid",
                &swarm_lead,
                agent("run-builder", names("run-overseer"), Some("other-uid")),
                Some(&swarm),
                false,
            ),
            (
                "a member, with no swarm cached",
                &swarm_lead,
                agent("run-builder", names("run-overseer"), Some("swarm-uid")),
                None,
                false,
            ),
            (
                "a member the swarm spawned for it",
                &swarm_builder,
                agent("run-worker", names("run-builder"), Some("swarm-uid")),
                Some(&spawning),
                true,
            ),
            (
                "a member the swarm spawned for another",
                &swarm_builder,
                agent("run-helper", names("run-builder"), Some("swarm-uid")),
                Some(&spawning),
                false,
            ),
            (
                "a spawned member's name owned by another swarm uid",
                &swarm_builder,
                agent("run-worker", names("run-builder"), Some("other-uid")),
                Some(&spawning),
                false,
            ),
        ];
        for (case, overseer, agent, swarm, accepted) in rows {
            assert_eq!(accepts(overseer, &agent, swarm), accepted, "{case}");
        }
    }

    #[test]
    fn an_overseer_hears_of_the_goals_it_agreed_to() {
        let goal = |name: &str, spec: serde_json::Value| -> crate::goal::Goal {
            let mut spec = spec;
            spec["steps"] = json!([{"name": "a", "action": "Do a"}]);
            serde_json::from_value(
                json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
                "metadata": {"name": name, "namespace": "team"}, "spec": spec}),
            )
            .unwrap()
        };
        let lead = agent("lead", json!({"oversees": ["billing"]}), None);
        let swarm_lead = agent("run-overseer", json!({}), Some("swarm-uid"));
        let rows = [
            (
                "listed",
                &lead,
                goal("billing", json!({"overseer": "lead"})),
                true,
            ),
            (
                "not listed",
                &lead,
                goal("other", json!({"overseer": "lead"})),
                false,
            ),
            (
                "listed, names another",
                &lead,
                goal("billing", json!({"overseer": "boss"})),
                false,
            ),
            (
                "of its swarm",
                &swarm_lead,
                goal("g", json!({"overseer": "run-overseer", "swarm": "run"})),
                true,
            ),
            (
                "of another swarm",
                &swarm_lead,
                goal("g", json!({"overseer": "run-overseer", "swarm": "walk"})),
                false,
            ),
            (
                "no swarm",
                &swarm_lead,
                goal("g", json!({"overseer": "run-overseer"})),
                false,
            ),
        ];
        for (case, overseer, goal, accepted) in rows {
            assert_eq!(accepts_goal(overseer, &goal), accepted, "{case}");
        }
    }
}
