//! The merge queue as a pure decision. Members ask (`overseer merge request`, in their
//! own status) to land a pushed commit on the swarm's target branch; requests are
//! served first come first served, one at a time, each attempt a pod that clones
//! afresh, merges the exact commit, runs the checks and pushes with a lease on the
//! target commit it started from (`land.rs`). A target that moved, or an attempt that
//! did not finish, is tried again until the attempts run out; a conflict or a failing
//! check ends the request, and its author is mailed the paths or the output's tail.
//! A newer request of an author supersedes its queued one. The queue lives in the
//! swarm's status: an entry turns Merging, with its attempt, before its pod is made.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use crate::kinds::agent::Agent;
use crate::kinds::merge::{
    MergeLedger, MergePolicy, MergeRecord, MergeRequest, MergeState, QueuedMerge,
};
use crate::kinds::swarm::Swarm;
pub use crate::workspace::land::Landing;

/// Entries kept in the queue: every pending one, and the latest final ones.
pub const QUEUE_KEPT: usize = 100;
/// Records kept in a member's ledger.
pub const RECORDS_KEPT: usize = 32;
/// The mail type of the queue's messages.
pub const MAIL_TYPE: &str = "merge";

/// An attempt's pod as the cache shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Attempt {
    /// Not made yet (or not seen yet).
    Missing,
    Running,
    /// Ended: what it reported (None: it ended without a report, or past its deadline).
    Ended(Option<Landing>),
}

/// What the swarm does about its merge queue.
#[derive(Debug, Default, PartialEq)]
pub struct MergePlan {
    pub queue: Vec<QueuedMerge>,
    pub last_id: i64,
    /// The pod to make: the entry's id and attempt.
    pub start: Option<(i64, i64)>,
    /// Pods of attempts that are over.
    pub delete: Vec<String>,
    /// What each member is told, by its Agent's name.
    pub answers: BTreeMap<String, MergeAnswer>,
}

/// What a member is told: its requests answered through `answered`; records set, each
/// with its mail; an escalation to open in its name when its attempts ran out.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct MergeAnswer {
    pub answered: i64,
    pub records: Vec<(MergeRecord, Option<String>)>,
    pub escalation: Option<String>,
}

impl MergeAnswer {
    fn set(&mut self, record: MergeRecord, mail: Option<String>) {
        self.records.retain(|(r, _)| r.seq != record.seq);
        self.records.push((record, mail));
    }
}

/// The name of attempt `attempt` of queue entry `id` of `swarm`.
pub fn pod_name(swarm: &str, id: i64, attempt: i64) -> String {
    let suffix = format!("-merge-{id}-{attempt}");
    format!("{}{suffix}", crate::api::fit_name(swarm, 63 - suffix.len()))
}

/// The branch the queue lands on: the policy's, else the workspace's ref, else `main`.
pub fn target(swarm: &Swarm, policy: &MergePolicy) -> String {
    let git = swarm.spec.workspace.as_ref().and_then(|w| w.git.as_ref());
    policy.landing_branch(git.and_then(|g| g.r#ref.as_deref()))
}

/// The plan for `swarm`'s queue: its members (with their requests and ledgers), and
/// its attempts' pods by name.
pub fn plan(
    swarm: &Swarm,
    members: &[Agent],
    attempt: impl Fn(&str) -> Attempt,
    now: Timestamp,
) -> MergePlan {
    let status = swarm.status.clone().unwrap_or_default();
    let mut plan = MergePlan {
        queue: status.merge_queue,
        last_id: status.last_merge_id.unwrap_or(0),
        ..Default::default()
    };
    let policy = swarm
        .spec
        .coordination
        .as_ref()
        .and_then(|c| c.merge.clone());
    let name = swarm.name_any();
    if let Some(policy) = &policy {
        follow(
            &mut plan,
            &name,
            &target(swarm, policy),
            policy,
            &attempt,
            now,
        );
    }
    take_requests(&mut plan, (swarm, policy.as_ref()), members, now);
    if let Some(policy) = &policy {
        converge(&mut plan, members, &target(swarm, policy), now);
    }
    if policy.is_some() && !plan.queue.iter().any(|e| e.state == MergeState::Merging) {
        let next = plan
            .queue
            .iter_mut()
            .filter(|e| e.state == MergeState::Queued)
            .min_by_key(|e| e.id);
        if let Some(entry) = next {
            entry.state = MergeState::Merging;
            entry.attempts = 1;
            plan.start = Some((entry.id, 1));
            let record = record_of(entry, None, now);
            let member = entry.member.clone();
            plan.answers.entry(member).or_default().set(record, None);
        }
    }
    prune(&mut plan.queue);
    plan
}

/// The Merging entry's attempt: made if missing, followed when it ends.
fn follow(
    plan: &mut MergePlan,
    swarm: &str,
    target: &str,
    policy: &MergePolicy,
    attempt: &impl Fn(&str) -> Attempt,
    now: Timestamp,
) {
    let Some(entry) = plan
        .queue
        .iter_mut()
        .find(|e| e.state == MergeState::Merging)
    else {
        return;
    };
    let pod = pod_name(swarm, entry.id, entry.attempts);
    let landing = match attempt(&pod) {
        Attempt::Missing => {
            plan.start = Some((entry.id, entry.attempts));
            return;
        }
        Attempt::Running => return,
        Attempt::Ended(landing) => landing,
    };
    plan.delete.push(pod);
    let (state, reason) = match landing {
        Some(Landing::Merged { sha } | Landing::AlreadyMerged { sha }) => {
            entry.merged_sha = Some(sha.clone());
            (MergeState::Merged, format!("merged onto {target} as {sha}"))
        }
        Some(Landing::Conflict { paths }) => (
            MergeState::Conflict,
            format!("conflicts with {target} in: {}", paths.join(", ")),
        ),
        Some(Landing::ChecksFailed { check, tail }) => (
            MergeState::ChecksFailed,
            format!(
                "the check {check} failed; {target} is unchanged. The end of its output:\n{}",
                crate::workspace::land::tail(&tail, REASON_TAIL_BYTES)
            ),
        ),
        Some(Landing::NotOnBranch { reason }) => (MergeState::Refused, reason),
        retry @ (Some(Landing::TargetMoved | Landing::Error { .. }) | None) => {
            let why = match retry {
                Some(Landing::TargetMoved) => format!("{target} moved during the attempt"),
                Some(Landing::Error { reason }) => reason,
                _ => "the attempt ended without a result".into(),
            };
            if entry.attempts < policy.attempts {
                entry.attempts += 1;
                entry.reason = Some(format!("attempt {} after: {why}", entry.attempts));
                plan.start = Some((entry.id, entry.attempts));
                return;
            }
            let said = format!("{} attempts ran out; the last: {why}", entry.attempts);
            (MergeState::Failed, said)
        }
    };
    entry.state = state;
    entry.reason = Some(reason.chars().take(1024).collect());
    let entry = entry.clone();
    tell(plan, &entry, target, now);
}

/// The end of a failing check's output kept in the queue and mailed to its author.
const REASON_TAIL_BYTES: usize = 700;

/// Sets `entry`'s record on its author's answer, with the mail and escalation of its
/// state.
fn tell(plan: &mut MergePlan, entry: &QueuedMerge, target: &str, now: Timestamp) {
    let record = record_of(entry, entry.reason.clone(), now);
    let answer = plan.answers.entry(entry.member.clone()).or_default();
    if entry.state == MergeState::Failed {
        answer.escalation = Some(format!(
            "the merge queue could not land {} of {}: {}",
            short(&entry.sha),
            entry.branch,
            entry.reason.as_deref().unwrap_or_default()
        ));
    }
    answer.set(record, mail_for(entry, target));
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// The mail an entry's author gets in its state, from the entry alone (so an answer
/// lost to a stop is told the same later).
fn mail_for(entry: &QueuedMerge, target: &str) -> Option<String> {
    let commit = format!("Your commit {} of {}", short(&entry.sha), entry.branch);
    let reason = entry.reason.as_deref().unwrap_or_default();
    match entry.state {
        MergeState::Merged => Some(format!("{commit} is {reason}.")),
        MergeState::Conflict => Some(format!(
            "{commit} {reason}. Merge or rebase onto {target}, push, and request again; nothing was landed."
        )),
        MergeState::ChecksFailed => Some(format!("{commit} was not landed: {reason}")),
        MergeState::Failed => Some(format!(
            "{commit} was not landed: {reason}. Your overseer has been told."
        )),
        _ => None,
    }
}

/// Records the queue has that a member's ledger shows otherwise (a stop between the
/// queue's write and the answer's): told again as the queue has them, with their mail.
/// A record the ledger no longer has was dropped after it was told.
fn converge(plan: &mut MergePlan, members: &[Agent], target: &str, now: Timestamp) {
    for entry in plan.queue.clone() {
        let shown = members
            .iter()
            .find(|m| m.name_any() == entry.member)
            .and_then(|m| m.status.as_ref()?.merges.as_ref())
            .and_then(|l| l.records.iter().find(|r| r.seq == entry.seq))
            .map(|r| r.state);
        let told = plan
            .answers
            .get(&entry.member)
            .is_some_and(|a| a.records.iter().any(|(r, _)| r.seq == entry.seq));
        if shown.is_some_and(|s| s != entry.state) && !told {
            tell(plan, &entry, target, now);
        }
    }
}

fn record_of(entry: &QueuedMerge, reason: Option<String>, now: Timestamp) -> MergeRecord {
    MergeRecord {
        seq: entry.seq,
        sha: entry.sha.clone(),
        state: entry.state,
        reason,
        time: Time(now),
    }
}

/// Takes each member's unanswered requests in order: a newer one supersedes the
/// member's queued ones; one already in the queue (from before a stop) is answered as
/// the queue has it.
fn take_requests(
    plan: &mut MergePlan,
    (swarm, policy): (&Swarm, Option<&MergePolicy>),
    members: &[Agent],
    now: Timestamp,
) {
    let mut requests: Vec<(&Agent, &MergeRequest)> = members
        .iter()
        .flat_map(|m| unanswered(m).into_iter().map(move |r| (m, r)))
        .collect();
    requests.sort_by(|(a, x), (b, y)| {
        (x.time.0, a.name_any(), x.seq).cmp(&(y.time.0, b.name_any(), y.seq))
    });
    for (member, request) in requests {
        let name = member.name_any();
        let answer = plan.answers.entry(name.clone()).or_default();
        answer.answered = answer.answered.max(request.seq);
        if let Some(entry) = plan
            .queue
            .iter()
            .find(|e| e.member == name && e.seq == request.seq)
        {
            // Taken before a stop kept the answer from being written; what became of it
            // since (an outcome, and its mail) is told as this plan has it.
            let record = record_of(entry, entry.reason.clone(), now);
            let answer = plan.answers.entry(name).or_default();
            if !answer.records.iter().any(|(r, _)| r.seq == record.seq) {
                answer.records.push((record, None));
            }
            continue;
        }
        let refused = |reason: &str| MergeRecord {
            seq: request.seq,
            sha: request.sha.clone(),
            state: MergeState::Refused,
            reason: Some(reason.to_string()),
            time: Time(now),
        };
        let own = own_branch(swarm, member);
        let refusal = match policy {
            None => Some("the swarm sets no spec.coordination.merge".to_string()),
            Some(_) if request.branch != own => Some(format!(
                "a member lands its own branch ({own}), not {}",
                request.branch
            )),
            Some(_) => None,
        };
        if let Some(reason) = refusal {
            plan.answers
                .entry(name)
                .or_default()
                .set(refused(&reason), None);
            continue;
        }
        enqueue(plan, &name, request, now);
    }
}

/// Queues `member`'s `request`, superseding its queued ones.
fn enqueue(plan: &mut MergePlan, member: &str, request: &MergeRequest, now: Timestamp) {
    for older in plan
        .queue
        .iter_mut()
        .filter(|e| e.member == member && e.state == MergeState::Queued)
    {
        older.state = MergeState::Superseded;
        older.reason = Some(format!("superseded by request {}", request.seq));
        let record = record_of(older, older.reason.clone(), now);
        plan.answers
            .entry(member.to_string())
            .or_default()
            .set(record, None);
    }
    plan.last_id += 1;
    let entry = QueuedMerge {
        id: plan.last_id,
        member: member.to_string(),
        seq: request.seq,
        branch: request.branch.clone(),
        sha: request.sha.clone(),
        state: MergeState::Queued,
        attempts: 0,
        reason: None,
        merged_sha: None,
        requested_time: Time(now),
    };
    let ahead = plan.queue.iter().filter(|e| !e.state.is_final()).count();
    let record = record_of(&entry, Some(format!("{ahead} ahead in the queue")), now);
    plan.queue.push(entry);
    plan.answers
        .entry(member.to_string())
        .or_default()
        .set(record, None);
}

/// The branch `member` works on: its workspace's (its own, else the swarm's) `branch`,
/// else `overseer/<agent>`.
fn own_branch(swarm: &Swarm, member: &Agent) -> String {
    member
        .spec
        .workspace
        .as_deref()
        .or(swarm.spec.workspace.as_ref())
        .and_then(|w| w.git.as_ref()?.branch.clone())
        .unwrap_or_else(|| crate::workspace::default_branch(&member.name_any()))
}

/// The requests of `member` not answered yet, in seq order.
pub fn unanswered(member: &Agent) -> Vec<&MergeRequest> {
    member.status.as_ref().map_or_else(Vec::new, |s| {
        let answered = s.merges.as_ref().map_or(0, |l| l.answered);
        crate::kinds::request::unanswered(&s.merge_requests, answered)
    })
}

/// Drops the oldest final entries past `QUEUE_KEPT`.
fn prune(queue: &mut Vec<QueuedMerge>) {
    while queue.len() > QUEUE_KEPT {
        match queue.iter().position(|e| e.state.is_final()) {
            Some(oldest) => queue.remove(oldest),
            None => queue.remove(0),
        };
    }
}

/// `ledger` with `answer` written onto it, the mail that goes with records that change
/// and whether the escalation goes too (only with the record that fails): None when it
/// holds the answer already.
pub fn answered(
    ledger: Option<&MergeLedger>,
    answer: &MergeAnswer,
) -> Option<(MergeLedger, Vec<String>, bool)> {
    let mut ledger = ledger.cloned().unwrap_or_default();
    let mut mail = Vec::new();
    let mut escalate = false;
    let mut changed = answer.answered > ledger.answered;
    ledger.answered = ledger.answered.max(answer.answered);
    for (record, notice) in &answer.records {
        match ledger.records.iter_mut().find(|r| r.seq == record.seq) {
            Some(current) if current.state == record.state => continue,
            Some(current) => *current = record.clone(),
            None => ledger.records.push(record.clone()),
        }
        changed = true;
        mail.extend(notice.clone());
        escalate |= record.state == MergeState::Failed;
    }
    if !changed {
        return None;
    }
    ledger.records.sort_by_key(|r| r.seq);
    while ledger.records.len() > RECORDS_KEPT {
        match ledger.records.iter().position(|r| r.state.is_final()) {
            Some(oldest) => ledger.records.remove(oldest),
            None => ledger.records.remove(0),
        };
    }
    Some((ledger, mail, escalate && answer.escalation.is_some()))
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
