//! Spawning as a pure decision: members ask (`overseer spawn`, in their own status),
//! the swarm answers each request once, in the order they were made. A request is
//! refused with its reason (who may spawn which roles, a read-only parent's children
//! read-only, the name free, depth, per parent, in all, over the run, the token
//! budget), or queued; queued members start first come first served while fewer than
//! `maxRunning` run. The swarm's status lists every member it spawned; an entry is
//! written there (Starting) before its Agent is created, so a crash or a retried
//! request never makes two, and a member of `spec.agents` is never confused with one.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use super::compose::{DesiredAgent, spawned_agent};
use crate::kinds::agent::{Agent, AgentPhase, AgentStatus};
use crate::kinds::spawn::{
    SpawnLedger, SpawnPolicy, SpawnRecord, SpawnRequest, SpawnState, SpawnedMember, SpawnedState,
};
use crate::kinds::swarm::{Swarm, SwarmPhase};
use crate::roles::{OVERSEER_MEMBER, member_name, role};

/// Records kept in a member's ledger (the schema's bound).
pub const RECORDS_KEPT: usize = 64;

/// What the swarm does about its members' spawn requests and spawned members.
#[derive(Debug, Default)]
pub struct SpawnPlan {
    /// The swarm's `status.spawned` as it should be written, before anything is created.
    pub spawned: Vec<SpawnedMember>,
    /// Agents to create (entries Starting).
    pub create: Vec<DesiredAgent>,
    /// Agents to delete (cancelled by their spawner).
    pub delete: Vec<String>,
    /// What each spawner is told, by its Agent's name.
    pub answers: BTreeMap<String, Answer>,
}

/// What one spawner is told: its requests answered through `answered`, and records
/// set (by seq), each with the mail that goes with it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Answer {
    pub answered: i64,
    pub records: Vec<(SpawnRecord, Option<String>)>,
}

impl Answer {
    fn set(&mut self, record: SpawnRecord, mail: Option<String>) {
        self.records.retain(|(r, _)| r.seq != record.seq);
        self.records.push((record, mail));
    }

    /// Sets `record` unless this plan already set one for its request (with its mail).
    fn set_unless_set(&mut self, record: SpawnRecord) {
        if !self.records.iter().any(|(r, _)| r.seq == record.seq) {
            self.records.push((record, None));
        }
    }
}

/// The plan for `swarm` whose members (the Agents it controls, spawned ones included)
/// are `members`; `others` are the names of the namespace's Agents it does not control.
pub fn plan(swarm: &Swarm, members: &[Agent], others: &[String], now: Timestamp) -> SpawnPlan {
    let mut plan = SpawnPlan {
        spawned: swarm
            .status
            .as_ref()
            .map(|s| s.spawned.clone())
            .unwrap_or_default(),
        ..Default::default()
    };
    let prefix = format!("{}-", swarm.name_any());
    let by_name: BTreeMap<String, &Agent> = members.iter().map(|a| (a.name_any(), a)).collect();
    follow(&mut plan, &prefix, &by_name, now);
    let mut requests: Vec<(&Agent, &SpawnRequest)> = members
        .iter()
        .flat_map(|parent| unanswered(parent).into_iter().map(move |r| (parent, r)))
        .collect();
    requests.sort_by(|(a, x), (b, y)| {
        (x.time.0, a.name_any(), x.seq).cmp(&(y.time.0, b.name_any(), y.seq))
    });
    for (parent, request) in requests {
        let answer = plan.answers.entry(parent.name_any()).or_default();
        answer.answered = answer.answered.max(request.seq);
        let taken_before = plan
            .spawned
            .iter()
            .find(|e| e.parent == parent.name_any() && e.seq == request.seq);
        if let Some(entry) = taken_before.filter(|_| !request.cancel) {
            // Taken into the list before a stop kept the answer from being written; what
            // became of it since (an end, and its mail) is told as this plan has it.
            let record = as_recorded(entry, &prefix, now);
            let parent_name = parent.name_any();
            let answer = plan.answers.entry(parent_name).or_default();
            answer.set_unless_set(record);
            continue;
        }
        let record = if request.cancel {
            cancel(&mut plan, &prefix, parent, request, now)
        } else {
            match refusal(swarm, &plan.spawned, members, others, parent, request) {
                Some(reason) => record(request, SpawnState::Refused, Some(reason), now),
                None => {
                    let entry = queued(&plan.spawned, &prefix, parent, request, now);
                    plan.spawned.push(entry);
                    record(request, SpawnState::Queued, None, now)
                }
            }
        };
        let parent_name = parent.name_any();
        plan.answers
            .entry(parent_name)
            .or_default()
            .set(record, None);
    }
    start_queued(&mut plan, swarm, members, now);
    converge(&mut plan, &prefix, &by_name, now);
    plan
}

/// Spawned members whose Agent appeared, ended or went: Starting becomes Running once
/// its Agent is seen, Running becomes Ended (its spawner told) once its loop ended or
/// its Agent is gone.
fn follow(plan: &mut SpawnPlan, prefix: &str, by_name: &BTreeMap<String, &Agent>, now: Timestamp) {
    for entry in &mut plan.spawned {
        let agent = by_name.get(&format!("{prefix}{}", entry.name));
        let ended = match (entry.state, agent) {
            (SpawnedState::Starting, Some(agent)) => {
                entry.state = SpawnedState::Running;
                loop_end(agent)
            }
            (SpawnedState::Running, Some(agent)) => loop_end(agent),
            (SpawnedState::Running, None) => Some("its Agent is gone".to_string()),
            _ => None,
        };
        let Some(how) = ended else { continue };
        entry.state = SpawnedState::Ended;
        let (record, mail) = ended_record(entry, how, now);
        plan.answers
            .entry(entry.parent.clone())
            .or_default()
            .set(record, Some(mail));
    }
}

/// The record of a member that ended `how`, and its spawner's mail.
fn ended_record(entry: &SpawnedMember, how: String, now: Timestamp) -> (SpawnRecord, String) {
    let mail = format!(
        "The member {} ({}) that you spawned has ended: {how}. overseer ps shows it.",
        entry.name, entry.role
    );
    let record = entry_record(entry, SpawnState::Ended, Some(how), now);
    (record, mail)
}

/// Records the list has that a spawner's ledger shows otherwise (a stop between the
/// list's write and the answer's): told again as the list has them, an end with its
/// mail. A record the ledger no longer has was dropped after it was told.
fn converge(
    plan: &mut SpawnPlan,
    prefix: &str,
    by_name: &BTreeMap<String, &Agent>,
    now: Timestamp,
) {
    for entry in plan.spawned.clone() {
        let mut record = as_recorded(&entry, prefix, now);
        let shown = by_name
            .get(&entry.parent)
            .and_then(|p| p.status.as_ref()?.spawns.as_ref())
            .and_then(|l| l.records.iter().find(|r| r.seq == entry.seq))
            .map(|r| r.state);
        let told = plan
            .answers
            .get(&entry.parent)
            .is_some_and(|a| a.records.iter().any(|(r, _)| r.seq == entry.seq));
        if told || shown.is_none_or(|s| s == record.state) {
            continue;
        }
        let mut mail = None;
        if record.state == SpawnState::Ended {
            let agent = by_name.get(&format!("{prefix}{}", entry.name));
            let how = agent
                .and_then(|a| loop_end(a))
                .unwrap_or_else(|| "its Agent is gone".to_string());
            let (ended, said) = ended_record(&entry, how, now);
            (record, mail) = (ended, Some(said));
        }
        let answer = plan.answers.entry(entry.parent.clone()).or_default();
        answer.set(record, mail);
    }
}

/// The record of a request whose member is in the list already.
fn as_recorded(entry: &SpawnedMember, prefix: &str, now: Timestamp) -> SpawnRecord {
    let (state, reason) = match entry.state {
        SpawnedState::Queued => (SpawnState::Queued, None),
        SpawnedState::Starting | SpawnedState::Running => (
            SpawnState::Running,
            Some(format!("agent {prefix}{}", entry.name)),
        ),
        SpawnedState::Ended => (SpawnState::Ended, None),
        SpawnedState::Cancelled => (SpawnState::Cancelled, None),
    };
    entry_record(entry, state, reason, now)
}

/// The record of `entry`'s request in `state`.
fn entry_record(
    entry: &SpawnedMember,
    state: SpawnState,
    reason: Option<String>,
    now: Timestamp,
) -> SpawnRecord {
    SpawnRecord {
        seq: entry.seq,
        name: entry.name.clone(),
        state,
        reason,
        time: Time(now),
    }
}

/// How `agent`'s loop ended, if it did.
fn loop_end(agent: &Agent) -> Option<String> {
    let phase = agent.status.as_ref().and_then(|s| s.phase)?;
    matches!(
        phase,
        AgentPhase::Done | AgentPhase::Blocked | AgentPhase::Failed
    )
    .then(|| crate::api::wire_name(phase))
}

/// The requests of `parent` not answered yet, in seq order.
pub fn unanswered(parent: &Agent) -> Vec<&SpawnRequest> {
    parent.status.as_ref().map_or_else(Vec::new, |s| {
        let answered = s.spawns.as_ref().map_or(0, |l| l.answered);
        crate::kinds::request::unanswered(&s.spawn_requests, answered)
    })
}

fn record(
    request: &SpawnRequest,
    state: SpawnState,
    reason: Option<String>,
    now: Timestamp,
) -> SpawnRecord {
    SpawnRecord {
        seq: request.seq,
        name: request.name.clone(),
        state,
        reason,
        time: Time(now),
    }
}

/// Cancels what `parent` spawned under the request's name: a queued member leaves the
/// queue, a running one's Agent is deleted. Its original request's record says so too.
fn cancel(
    plan: &mut SpawnPlan,
    prefix: &str,
    parent: &Agent,
    request: &SpawnRequest,
    now: Timestamp,
) -> SpawnRecord {
    let parent_name = parent.name_any();
    let mine = |e: &&mut SpawnedMember| e.name == request.name && e.parent == parent_name;
    if plan
        .spawned
        .iter_mut()
        .any(|e| mine(&e) && e.state == SpawnedState::Cancelled)
    {
        // Cancelled already (by this request before a stop, or an earlier one).
        return record(request, SpawnState::Cancelled, None, now);
    }
    let live = plan.spawned.iter_mut().find(|e| {
        mine(e)
            && matches!(
                e.state,
                SpawnedState::Queued | SpawnedState::Starting | SpawnedState::Running
            )
    });
    let Some(entry) = live else {
        let reason = format!(
            "no member {} that you spawned is queued or running",
            request.name
        );
        return record(request, SpawnState::Refused, Some(reason), now);
    };
    if entry.state != SpawnedState::Queued {
        plan.delete.push(format!("{prefix}{}", entry.name));
    }
    entry.state = SpawnedState::Cancelled;
    let why = format!("cancelled by request {}", request.seq);
    let original = entry_record(entry, SpawnState::Cancelled, Some(why), now);
    plan.answers
        .entry(parent_name)
        .or_default()
        .set(original, None);
    record(request, SpawnState::Cancelled, None, now)
}

/// The queued entry of an accepted request.
fn queued(
    spawned: &[SpawnedMember],
    prefix: &str,
    parent: &Agent,
    request: &SpawnRequest,
    now: Timestamp,
) -> SpawnedMember {
    SpawnedMember {
        name: request.name.clone(),
        role: request.role.clone().unwrap_or_default(),
        parent: parent.name_any(),
        seq: request.seq,
        depth: depth_of(spawned, prefix, &parent.name_any()) + 1,
        state: SpawnedState::Queued,
        requested_time: Time(now),
    }
}

/// How deep the Agent `agent` is: 0 unless the swarm spawned it.
fn depth_of(spawned: &[SpawnedMember], prefix: &str, agent: &str) -> i64 {
    spawned
        .iter()
        .find(|e| agent.strip_prefix(prefix) == Some(e.name.as_str()))
        .map_or(0, |e| e.depth)
}

/// Why `parent`'s request cannot be taken (None: it can), naming the field or rule.
fn refusal(
    swarm: &Swarm,
    spawned: &[SpawnedMember],
    members: &[Agent],
    others: &[String],
    parent: &Agent,
    request: &SpawnRequest,
) -> Option<String> {
    let Some(policy) = swarm
        .spec
        .coordination
        .as_ref()
        .and_then(|c| c.spawn.as_ref())
    else {
        return Some("the swarm sets no spec.coordination.spawn: no member may spawn".into());
    };
    if swarm.status.as_ref().and_then(|s| s.phase) == Some(SwarmPhase::Ended) {
        return Some("the swarm's run has ended".into());
    }
    let child_role = request.role.as_deref().unwrap_or_default();
    rights(swarm, policy, &parent.spec.role, child_role)
        .or_else(|| name_taken(swarm, spawned, others, &request.name))
        .or_else(|| {
            let prefix = format!("{}-", swarm.name_any());
            limits(policy, (spawned, &prefix), members, &parent.name_any())
        })
}

/// Whether a member of `parent_role` may spawn one of `child_role`: an allow rule, and
/// never wider rights than its own.
fn rights(
    swarm: &Swarm,
    policy: &SpawnPolicy,
    parent_role: &str,
    child_role: &str,
) -> Option<String> {
    let rules: Vec<_> = policy
        .allow
        .iter()
        .filter(|r| r.from == parent_role)
        .collect();
    if rules.is_empty() {
        return Some(format!(
            "role {parent_role} may not spawn (spec.coordination.spawn.allow)"
        ));
    }
    if !rules
        .iter()
        .any(|r| r.roles.iter().any(|x| x == child_role))
    {
        return Some(format!(
            "role {parent_role} may not spawn role {child_role} (spec.coordination.spawn.allow)"
        ));
    }
    let read_only = |r: &str| role(Some(&swarm.spec), r).read_only;
    (read_only(parent_role) && !read_only(child_role)).then(|| {
        format!("role {parent_role} is read-only, and its children must be too; role {child_role} writes")
    })
}

/// Whether the member name is taken: the overseer's, a member of `spec.agents`, one
/// spawned before (in any state), or an Agent the swarm does not control.
fn name_taken(
    swarm: &Swarm,
    spawned: &[SpawnedMember],
    others: &[String],
    name: &str,
) -> Option<String> {
    let agent = member_name(&swarm.name_any(), name);
    let listed = name == OVERSEER_MEMBER || swarm.spec.agents.iter().any(|m| m.name == name);
    if listed || spawned.iter().any(|e| e.name == name) {
        return Some(format!("NameTaken: the swarm has a member {name} already"));
    }
    if others.contains(&agent) {
        return Some(format!(
            "NameTaken: agent {agent} exists and does not belong to this swarm"
        ));
    }
    (agent.len() > 63).then(|| format!("the Agent's name {agent} is longer than 63 characters"))
}

/// Whether a new spawn of `parent` stays within the numbers.
fn limits(
    policy: &SpawnPolicy,
    (spawned, prefix): (&[SpawnedMember], &str),
    members: &[Agent],
    parent: &str,
) -> Option<String> {
    let waiting = spawned
        .iter()
        .filter(|e| matches!(e.state, SpawnedState::Queued | SpawnedState::Starting))
        .count();
    let own = spawned.iter().filter(|e| e.parent == parent).count();
    let depth = depth_of(spawned, prefix, parent) + 1;
    let tokens: i64 = members.iter().map(tokens_used).sum();
    let over = [
        (
            depth > policy.max_depth,
            "maxDepth",
            policy.max_depth,
            depth,
        ),
        (
            (own as i64) >= policy.per_parent,
            "perParent",
            policy.per_parent,
            own as i64,
        ),
        (
            (spawned.len() as i64) >= policy.max_total,
            "maxTotal",
            policy.max_total,
            spawned.len() as i64,
        ),
        (
            ((members.len() + waiting) as i64) >= policy.max_members,
            "maxMembers",
            policy.max_members,
            (members.len() + waiting) as i64,
        ),
    ];
    if let Some((_, field, limit, at)) = over.into_iter().find(|(over, ..)| *over) {
        return Some(format!(
            "spec.coordination.spawn.{field} is {limit} and this would make {}",
            if field == "maxDepth" { at } else { at + 1 }
        ));
    }
    let budget = policy.token_budget?;
    (tokens >= budget).then(|| {
        format!("spec.coordination.spawn.tokenBudget ({budget}) is spent: the members used {tokens} tokens")
    })
}

/// Tokens a member's current attempt used, as its CLI reported them.
fn tokens_used(agent: &Agent) -> i64 {
    agent
        .status
        .as_ref()
        .and_then(AgentStatus::current_activity)
        .and_then(|a| a.usage.as_ref())
        .map_or(0, |u| u.total_tokens)
}

/// Starts queued members, first come first served, while fewer than `maxRunning` run;
/// none while the swarm halts its members.
fn start_queued(plan: &mut SpawnPlan, swarm: &Swarm, members: &[Agent], now: Timestamp) {
    let Some(policy) = swarm
        .spec
        .coordination
        .as_ref()
        .and_then(|c| c.spawn.as_ref())
    else {
        return;
    };
    let prefix = format!("{}-", swarm.name_any());
    let mut running = plan
        .spawned
        .iter()
        .filter(|e| matches!(e.state, SpawnedState::Starting | SpawnedState::Running))
        .count() as i64;
    // Entries the last plan meant to create that the cache does not show yet: create
    // again (a create of one that exists is taken as made).
    for entry in plan
        .spawned
        .iter()
        .filter(|e| e.state == SpawnedState::Starting)
    {
        let agent = format!("{prefix}{}", entry.name);
        if !members.iter().any(|a| a.name_any() == agent) {
            plan.create
                .push(spawned_agent(swarm, entry, task_of(members, entry)));
        }
    }
    let mut queue: Vec<usize> = (0..plan.spawned.len())
        .filter(|i| plan.spawned[*i].state == SpawnedState::Queued)
        .collect();
    queue.sort_by_key(|i| (plan.spawned[*i].requested_time.0, *i));
    for index in queue {
        if running >= policy.max_running || swarm.halts_members() {
            break;
        }
        running += 1;
        let entry = &mut plan.spawned[index];
        entry.state = SpawnedState::Starting;
        let task = task_of(members, entry);
        let agent = format!("agent {prefix}{}", entry.name);
        let started = entry_record(entry, SpawnState::Running, Some(agent), now);
        plan.create.push(spawned_agent(swarm, entry, task));
        plan.answers
            .entry(entry.parent.clone())
            .or_default()
            .set(started, None);
    }
}

/// The task its spawner gave `entry`, from the request still in the spawner's status.
fn task_of(members: &[Agent], entry: &SpawnedMember) -> Option<String> {
    members
        .iter()
        .find(|a| a.name_any() == entry.parent)
        .and_then(|p| p.status.as_ref())
        .and_then(|s| s.spawn_requests.iter().find(|r| r.seq == entry.seq))
        .and_then(|r| r.task.clone())
}

/// The Starting entries whose Agent a create found taken by another: dropped, and
/// their spawners told NameTaken.
pub fn name_taken_by_another(plan: &mut SpawnPlan, prefix: &str, agent: &str, now: Timestamp) {
    let Some(index) = plan.spawned.iter().position(|e| {
        agent.strip_prefix(prefix) == Some(e.name.as_str()) && e.state == SpawnedState::Starting
    }) else {
        return;
    };
    let entry = plan.spawned.remove(index);
    plan.create.retain(|d| d.agent.name_any() != agent);
    let why = format!("NameTaken: agent {agent} exists and does not belong to this swarm");
    let record = entry_record(&entry, SpawnState::Refused, Some(why), now);
    plan.answers
        .entry(entry.parent)
        .or_default()
        .set(record, None);
}

/// `ledger` with `answer` written onto it, and the mail that goes with records that
/// change (the member it is about, the body): None when it holds the answer already (a write repeated after a stop tells
/// nothing twice). Records that will change no more are dropped, oldest first, past
/// `RECORDS_KEPT`.
pub fn answered(
    ledger: Option<&SpawnLedger>,
    answer: &Answer,
) -> Option<(SpawnLedger, Vec<(String, String)>)> {
    let mut ledger = ledger.cloned().unwrap_or_default();
    let mut mail = Vec::new();
    let mut changed = answer.answered > ledger.answered;
    ledger.answered = ledger.answered.max(answer.answered);
    for (record, notice) in &answer.records {
        let current = ledger.records.iter_mut().find(|r| r.seq == record.seq);
        match current {
            Some(current) if current.state == record.state => continue,
            Some(current) => *current = record.clone(),
            None => ledger.records.push(record.clone()),
        }
        changed = true;
        mail.extend(notice.clone().map(|n| (record.name.clone(), n)));
    }
    if !changed {
        return None;
    }
    ledger.records.sort_by_key(|r| r.seq);
    while ledger.records.len() > RECORDS_KEPT {
        let Some(oldest_final) = ledger.records.iter().position(|r| r.state.is_final()) else {
            ledger.records.remove(0);
            continue;
        };
        ledger.records.remove(oldest_final);
    }
    Some((ledger, mail))
}

#[cfg(test)]
#[path = "spawn_tests.rs"]
mod tests;
