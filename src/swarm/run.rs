//! A swarm's run as a pure decision: running, suspended (`spec.suspend`) or ended
//! (`spec.timeout` passed, or every member ended its loop), when it started, and the
//! final report written once when it ends. The members read the swarm's phase: a
//! suspended or ended swarm stops their pods and keeps their state.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use crate::kinds::agent::{Agent, AgentPhase};
use crate::kinds::swarm::{EndReason, MemberReport, Swarm, SwarmEnd, SwarmPhase, SwarmStatus};

/// The run part of `status` for `swarm` with `members` at `now`; returns when the
/// timeout can end it (None: no timer needed).
pub fn decide(
    swarm: &Swarm,
    members: &[Agent],
    status: &mut SwarmStatus,
    now: Timestamp,
) -> Option<Duration> {
    let start = status
        .start_time
        .clone()
        .or_else(|| swarm.creation_timestamp())
        .unwrap_or(Time(now));
    status.start_time = Some(start.clone());
    let deadline = swarm
        .spec
        .timeout
        .as_ref()
        .map(|t| crate::duration::after(&start, t.get()));
    let reason = if deadline.is_some_and(|d| d <= now) {
        Some(EndReason::TimedOut)
    } else if workers(swarm, members).next().is_some()
        && workers(swarm, members).all(ended)
        && !status.spawned.iter().any(|e| {
            matches!(
                e.state,
                crate::kinds::spawn::SpawnedState::Queued
                    | crate::kinds::spawn::SpawnedState::Starting
            )
        })
    {
        Some(EndReason::Completed)
    } else {
        None
    };
    status.end = match (reason, status.end.take()) {
        // Ended already for this reason: its time and report stay as written.
        (Some(reason), Some(end)) if end.reason == reason => Some(end),
        (Some(reason), _) => Some(SwarmEnd {
            reason,
            time: Time(now),
            report: report(members, now),
        }),
        // A raised timeout or a member back in its loop: the run goes on.
        (None, _) => None,
    };
    status.phase = Some(match (&status.end, swarm.spec.suspend) {
        (Some(_), _) => SwarmPhase::Ended,
        (None, true) => SwarmPhase::Suspended,
        (None, false) => SwarmPhase::Running,
    });
    match (&status.end, deadline) {
        (None, Some(deadline)) => Some(
            deadline
                .duration_since(now)
                .try_into()
                .unwrap_or(Duration::ZERO),
        ),
        _ => None,
    }
}

/// The members but the overseer (which leads until the others are done).
fn workers<'a>(swarm: &Swarm, members: &'a [Agent]) -> impl Iterator<Item = &'a Agent> {
    let overseer = crate::roles::member_name(&swarm.name_any(), crate::roles::OVERSEER_MEMBER);
    members.iter().filter(move |a| a.name_any() != overseer)
}

/// Whether a member's loop has ended (it is not coming back by itself).
fn ended(agent: &Agent) -> bool {
    matches!(
        agent.status.as_ref().and_then(|s| s.phase),
        Some(AgentPhase::Done | AgentPhase::Blocked | AgentPhase::Failed)
    )
}

/// Each member as it stands at the end.
fn report(members: &[Agent], now: Timestamp) -> Vec<MemberReport> {
    let mut report: Vec<MemberReport> = members
        .iter()
        .map(|agent| {
            let status = agent.status.clone().unwrap_or_default();
            let until = status
                .current_exit()
                .and_then(|e| e.time.clone())
                .map_or(now, |t| t.0);
            let mail = status.mail.clone().unwrap_or_default();
            MemberReport {
                name: agent.name_any(),
                role: agent.spec.role.clone(),
                phase: status.phase.map(crate::api::wire_name),
                attempts: status.attempt.unwrap_or(0),
                tokens: status
                    .current_activity()
                    .and_then(|a| a.usage.as_ref())
                    .map_or(0, |u| u.total_tokens),
                escalations: status.escalation_counts.as_ref().map_or(0, |c| c.last_id),
                mail_sent: mail.sent,
                mail_received: mail.received_count,
                seconds: status
                    .start_time
                    .map_or(0, |s| until.duration_since(s.0).as_secs().max(0)),
            }
        })
        .collect();
    report.sort_by(|a, b| a.name.cmp(&b.name));
    report.truncate(101);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn swarm(spec: serde_json::Value) -> Swarm {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": "team", "creationTimestamp": "2023-11-14T22:13:20Z"},
            "spec": spec
        }))
        .unwrap()
    }

    fn member(name: &str, status: serde_json::Value) -> Agent {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
            "metadata": {"name": name},
            "spec": {"role": "builder"},
            "status": status
        }))
        .unwrap()
    }

    #[test]
    fn a_run_times_out_once_with_its_report_and_a_raised_timeout_continues_it() {
        let swarm = swarm(serde_json::json!({"timeout": "1h"}));
        let members = [member(
            "team-builder",
            serde_json::json!({"phase": "Running", "attempt": 2, "startTime": "2023-11-14T22:13:20Z",
                "mail": {"sent": 3, "receivedCount": 1}, "escalationCounts": {"lastId": 2}}),
        )];
        let mut status = SwarmStatus::default();
        assert_eq!(
            decide(&swarm, &members, &mut status, at(600)),
            Some(Duration::from_secs(3000))
        );
        assert_eq!(status.phase, Some(SwarmPhase::Running));
        assert_eq!(decide(&swarm, &members, &mut status, at(3600)), None);
        let end = status.end.clone().unwrap();
        assert_eq!(
            (end.reason, status.phase),
            (EndReason::TimedOut, Some(SwarmPhase::Ended))
        );
        let row = &end.report[0];
        assert_eq!(
            (
                row.attempts,
                row.escalations,
                row.mail_sent,
                row.mail_received,
                row.seconds
            ),
            (2, 2, 3, 1, 3600)
        );
        // Written once: a later reconcile keeps the time and the report.
        decide(&swarm, &members, &mut status, at(9000));
        assert_eq!(status.end, Some(end));
        let raised = self::swarm(serde_json::json!({"timeout": "10h"}));
        decide(&raised, &members, &mut status, at(9000));
        assert_eq!(
            (status.end.clone(), status.phase),
            (None, Some(SwarmPhase::Running))
        );
    }

    #[test]
    fn a_run_completes_when_every_member_has_ended_and_suspend_is_a_phase() {
        let done = member("a", serde_json::json!({"phase": "Done"}));
        let blocked = member("b", serde_json::json!({"phase": "Blocked"}));
        let running = member("c", serde_json::json!({"phase": "Running"}));
        let mut status = SwarmStatus::default();
        let plain = swarm(serde_json::json!({}));
        decide(&plain, &[done.clone(), running], &mut status, at(10));
        assert_eq!(status.phase, Some(SwarmPhase::Running));
        decide(&plain, &[done, blocked], &mut status, at(20));
        assert_eq!(
            status.end.as_ref().map(|e| e.reason),
            Some(EndReason::Completed)
        );
        let mut status = SwarmStatus::default();
        decide(&plain, &[], &mut status, at(20));
        assert_eq!(
            status.phase,
            Some(SwarmPhase::Running),
            "no members yet is not an end"
        );
        let suspended = swarm(serde_json::json!({"suspend": true}));
        let mut status = SwarmStatus::default();
        decide(
            &suspended,
            &[member("c", serde_json::json!({"phase": "Suspended"}))],
            &mut status,
            at(20),
        );
        assert_eq!(status.phase, Some(SwarmPhase::Suspended));
        assert!(suspended.halts_members());
        let overseer_running = member("team-overseer", serde_json::json!({"phase": "Running"}));
        let mut status = SwarmStatus::default();
        let done = member("team-a", serde_json::json!({"phase": "Done"}));
        decide(&plain, &[overseer_running, done], &mut status, at(30));
        assert_eq!(
            status.phase,
            Some(SwarmPhase::Ended),
            "the overseer need not end"
        );
    }
}
