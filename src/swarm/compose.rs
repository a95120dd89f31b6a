//! A swarm's decisions as pure functions: what is wrong with its spec, the Agents it
//! wants, its status and its NetworkPolicy. Roles and what an agent inherits from its
//! swarm are resolved in src/roles.rs.

use std::collections::BTreeMap;

use kube::Resource;
use kube::ResourceExt;
use kube::api::ObjectMeta;

use crate::agent::{Agent, AgentSpec, LoopSpec};
use crate::api::{MANAGED_BY, RuntimeSpec, label_value};
use crate::conditions;
use crate::kinds::swarm::Swarm;
use crate::labels;
use crate::reasons;
use crate::roles::{OVERSEER_MEMBER, member_name};

/// What is wrong with a swarm's spec, in words naming the field.
pub fn problems(swarm: &Swarm) -> Vec<String> {
    let spec = &swarm.spec;
    let mut problems = Vec::new();
    for (role, settings) in &spec.roles {
        if let Some(profile) = &settings.profile
            && !spec.prompts.profiles.contains_key(profile)
        {
            problems.push(format!(
                "spec.roles.{role}.profile: no profile {profile:?} in spec.prompts.profiles"
            ));
        }
    }
    let merge = spec.coordination.as_ref().and_then(|c| c.merge.as_ref());
    if let Some(policy) = merge
        && super::merger::image(swarm, policy).is_none()
    {
        problems.push(
            "spec.coordination.merge.image: no image to merge in (set it, or spec.defaults.runtime.image)"
                .into(),
        );
    }
    problems
}

/// One Agent a swarm keeps, and whether `spec.loop` is among the fields it owns (only
/// when the member entry or the swarm's defaults set a loop).
#[derive(Clone, Debug)]
pub struct DesiredAgent {
    pub agent: Agent,
    pub owns_loop: bool,
}

impl DesiredAgent {
    /// The server-side apply body: what the swarm owns and nothing else, so a person's
    /// `suspend` on a member (and its `loop`, unless the swarm sets one) stays as set.
    pub fn apply_body(&self) -> serde_json::Value {
        let mut body = serde_json::to_value(&self.agent).expect("an Agent serialises to JSON");
        if let Some(spec) = body.get_mut("spec").and_then(|s| s.as_object_mut()) {
            spec.remove("suspend");
            if !self.owns_loop {
                spec.remove("loop");
            }
        }
        body
    }

    /// Whether `current` already holds everything the swarm owns.
    pub fn is_met_by(&self, current: &Agent) -> bool {
        let mut wanted = self.agent.spec.clone();
        wanted.suspend = current.spec.suspend;
        if !self.owns_loop {
            wanted.loop_ = current.spec.loop_.clone();
        }
        let labels = current.labels();
        current.spec == wanted
            && self
                .agent
                .labels()
                .iter()
                .all(|(key, value)| labels.get(key) == Some(value))
    }
}

/// The Agents a Swarm wants: its overseer and its members, owned by it, labelled,
/// the members pointing at the overseer, each with its loop (its own, else the
/// swarm's default). Runtime and resources are inherited by the Agent controller
/// (`effective_spec`), so a change of the swarm's role or defaults reaches them.
pub fn desired_agents(swarm: &Swarm) -> Vec<DesiredAgent> {
    let name = swarm.name_any();
    let overseer_name = member_name(&name, OVERSEER_MEMBER);
    let mut agents = Vec::new();
    let overseer = swarm
        .spec
        .overseer
        .clone()
        .unwrap_or(crate::kinds::swarm::SwarmOverseer {
            role: "overseer".into(),
            runtime: None,
            prompt: None,
        });
    let mut overseer_spec = base_spec(&name, &overseer.role);
    overseer_spec.runtime = overseer.runtime.unwrap_or_default();
    overseer_spec.prompt = overseer.prompt;
    agents.push(DesiredAgent {
        agent: Agent {
            metadata: member_meta(swarm, &overseer_name, &overseer.role),
            spec: overseer_spec,
            status: None,
        },
        owns_loop: false,
    });
    for member in &swarm.spec.agents {
        let mut spec = base_spec(&name, &member.role);
        spec.prompt = member.prompt.clone();
        spec.pod_template = member.pod_template.clone().map(Box::new);
        spec.overseer = Some(overseer_name.clone());
        let member_loop = member.loop_.as_ref().or(swarm.spec.defaults.loop_.as_ref());
        if let Some(member_loop) = member_loop {
            spec.loop_ = member_loop.clone();
        }
        agents.push(DesiredAgent {
            agent: Agent {
                metadata: member_meta(swarm, &member_name(&name, &member.name), &member.role),
                spec,
                status: None,
            },
            owns_loop: member_loop.is_some(),
        });
    }
    agents
}

/// The Agent of a member `parent` spawned (`entry`), with its `task`: a member like
/// those the spec lists, its overseer the spawner, labelled with it.
pub fn spawned_agent(
    swarm: &Swarm,
    entry: &crate::kinds::spawn::SpawnedMember,
    task: Option<String>,
) -> DesiredAgent {
    let name = member_name(&swarm.name_any(), &entry.name);
    let mut metadata = member_meta(swarm, &name, &entry.role);
    if let Some(labels) = metadata.labels.as_mut() {
        labels.insert(labels::PARENT.to_string(), label_value(&entry.parent));
    }
    let mut spec = base_spec(&swarm.name_any(), &entry.role);
    spec.prompt = task;
    spec.overseer = Some(entry.parent.clone());
    let swarm_loop = swarm.spec.defaults.loop_.clone();
    if let Some(swarm_loop) = &swarm_loop {
        spec.loop_ = swarm_loop.clone();
    }
    DesiredAgent {
        agent: Agent {
            metadata,
            spec,
            status: None,
        },
        owns_loop: swarm_loop.is_some(),
    }
}

/// The metadata of a swarm's member `agent` in `role`: owned by the swarm, labelled
/// with it, its role and its run.
fn member_meta(swarm: &Swarm, agent: &str, role: &str) -> ObjectMeta {
    let run = swarm
        .spec
        .run_id
        .clone()
        .or_else(|| swarm.uid())
        .unwrap_or_default();
    ObjectMeta {
        name: Some(agent.to_string()),
        namespace: swarm.namespace(),
        labels: Some(BTreeMap::from([
            (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
            (labels::SWARM.to_string(), label_value(&swarm.name_any())),
            (labels::ROLE.to_string(), role.to_string()),
            (labels::RUN.to_string(), label_value(&run)),
        ])),
        owner_references: swarm.controller_owner_ref(&()).map(|r| vec![r]),
        ..Default::default()
    }
}

fn base_spec(swarm: &str, role: &str) -> AgentSpec {
    AgentSpec {
        role: role.to_string(),
        swarm: Some(swarm.to_string()),
        runtime: RuntimeSpec::default(),
        prompt: None,
        pod_template: None,
        loop_: LoopSpec::default(),
        overseer: None,
        oversees: Vec::new(),
        suspend: false,
        notify: None,
        workspace: None,
        pull_requests: None,
        egress: None,
        guards: None,
        vars: Default::default(),
    }
}

#[cfg(test)]
#[path = "compose_tests.rs"]
mod tests;

/// The swarm's status from its members (the Agents it controls) and its goals.
pub fn status(
    swarm: &Swarm,
    members: &[Agent],
    goals: &[crate::goal::Goal],
    problems: &[String],
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> crate::kinds::swarm::SwarmStatus {
    use crate::agent::AgentStatus;
    use crate::kinds::swarm::OverseerStatus;

    let mut status = swarm.status.clone().unwrap_or_default();
    status.observed_generation = swarm.metadata.generation;
    let overseer_name = member_name(&swarm.name_any(), OVERSEER_MEMBER);
    let overseer = members.iter().find(|a| a.name_any() == overseer_name);
    let ready = |a: &Agent| a.status.as_ref().is_some_and(AgentStatus::is_ready);
    status.overseer = Some(OverseerStatus {
        name: overseer_name.clone(),
        ready: overseer.is_some_and(ready),
    });
    (status.agents, status.members) = member_counts(members);
    status.goals = goal_counts(goals);
    let mut conditions = std::mem::take(&mut status.conditions);
    let generation = swarm.metadata.generation;
    for (type_, ok, reason, message) in swarm_conditions(swarm, &status, problems) {
        conditions::set(
            &mut conditions,
            type_,
            ok,
            reason,
            &message,
            generation,
            now,
        );
    }
    status.conditions = conditions;
    status
}

/// `status` with the members the swarm spawned: the list, each listed member's
/// parent, and how many wait in the queue.
pub fn with_spawned(
    status: &mut crate::kinds::swarm::SwarmStatus,
    swarm: &str,
    spawned: Vec<crate::kinds::spawn::SpawnedMember>,
) {
    use crate::kinds::spawn::SpawnedState;
    for member in &mut status.members {
        member.parent = spawned
            .iter()
            .find(|e| member_name(swarm, &e.name) == member.name)
            .map(|e| e.parent.clone());
    }
    status.agents.queued = spawned
        .iter()
        .filter(|e| e.state == SpawnedState::Queued)
        .count() as i32;
    status.spawned = spawned;
}

/// The members counted by phase and activity, and listed by name (at most
/// `MAX_MEMBERS_LISTED`).
fn member_counts(
    members: &[Agent],
) -> (
    crate::kinds::swarm::AgentCounts,
    Vec<crate::kinds::swarm::MemberStatus>,
) {
    use crate::agent::{ActivityState, AgentPhase};
    use crate::kinds::swarm::{AgentCounts, MemberStatus};

    let mut counts = AgentCounts::default();
    let mut listed = Vec::new();
    let mut sorted: Vec<&Agent> = members.iter().collect();
    sorted.sort_by_key(|a| a.name_any());
    for agent in sorted {
        let agent_status = agent.status.clone().unwrap_or_default();
        let activity = agent_status.current_activity().cloned();
        counts.total += 1;
        if activity
            .as_ref()
            .is_some_and(|a| a.state == ActivityState::Working)
        {
            counts.working += 1;
        }
        match agent_status.phase {
            Some(AgentPhase::Running) => counts.running += 1,
            Some(AgentPhase::Done) => counts.done += 1,
            Some(AgentPhase::Blocked) => counts.blocked += 1,
            Some(AgentPhase::Failed) => counts.failed += 1,
            Some(AgentPhase::Suspended) => counts.suspended += 1,
            Some(AgentPhase::Pending) | None => counts.pending += 1,
        }
        let escalations = agent_status.open_escalations().count() as i32;
        let unread_mail = agent_status.unread_mail().count() as i32;
        counts.escalations += escalations;
        counts.unread_mail += unread_mail;
        listed.push(MemberStatus {
            name: agent.name_any(),
            role: agent.spec.role.clone(),
            parent: None,
            phase: agent_status.phase.map(crate::api::wire_name),
            activity: activity.as_ref().map(|a| crate::api::wire_name(a.state)),
            summary: activity
                .and_then(|a| a.summary)
                .map(|s| s.chars().take(120).collect()),
            escalations,
            unread_mail,
        });
    }
    listed.truncate(MAX_MEMBERS_LISTED);
    (counts, listed)
}

/// The swarm's goals counted by phase.
fn goal_counts(goals: &[crate::goal::Goal]) -> crate::kinds::swarm::GoalCounts {
    use crate::goal::GoalPhase;

    let mut counts = crate::kinds::swarm::GoalCounts::default();
    for goal in goals {
        counts.total += 1;
        match goal.status.as_ref().and_then(|s| s.phase) {
            Some(GoalPhase::Waiting) => counts.waiting += 1,
            Some(GoalPhase::Running) => counts.running += 1,
            Some(GoalPhase::Paused) => counts.paused += 1,
            Some(GoalPhase::Succeeded) => counts.succeeded += 1,
            Some(GoalPhase::Failed) => counts.failed += 1,
            Some(GoalPhase::Pending) | None => counts.pending += 1,
        }
    }
    counts
}

/// The swarm's conditions (type, status, reason, message) from its counted status.
fn swarm_conditions(
    swarm: &Swarm,
    status: &crate::kinds::swarm::SwarmStatus,
    problems: &[String],
) -> [(&'static str, bool, &'static str, String); 2] {
    let spec_valid = match problems.first() {
        Some(problem) => (
            conditions::SPEC_VALID,
            false,
            reasons::INVALID_SPEC,
            problem.clone(),
        ),
        None => (
            conditions::SPEC_VALID,
            true,
            reasons::VALID,
            "the spec is consistent".to_string(),
        ),
    };
    let expected = swarm.spec.agents.len() as i32 + 1;
    let ready = if status.agents.total < expected {
        let message = format!("{} of {expected} agents exist", status.agents.total);
        (conditions::READY, false, reasons::MEMBERS_MISSING, message)
    } else if !status.overseer.as_ref().is_some_and(|o| o.ready) {
        (
            conditions::READY,
            false,
            reasons::OVERSEER_NOT_READY,
            "the overseer's pod is not ready".to_string(),
        )
    } else {
        (
            conditions::READY,
            true,
            conditions::READY,
            "every agent exists and the overseer is ready".to_string(),
        )
    };
    [spec_valid, ready]
}

/// Members listed in status at most (the counts cover all of them).
pub const MAX_MEMBERS_LISTED: usize = 100;

/// The NetworkPolicy that lets a swarm's pods take traffic only from each other.
pub fn network_policy(swarm: &Swarm) -> k8s_openapi::api::networking::v1::NetworkPolicy {
    use k8s_openapi::api::networking::v1::{
        NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicySpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    let name = swarm.name_any();
    let selector = LabelSelector {
        match_labels: Some(BTreeMap::from([(
            labels::SWARM.to_string(),
            label_value(&name),
        )])),
        ..Default::default()
    };
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(network_policy_name(&name)),
            namespace: swarm.namespace(),
            labels: Some(BTreeMap::from([
                (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
                (labels::SWARM.to_string(), label_value(&name)),
            ])),
            owner_references: swarm.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(selector.clone()),
            policy_types: Some(
                std::iter::once("Ingress")
                    .chain(swarm.spec.egress.as_ref().map(|_| "Egress"))
                    .map(String::from)
                    .collect(),
            ),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(selector.clone()),
                    ..Default::default()
                }]),
                ..Default::default()
            }]),
            egress: swarm
                .spec
                .egress
                .as_ref()
                .map(|egress| egress_rules(egress, selector)),
        }),
    }
}

/// The swarm's egress: DNS anywhere, its own pods, and what `egress` lists.
fn egress_rules(
    egress: &crate::kinds::swarm::SwarmEgress,
    swarm_pods: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
) -> Vec<k8s_openapi::api::networking::v1::NetworkPolicyEgressRule> {
    use k8s_openapi::api::networking::v1::{NetworkPolicyEgressRule, NetworkPolicyPeer};
    let mut peers = vec![NetworkPolicyPeer {
        pod_selector: Some(swarm_pods),
        ..Default::default()
    }];
    if egress.public_internet {
        peers.extend(crate::egress::public_internet());
    }
    peers.extend(crate::egress::cidrs(&egress.allow_cidrs));
    vec![
        crate::egress::dns(),
        NetworkPolicyEgressRule {
            to: Some(peers),
            ports: None,
        },
    ]
}

pub fn network_policy_name(swarm: &str) -> String {
    format!(
        "overseer-swarm-{}",
        crate::api::fit_name(swarm, 253 - "overseer-swarm-".len())
    )
}
