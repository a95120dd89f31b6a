use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::*;
use crate::kinds::agent::{Escalation, EscalationKind};
use crate::kinds::swarm::SwarmEnd;

fn at() -> Time {
    Time("2026-12-06T00:00:00Z".parse().unwrap())
}

fn cond(type_: &str, status: bool, reason: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: format!("{reason} message"),
        observed_generation: Some(1),
        last_transition_time: at(),
    }
}

fn stalled(reason: &str) -> Reading {
    Reading::Stalled(reason.into(), format!("{reason} message"))
}

fn in_progress(reason: &str) -> Reading {
    Reading::InProgress(reason.into(), format!("{reason} message"))
}

fn agent_in(phase: AgentPhase, conditions: Vec<Condition>) -> AgentStatus {
    AgentStatus {
        phase: Some(phase),
        conditions,
        ..Default::default()
    }
}

fn escalation(severity: Severity, state: EscalationState) -> Escalation {
    Escalation {
        id: 3,
        kind: EscalationKind::Requested,
        severity,
        state,
        attempt: 1,
        reason: None,
        request_seq: None,
        opened_time: at(),
        told_time: None,
        notified_time: None,
        settled_time: None,
        acknowledged_by: None,
    }
}

#[test]
fn every_agent_state_reads_as_the_table_says() {
    use AgentPhase::*;
    let ready = |ok, reason| vec![cond(conditions::READY, ok, reason)];
    let mut critical = agent_in(Running, ready(true, "PodReady"));
    critical.escalations = vec![escalation(Severity::Critical, EscalationState::Open)];
    let mut answered = critical.clone();
    answered.escalations[0].state = EscalationState::Acknowledged;
    let mut warning = critical.clone();
    warning.escalations[0].severity = Severity::Warning;
    let blocked = vec![cond(conditions::IN_LOOP, false, "SessionTimeout")];
    let cases = [
        (
            "running, pod ready",
            agent_in(Running, ready(true, "PodReady")),
            Reading::Current,
        ),
        (
            "pod starting",
            agent_in(Pending, ready(false, "PodCreated")),
            in_progress("PodCreated"),
        ),
        (
            "no status yet",
            AgentStatus::default(),
            Reading::InProgress("PodCreated".into(), "waiting for the pod".into()),
        ),
        (
            "swarm not there yet",
            agent_in(Pending, ready(false, "SwarmNotFound")),
            in_progress("SwarmNotFound"),
        ),
        (
            "no image",
            agent_in(Pending, ready(false, "NoImage")),
            stalled("NoImage"),
        ),
        (
            "invalid CIDR",
            agent_in(Pending, ready(false, "InvalidSpec")),
            stalled("InvalidSpec"),
        ),
        (
            "pod refused",
            agent_in(Pending, ready(false, "PodRefused")),
            stalled("PodRefused"),
        ),
        (
            "name taken",
            agent_in(Pending, ready(false, "NameTaken")),
            stalled("NameTaken"),
        ),
        (
            "image not pulled",
            agent_in(Running, ready(false, "ImageNotPulled")),
            stalled("ImageNotPulled"),
        ),
        (
            "inactive, pod replaced",
            agent_in(Pending, ready(false, "Stalled")),
            in_progress("Stalled"),
        ),
        (
            "blocked by session timeout",
            agent_in(Blocked, blocked.clone()),
            stalled("SessionTimeout"),
        ),
        (
            "failed",
            agent_in(Failed, vec![]),
            Reading::Stalled("Failed".into(), "the agent is Failed".into()),
        ),
        ("done", agent_in(Done, vec![]), Reading::Current),
        (
            "suspended",
            agent_in(Suspended, ready(false, "Suspended")),
            Reading::Suspended,
        ),
        (
            "critical escalation open",
            critical,
            Reading::Stalled(
                "Escalated".into(),
                "critical escalation #3 (Requested) is open: overseer escalations builder".into(),
            ),
        ),
        ("critical escalation answered", answered, Reading::Current),
        ("warning escalation open", warning, Reading::Current),
    ];
    for (name, status, expected) in cases {
        assert_eq!(agent("builder", &status), expected, "{name}");
    }
}

#[test]
fn a_finished_agent_is_ready_and_an_unfinished_one_is_left_as_decided() {
    let mut done = agent_in(
        AgentPhase::Done,
        vec![
            cond(conditions::READY, false, "PodGone"),
            cond(conditions::IN_LOOP, false, "Released"),
        ],
    );
    done.attempt = Some(1);
    done.exit = Some(Box::new(crate::kinds::agent::AgentExit {
        outcome: ExitOutcome::Released,
        reason: Some("the overseer's own words".into()),
        attempt: 1,
        time: None,
    }));
    settle_agent("a", &mut done, &[], Some(2), &at());
    let ready = condition(&done.conditions, conditions::READY).unwrap();
    assert!(!ready.message.contains("own words"), "{}", ready.message);
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Released")
    );
    assert!(!conditions::is_true(&done.conditions, conditions::STALLED));
    assert!(!conditions::is_true(
        &done.conditions,
        conditions::RECONCILING
    ));

    let mut blocked = agent_in(
        AgentPhase::Blocked,
        vec![
            cond(conditions::READY, true, "PodReady"),
            cond(conditions::IN_LOOP, false, "Blocked"),
        ],
    );
    settle_agent("a", &mut blocked, &[], Some(2), &at());
    assert!(conditions::is_true(
        &blocked.conditions,
        conditions::STALLED
    ));
    let stalled = condition(&blocked.conditions, conditions::STALLED).unwrap();
    assert_eq!(
        (stalled.reason.as_str(), stalled.observed_generation),
        ("Blocked", Some(2))
    );
}

#[test]
fn a_condition_set_twice_in_one_reconcile_keeps_its_transition_time() {
    let before = vec![cond(conditions::READY, true, "Completed")];
    let mut status = SwarmStatus {
        phase: Some(SwarmPhase::Ended),
        end: Some(SwarmEnd {
            reason: EndReason::Completed,
            time: at(),
            report: vec![],
        }),
        conditions: vec![cond(conditions::READY, false, "OverseerNotReady")],
        ..Default::default()
    };
    let later = Time("2026-12-06T01:00:00Z".parse().unwrap());
    status.conditions[0].last_transition_time = later.clone();
    settle_swarm(&mut status, &before, Some(1), &later);
    let ready = condition(&status.conditions, conditions::READY).unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Completed")
    );
    assert_eq!(
        ready.last_transition_time,
        at(),
        "True before and after: no transition"
    );
    let stalled = condition(&status.conditions, conditions::STALLED).unwrap();
    assert_eq!(stalled.last_transition_time, later, "new: set now");
}

#[test]
fn every_goal_state_reads_as_the_table_says() {
    use GoalPhase::*;
    let goal_in = |phase: Option<GoalPhase>, conditions: Vec<Condition>| GoalStatus {
        phase,
        conditions,
        progress: Some("1/3".into()),
        ..Default::default()
    };
    let cases = [
        (
            "not started",
            goal_in(None, vec![]),
            Reading::InProgress("Pending".into(), "not started".into()),
        ),
        (
            "running",
            goal_in(Some(Running), vec![]),
            Reading::InProgress("Running".into(), "Running: 1/3 steps done".into()),
        ),
        (
            "waiting",
            goal_in(Some(Waiting), vec![]),
            Reading::InProgress("Waiting".into(), "Waiting: 1/3 steps done".into()),
        ),
        (
            "succeeded",
            goal_in(Some(Succeeded), vec![]),
            Reading::Current,
        ),
        (
            "failed",
            goal_in(Some(Failed), vec![cond(conditions::READY, false, "Failed")]),
            stalled("Failed"),
        ),
        (
            "paused by a failed step",
            goal_in(
                Some(Paused),
                vec![cond(conditions::PAUSED, true, "StepFailed")],
            ),
            stalled("StepFailed"),
        ),
        (
            "paused by spec.paused",
            goal_in(
                Some(Paused),
                vec![cond(conditions::PAUSED, true, "PausedBySpec")],
            ),
            Reading::Suspended,
        ),
        (
            "blocked",
            goal_in(
                Some(Waiting),
                vec![cond(conditions::BLOCKED, true, "Deadlock")],
            ),
            stalled("Deadlock"),
        ),
        (
            "completed step edited",
            goal_in(
                Some(Running),
                vec![cond(conditions::PROGRESSING, false, "SpecConflict")],
            ),
            stalled("SpecConflict"),
        ),
        (
            "step pod refused",
            goal_in(
                Some(Running),
                vec![cond(conditions::PROGRESSING, false, "PodRefused")],
            ),
            stalled("PodRefused"),
        ),
    ];
    for (name, status, expected) in cases {
        assert_eq!(goal(&status), expected, "{name}");
    }
}

#[test]
fn every_prwatch_and_swarm_state_reads_as_the_table_says() {
    use PRWatchPhase::*;
    let watch = |phase, conditions| PRWatchStatus {
        phase: Some(phase),
        conditions,
        ..Default::default()
    };
    let cases = [
        (
            "watching, polled",
            watch(Watching, vec![cond(conditions::READY, true, "Polled")]),
            Reading::Current,
        ),
        (
            "watching, not polled",
            watch(
                Watching,
                vec![cond(conditions::READY, false, "NotPolledYet")],
            ),
            in_progress("NotPolledYet"),
        ),
        ("merged", watch(Merged, vec![]), Reading::Current),
        ("stopped", watch(Stopped, vec![]), Reading::Current),
        (
            "failing",
            watch(Failing, vec![cond(conditions::READY, false, "Failing")]),
            stalled("Failing"),
        ),
        (
            "exhausted",
            watch(Exhausted, vec![]),
            Reading::Stalled("Exhausted".into(), "Exhausted".into()),
        ),
    ];
    for (name, status, expected) in cases {
        assert_eq!(prwatch(&status), expected, "{name}");
    }
    let swarm_in = |phase, end: Option<EndReason>, conditions| SwarmStatus {
        phase,
        end: end.map(|reason| SwarmEnd {
            reason,
            time: at(),
            report: vec![],
        }),
        conditions,
        ..Default::default()
    };
    let ready = cond(conditions::READY, true, "Ready");
    let cases = [
        (
            "ready",
            swarm_in(Some(SwarmPhase::Running), None, vec![ready.clone()]),
            Reading::Current,
        ),
        (
            "members missing",
            swarm_in(
                Some(SwarmPhase::Running),
                None,
                vec![cond(conditions::READY, false, "MembersMissing")],
            ),
            in_progress("MembersMissing"),
        ),
        (
            "invalid spec, members ready",
            swarm_in(
                Some(SwarmPhase::Running),
                None,
                vec![
                    ready.clone(),
                    cond(conditions::SPEC_VALID, false, "InvalidSpec"),
                ],
            ),
            stalled("InvalidSpec"),
        ),
        (
            "suspended",
            swarm_in(Some(SwarmPhase::Suspended), None, vec![]),
            Reading::Suspended,
        ),
        (
            "timed out",
            swarm_in(Some(SwarmPhase::Ended), Some(EndReason::TimedOut), vec![]),
            Reading::Stalled(
                "TimedOut".into(),
                "the run timed out (spec.timeout); its report is in status.end".into(),
            ),
        ),
        (
            "completed",
            swarm_in(Some(SwarmPhase::Ended), Some(EndReason::Completed), vec![]),
            Reading::Current,
        ),
    ];
    for (name, status, expected) in cases {
        assert_eq!(swarm(&status), expected, "{name}");
    }
    let mut invalid = swarm_in(
        Some(SwarmPhase::Running),
        None,
        vec![ready, cond(conditions::SPEC_VALID, false, "InvalidSpec")],
    );
    settle_swarm(&mut invalid, &[], Some(1), &at());
    assert!(
        !conditions::is_true(&invalid.conditions, conditions::READY),
        "never Ready while invalid"
    );
    assert!(conditions::is_true(
        &invalid.conditions,
        conditions::STALLED
    ));
}
