use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn limits(webhook: bool) -> Limits {
    Limits {
        waiting_after: Duration::from_secs(600),
        ack_within: Duration::from_secs(900),
        webhook,
        guarded_after: 3,
        memory_above: 0,
        memory_growth_after: None,
    }
}

fn running() -> AgentStatus {
    AgentStatus {
        attempt: Some(2),
        phase: Some(AgentPhase::Running),
        ..Default::default()
    }
}

fn request(seq: i64, severity: Severity, reason: &str) -> EscalationRequest {
    EscalationRequest {
        seq,
        severity,
        reason: reason.into(),
        time: Time(at(0)),
    }
}

fn blocked_exit(status: &mut AgentStatus, attempt: i64) {
    status.exit = Some(Box::new(AgentExit {
        outcome: ExitOutcome::Blocked,
        reason: Some("need the staging password".into()),
        time: Some(Time(at(0))),
        attempt,
    }));
}

fn waiting_since(status: &mut AgentStatus, since: i64) {
    status.activity = Some(Activity {
        state: ActivityState::Waiting,
        since: Some(Time(at(since))),
        last_activity_time: None,
        heartbeat_time: None,
        attempt: status.attempt,
        exit_code: None,
        summary: None,
        progress_time: None,
        usage: None,
        guards: None,
        resources: None,
    });
}

fn blocked_by(status: &mut AgentStatus, reason: &str) {
    status.phase = Some(AgentPhase::Blocked);
    status.conditions = vec![Condition {
        type_: conditions::IN_LOOP.into(),
        status: "False".into(),
        reason: reason.into(),
        message: String::new(),
        observed_generation: None,
        last_transition_time: Time(at(0)),
    }];
}

fn ack(status: &mut AgentStatus, through: i64, time: i64) {
    status.escalation_ack = Some(Box::new(EscalationAck {
        through,
        by: "lead".into(),
        time: Time(at(time)),
    }));
}

#[test]
fn each_request_opens_one_escalation_in_order_and_never_again() {
    let mut status = running();
    status.escalation_requests = vec![
        request(2, Severity::Critical, "second"),
        request(1, Severity::Info, "first"),
    ];
    let outcome = step(&mut status, &limits(false), at(10));
    let opened: Vec<(i64, Option<i64>, Severity)> = outcome
        .opened
        .iter()
        .map(|e| (e.id, e.request_seq, e.severity))
        .collect();
    assert_eq!(
        opened,
        [
            (1, Some(1), Severity::Info),
            (2, Some(2), Severity::Critical)
        ]
    );
    assert_eq!(status.escalation_counts.as_ref().unwrap().taken_seq, 2);
    // Taken requests stay in the list until the agent's next escalate drops them.
    let again = step(&mut status, &limits(false), at(20));
    assert!(again.opened.is_empty());
    assert_eq!(status.escalations.len(), 2);
}

#[test]
fn a_block_opens_one_warning_per_attempt_and_resolves_when_taken_back() {
    let mut status = running();
    blocked_exit(&mut status, 2);
    let outcome = step(&mut status, &limits(false), at(10));
    assert_eq!(outcome.opened.len(), 1);
    assert_eq!(outcome.opened[0].kind, EscalationKind::Blocked);
    assert_eq!(outcome.opened[0].severity, Severity::Warning);
    assert!(step(&mut status, &limits(false), at(20)).opened.is_empty());
    // `overseer loop add` takes the exit back.
    status.exit = None;
    step(&mut status, &limits(false), at(30));
    assert_eq!(status.escalations[0].state, EscalationState::Resolved);
    assert_eq!(status.escalations[0].settled_time, Some(Time(at(30))));
}

#[test]
fn a_block_of_an_earlier_attempt_opens_nothing() {
    let mut status = running();
    blocked_exit(&mut status, 1);
    assert!(step(&mut status, &limits(false), at(10)).opened.is_empty());
}

#[test]
fn a_prompt_escalates_only_after_waiting_its_limit() {
    let mut status = running();
    waiting_since(&mut status, 0);
    let early = step(&mut status, &limits(false), at(300));
    assert!(early.opened.is_empty());
    assert_eq!(early.next_at, Some(at(600)));
    let late = step(&mut status, &limits(false), at(600));
    assert_eq!(late.opened[0].kind, EscalationKind::Waiting);
    // A person answered the prompt: the agent works again.
    status.activity.as_mut().unwrap().state = ActivityState::Working;
    step(&mut status, &limits(false), at(700));
    assert_eq!(status.escalations[0].state, EscalationState::Resolved);
}

#[test]
fn a_critical_escalation_goes_to_the_webhook_at_once_and_only_once() {
    let mut status = running();
    status.escalation_requests = vec![request(1, Severity::Critical, "the disk is full")];
    let first = step(&mut status, &limits(true), at(10));
    assert_eq!(first.notify.len(), 1);
    assert_eq!(status.escalations[0].notified_time, Some(Time(at(10))));
    for now in [20, 2000, 90_000] {
        let later = step(&mut status, &limits(true), at(now));
        assert!(later.notify.is_empty() && later.opened.is_empty(), "{now}");
    }
}

#[test]
fn an_agent_blocked_by_the_operator_is_not_notified_twice() {
    // The loop's end ("Blocked", NudgesExhausted) went to the webhook from the same
    // plan: its escalation opens as notified.
    let mut status = running();
    blocked_by(&mut status, reasons::NUDGES_EXHAUSTED);
    let first = step(&mut status, &limits(true), at(10));
    assert_eq!(first.opened[0].kind, EscalationKind::NudgesExhausted);
    assert_eq!(first.opened[0].severity, Severity::Critical);
    assert!(first.notify.is_empty());
    assert_eq!(status.escalations[0].notified_time, Some(Time(at(10))));
    assert!(step(&mut status, &limits(true), at(5000)).notify.is_empty());
}

#[test]
fn a_warning_goes_to_the_webhook_only_when_unacknowledged_past_ack_within() {
    let mut status = running();
    blocked_exit(&mut status, 2);
    let opened = step(&mut status, &limits(true), at(0));
    assert!(opened.notify.is_empty());
    assert_eq!(opened.next_at, Some(at(900)));
    assert!(step(&mut status, &limits(true), at(899)).notify.is_empty());
    assert_eq!(step(&mut status, &limits(true), at(900)).notify.len(), 1);
    assert!(step(&mut status, &limits(true), at(5000)).notify.is_empty());

    let mut answered = running();
    blocked_exit(&mut answered, 2);
    step(&mut answered, &limits(true), at(0));
    ack(&mut answered, 1, 100);
    step(&mut answered, &limits(true), at(100));
    assert_eq!(answered.escalations[0].state, EscalationState::Acknowledged);
    assert_eq!(
        answered.escalations[0].acknowledged_by.as_deref(),
        Some("lead")
    );
    assert!(
        step(&mut answered, &limits(true), at(5000))
            .notify
            .is_empty()
    );
}

#[test]
fn without_a_webhook_nothing_is_marked_notified() {
    let mut status = running();
    blocked_by(&mut status, reasons::STALL_LIMIT);
    let outcome = step(&mut status, &limits(false), at(10));
    assert!(outcome.notify.is_empty());
    assert_eq!(status.escalations[0].notified_time, None);
}

#[test]
fn an_ack_covers_only_escalations_up_to_its_id_opened_before_it() {
    let mut status = running();
    status.escalation_requests = vec![request(1, Severity::Info, "a")];
    step(&mut status, &limits(false), at(10));
    ack(&mut status, 1, 20);
    status
        .escalation_requests
        .push(request(2, Severity::Info, "b"));
    step(&mut status, &limits(false), at(30));
    let states: Vec<EscalationState> = status.escalations.iter().map(|e| e.state).collect();
    assert_eq!(
        states,
        [EscalationState::Acknowledged, EscalationState::Open]
    );
    // An answer covers what is open when it is written, never what opens later.
    let answer = answer(&status, None, "lead", at(40)).unwrap();
    assert_eq!(answer.through, 2);
    assert_eq!(
        super::answer(&status, Some(7), "lead", at(40))
            .unwrap()
            .through,
        2
    );
    status.escalation_ack = Some(Box::new(answer));
    step(&mut status, &limits(false), at(40));
    assert!(super::answer(&status, None, "lead", at(50)).is_none());
}

#[test]
fn every_open_escalation_is_kept_and_settled_ones_are_bounded() {
    let mut status = running();
    for seq in 1..=12 {
        status.escalation_requests = vec![request(seq, Severity::Info, "x")];
        step(&mut status, &limits(false), at(seq));
    }
    ack(&mut status, 10, 100);
    step(&mut status, &limits(false), at(100));
    let kept: Vec<(i64, EscalationState)> =
        status.escalations.iter().map(|e| (e.id, e.state)).collect();
    assert_eq!(kept.len(), 10);
    assert_eq!(kept[0].0, 3, "the oldest settled ones go first");
    assert!(
        kept.iter()
            .filter(|(id, _)| *id > 10)
            .all(|(_, s)| *s == EscalationState::Open)
    );
}

#[test]
fn the_wake_names_and_counts_and_never_quotes_the_agent() {
    let mut status = running();
    blocked_exit(&mut status, 2);
    step(&mut status, &limits(false), at(0));
    let items: Vec<(&str, &Escalation)> = untold(&status)
        .into_iter()
        .map(|e| ("builder", e))
        .collect();
    let text = wake("team", &items, at(125));
    assert!(!text.contains("staging password"), "{text}");
    insta::assert_snapshot!(text);
    assert_eq!(tell_id("builder", 1), "escalation/builder/1");
}

fn guarded(status: &mut AgentStatus, blocked: i64) {
    waiting_since(status, 0);
    let activity = status.activity.as_mut().unwrap();
    activity.state = ActivityState::Working;
    activity.guards = Some(crate::kinds::guard::GuardCounts {
        blocked,
        last_reason: Some("overseer guard: a force push is not allowed for this agent".into()),
        last_time: Some(Time(at(0))),
    });
}

#[test]
fn guards_escalate_once_per_attempt_at_their_count_in_the_operators_words() {
    let mut status = running();
    // (blocked calls so far, escalations opened by this reconcile)
    for (blocked, opened) in [(1, 0), (2, 0), (3, 1), (4, 0), (9, 0)] {
        guarded(&mut status, blocked);
        let outcome = step(&mut status, &limits(false), at(blocked * 10));
        assert_eq!(outcome.opened.len(), opened, "at {blocked} blocked");
        if blocked == 3 {
            let escalation = &outcome.opened[0];
            assert_eq!(escalation.kind, EscalationKind::Guarded);
            assert_eq!(escalation.severity, Severity::Warning);
            let reason = escalation.reason.as_deref().unwrap();
            assert!(reason.contains("blocked 3 tool calls"), "{reason}");
            assert!(
                !reason.contains("force push"),
                "never the agent's call: {reason}"
            );
            // Answered, it stays answered while the count grows.
            ack(&mut status, escalation.id, blocked * 10);
        }
    }
    assert_eq!(
        status.escalations[0].state,
        EscalationState::Acknowledged,
        "not reopened or resolved"
    );
    // The next attempt counts afresh.
    status.attempt = Some(3);
    guarded(&mut status, 3);
    assert_eq!(step(&mut status, &limits(false), at(200)).opened.len(), 1);
    // Guards that never escalate.
    let mut quiet = running();
    guarded(&mut quiet, 50);
    let never = Limits {
        guarded_after: 0,
        ..limits(false)
    };
    assert!(step(&mut quiet, &never, at(10)).opened.is_empty());
}

fn using(
    status: &mut AgentStatus,
    memory_mib: i64,
    limit_mib: Option<i64>,
    growing_since: Option<i64>,
) {
    waiting_since(status, 0);
    let activity = status.activity.as_mut().unwrap();
    activity.state = ActivityState::Working;
    activity.resources = Some(ResourceUse {
        memory_bytes: memory_mib << 20,
        memory_limit_bytes: limit_mib.map(|l| l << 20),
        cpu_millicores: Some(250),
        memory_growing_since: growing_since.map(|s| Time(at(s))),
    });
}

#[test]
fn memory_near_its_limit_or_rising_too_long_escalates_and_resolves_when_it_stops() {
    let limits = Limits {
        memory_above: 90,
        memory_growth_after: Some(Duration::from_secs(3600)),
        ..limits(false)
    };
    // (memory MiB, limit MiB, rising since, now; open kinds after the step)
    type Row = (
        i64,
        Option<i64>,
        Option<i64>,
        i64,
        &'static [EscalationKind],
    );
    let rows: [Row; 6] = [
        (800, Some(1000), None, 10, &[]),
        (900, Some(1000), None, 20, &[EscalationKind::MemoryHigh]),
        (950, None, None, 30, &[]),
        (500, Some(1000), Some(0), 3_000, &[]),
        (
            600,
            Some(1000),
            Some(0),
            3_600,
            &[EscalationKind::MemoryGrowing],
        ),
        (550, Some(1000), None, 3_700, &[]),
    ];
    let mut status = running();
    for (memory, limit, since, now, open) in rows {
        using(&mut status, memory, limit, since);
        let outcome = step(&mut status, &limits, at(now));
        let open_now: Vec<EscalationKind> = status
            .escalations
            .iter()
            .filter(|e| e.state == EscalationState::Open)
            .map(|e| e.kind)
            .collect();
        assert_eq!(open_now, open, "at {now}s: {memory} MiB of {limit:?}");
        if now == 3_000 {
            assert_eq!(
                outcome.next_at,
                Some(at(3_600)),
                "looked at again when it is due"
            );
        }
    }
    let reasons: Vec<&str> = status
        .escalations
        .iter()
        .filter_map(|e| e.reason.as_deref())
        .collect();
    assert!(
        reasons.contains(&"its container uses 900 MiB of its 1000 MiB memory limit (loop.memoryEscalatesAbove 90%)"),
        "{reasons:?}"
    );
}
