//! File claims as a pure decision. A member claims paths of the workspace (`overseer
//! claim`, in its own status) so that no two members edit the same file: a claim that
//! meets another member's is refused with the holder and since when; one that meets
//! none is granted whole. Claims end when their holder is Done or Failed, its attempt
//! ends, it leaves the swarm, or the run ends: they are checked against the members as
//! they are at every reconcile, so an operator that restarts keeps no orphan claim.
//! Requests are answered first come first served across the swarm.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{Resource, ResourceExt};

use crate::kinds::agent::{Agent, AgentPhase};
use crate::kinds::claim::{
    Claim, ClaimLedger, ClaimRecord, ClaimRequest, ClaimState, normal_path, overlap,
};
use crate::kinds::swarm::{Swarm, SwarmPhase};

/// Claims a swarm holds at once, at most (the schema's limit).
pub const SWARM_LIMIT: usize = 512;
/// Claims one member holds at once, at most.
pub const MEMBER_LIMIT: usize = 64;
/// Records kept in a member's ledger (the schema's limit).
pub const RECORDS_KEPT: usize = 16;

/// What the swarm does about its claims.
#[derive(Debug, Default, PartialEq)]
pub struct ClaimPlan {
    /// The claims held after this reconcile, by path.
    pub claims: Vec<Claim>,
    /// What each member is told, by its Agent's name.
    pub answers: BTreeMap<String, ClaimAnswer>,
    /// Claims that ended since the status was written (their holder's name and path).
    pub ended: Vec<Claim>,
}

/// A member's requests answered through `answered`, with their records.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ClaimAnswer {
    pub answered: i64,
    pub records: Vec<ClaimRecord>,
}

/// The plan for `swarm`'s claims, given the members it controls.
pub fn plan(swarm: &Swarm, members: &[Agent], now: Timestamp) -> ClaimPlan {
    let status = swarm.status.clone().unwrap_or_default();
    let ended_run = status.phase == Some(SwarmPhase::Ended);
    let (kept, ended): (Vec<Claim>, Vec<Claim>) = status
        .claims
        .into_iter()
        .partition(|c| !ended_run && holds(members, c));
    let mut plan = ClaimPlan {
        claims: kept,
        ended,
        ..Default::default()
    };
    let mut requests: Vec<(&Agent, &ClaimRequest)> = members
        .iter()
        .flat_map(|m| unanswered(m).into_iter().map(move |r| (m, r)))
        .collect();
    // First come first served; a member's own requests in their order.
    requests.sort_by(|(a, x), (b, y)| {
        (x.time.0, a.name_any(), x.seq).cmp(&(y.time.0, b.name_any(), y.seq))
    });
    for (member, request) in requests {
        let record = answer(&mut plan.claims, member, request, ended_run, now);
        let told = plan.answers.entry(member.name_any()).or_default();
        told.answered = told.answered.max(request.seq);
        told.records.push(record);
    }
    plan.claims.sort_by(|a, b| a.path.cmp(&b.path));
    plan
}

/// Whether `claim`'s holder still holds it: a member of the swarm, not being deleted,
/// in the attempt it claimed in, and not Done or Failed.
fn holds(members: &[Agent], claim: &Claim) -> bool {
    members.iter().any(|m| {
        let status = m.status.as_ref();
        m.name_any() == claim.holder
            && m.meta().deletion_timestamp.is_none()
            && status.and_then(|s| s.attempt) == Some(claim.attempt)
            && !matches!(
                status.and_then(|s| s.phase),
                Some(AgentPhase::Done | AgentPhase::Failed)
            )
    })
}

/// The requests of `member` not answered yet, in seq order.
pub fn unanswered(member: &Agent) -> Vec<&ClaimRequest> {
    member.status.as_ref().map_or_else(Vec::new, |s| {
        let answered = s.claims.as_ref().map_or(0, |l| l.answered);
        crate::kinds::request::unanswered(&s.claim_requests, answered)
    })
}

/// Answers one request against the claims held, changing them when it is taken.
fn answer(
    claims: &mut Vec<Claim>,
    member: &Agent,
    request: &ClaimRequest,
    ended_run: bool,
    now: Timestamp,
) -> ClaimRecord {
    let name = member.name_any();
    let record = |state, reason: Option<String>, held: Vec<Claim>| ClaimRecord {
        seq: request.seq,
        state,
        reason,
        held,
        time: Time(now),
    };
    let refuse = |reason: String| record(ClaimState::Refused, Some(reason), Vec::new());
    let mut paths = Vec::new();
    for path in &request.paths {
        match normal_path(path) {
            Ok(normal) => paths.push(normal),
            Err(why) => return refuse(format!("{path:?} is not a workspace path: {why}")),
        }
    }
    if request.release {
        claims.retain(|c| c.holder != name || !(paths.is_empty() || paths.contains(&c.path)));
        return record(ClaimState::Released, None, Vec::new());
    }
    let status = member.status.clone().unwrap_or_default();
    let attempt = match (status.attempt, status.phase) {
        _ if ended_run => return refuse("the swarm's run has ended".into()),
        (_, Some(AgentPhase::Done | AgentPhase::Failed)) => {
            return refuse("its loop has ended".into());
        }
        (Some(attempt), _) => attempt,
        (None, _) => return refuse("it has no attempt running yet".into()),
    };
    if paths.is_empty() {
        return refuse("no path named".into());
    }
    let held: Vec<Claim> = claims
        .iter()
        .filter(|c| c.holder != name && paths.iter().any(|p| overlap(p, &c.path)))
        .take(32)
        .cloned()
        .collect();
    if let Some(first) = held.first() {
        let reason = format!(
            "{} is claimed by {} since {}",
            first.path, first.holder, first.since.0
        );
        return record(ClaimState::Refused, Some(reason), held);
    }
    let new: Vec<&String> = paths
        .iter()
        .filter(|p| !claims.iter().any(|c| c.holder == name && c.path == **p))
        .collect();
    let own = claims.iter().filter(|c| c.holder == name).count();
    if own + new.len() > MEMBER_LIMIT {
        return refuse(format!(
            "a member holds at most {MEMBER_LIMIT} claims; release some first"
        ));
    }
    if claims.len() + new.len() > SWARM_LIMIT {
        return refuse(format!("the swarm holds {SWARM_LIMIT} claims already"));
    }
    for path in new {
        claims.push(Claim {
            path: path.clone(),
            holder: name.clone(),
            attempt,
            since: Time(now),
        });
    }
    // A member may hold a directory and a file in it at once, as it asked: both end
    // together.
    record(ClaimState::Granted, None, Vec::new())
}

/// `ledger` with `answer` written onto it; None when it holds the answer already.
pub fn answered(ledger: Option<&ClaimLedger>, answer: &ClaimAnswer) -> Option<ClaimLedger> {
    let mut ledger = ledger.cloned().unwrap_or_default();
    if answer.answered <= ledger.answered {
        return None;
    }
    ledger.answered = answer.answered;
    for record in &answer.records {
        ledger.records.retain(|r| r.seq != record.seq);
        ledger.records.push(record.clone());
    }
    ledger.records.sort_by_key(|r| r.seq);
    let excess = ledger.records.len().saturating_sub(RECORDS_KEPT);
    ledger.records.drain(..excess);
    Some(ledger)
}

#[cfg(test)]
#[path = "claims_tests.rs"]
mod tests;
