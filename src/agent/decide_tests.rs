use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::delivery::claims::*;
use crate::delivery::inbox::*;
use crate::kinds::agent_pod::ImageWait;

fn base() -> CandidateInput {
    CandidateInput {
        loop_enabled: true,
        exit_recorded: false,
        activity: Some(ActivityState::Idle),
        in_state_for: Duration::from_secs(90),
        idle_after: Duration::from_secs(60),
        cooldown_over: true,
        nudges: 0,
        max_nudges: 20,
        overseer: OverseerState::Ready,
        auto_nudge_without_overseer: false,
        report_every: None,
        unreported_for: Duration::from_secs(30),
    }
}

/// `loop.reportEvery` of 10 minutes, last report `silent` seconds ago.
fn reporting(i: &mut CandidateInput, silent: u64) {
    i.report_every = Some(Duration::from_secs(600));
    i.unreported_for = Duration::from_secs(silent);
}

/// Every row of the premature-stop rule: (row, change from an idle-past-threshold
/// in-loop agent with a ready overseer, verdict).
#[test]
fn candidate_truth_table() {
    type Change = fn(&mut CandidateInput);
    let rows: &[(&str, Change, Verdict)] = &[
        (
            "idle past idleAfter, overseer ready",
            |_| {},
            Verdict::WakeOverseer,
        ),
        ("loop off", |i| i.loop_enabled = false, Verdict::NotInLoop),
        (
            "loop off, even when idle for long and nudges left",
            |i| {
                i.loop_enabled = false;
                i.in_state_for = Duration::from_secs(10_000);
            },
            Verdict::NotInLoop,
        ),
        (
            "exit recorded for this attempt",
            |i| i.exit_recorded = true,
            Verdict::LoopEnded,
        ),
        // A stale exit (earlier attempt) is not "recorded": `current_exit` filters it.
        (
            "stale exit: as if none",
            |i| i.exit_recorded = false,
            Verdict::WakeOverseer,
        ),
        (
            "exited past idleAfter",
            |i| i.activity = Some(ActivityState::Exited),
            Verdict::WakeOverseer,
        ),
        (
            "waiting at a prompt",
            |i| i.activity = Some(ActivityState::Waiting),
            Verdict::Waiting,
        ),
        (
            "waiting, no overseer, auto-nudge on",
            |i| {
                i.activity = Some(ActivityState::Waiting);
                i.overseer = OverseerState::Unset;
                i.auto_nudge_without_overseer = true;
            },
            Verdict::Waiting,
        ),
        (
            "working",
            |i| i.activity = Some(ActivityState::Working),
            Verdict::Busy,
        ),
        (
            "starting",
            |i| i.activity = Some(ActivityState::Starting),
            Verdict::Busy,
        ),
        ("nothing reported yet", |i| i.activity = None, Verdict::Busy),
        (
            "idle shorter than idleAfter",
            |i| i.in_state_for = Duration::from_secs(59),
            Verdict::NotIdleLongEnough,
        ),
        (
            "exited shorter than idleAfter",
            |i| {
                i.activity = Some(ActivityState::Exited);
                i.in_state_for = Duration::from_secs(1);
            },
            Verdict::NotIdleLongEnough,
        ),
        (
            "idle exactly idleAfter",
            |i| i.in_state_for = Duration::from_secs(60),
            Verdict::WakeOverseer,
        ),
        (
            "cooldown running",
            |i| i.cooldown_over = false,
            Verdict::CoolingDown,
        ),
        (
            "cooldown running, nudges exhausted",
            |i| {
                i.cooldown_over = false;
                i.nudges = 20;
            },
            Verdict::CoolingDown,
        ),
        ("nudges left: one", |i| i.nudges = 19, Verdict::WakeOverseer),
        (
            "nudges exhausted",
            |i| i.nudges = 20,
            Verdict::NudgesExhausted,
        ),
        (
            "nudges exhausted, overseer offline",
            |i| {
                i.nudges = 20;
                i.overseer = OverseerState::Offline;
            },
            Verdict::NudgesExhausted,
        ),
        (
            "overseer ready, auto-nudge on: the overseer decides",
            |i| i.auto_nudge_without_overseer = true,
            Verdict::WakeOverseer,
        ),
        (
            "overseer offline, auto-nudge on",
            |i| {
                i.overseer = OverseerState::Offline;
                i.auto_nudge_without_overseer = true;
            },
            Verdict::Nudge,
        ),
        (
            "overseer offline, auto-nudge off",
            |i| i.overseer = OverseerState::Offline,
            Verdict::ObserveOnly,
        ),
        (
            "overseer never agreed, auto-nudge off: nobody wakes it",
            |i| i.overseer = OverseerState::NotAccepted,
            Verdict::ObserveOnly,
        ),
        (
            "overseer never agreed, auto-nudge on: nudged as if none were set",
            |i| {
                i.overseer = OverseerState::NotAccepted;
                i.auto_nudge_without_overseer = true;
            },
            Verdict::Nudge,
        ),
        (
            "overseer waits on a person, auto-nudge on: the wake is held, no nudge",
            |i| {
                i.overseer = OverseerState::WaitingOnPerson;
                i.auto_nudge_without_overseer = true;
            },
            Verdict::OverseerWaiting,
        ),
        (
            "no overseer, auto-nudge on",
            |i| {
                i.overseer = OverseerState::Unset;
                i.auto_nudge_without_overseer = true;
            },
            Verdict::Nudge,
        ),
        (
            "no overseer, auto-nudge off",
            |i| i.overseer = OverseerState::Unset,
            Verdict::ObserveOnly,
        ),
        (
            "working, reports due every 10m, last 9m59s ago",
            |i| {
                i.activity = Some(ActivityState::Working);
                reporting(i, 599);
            },
            Verdict::Busy,
        ),
        (
            "working, no report for 10m: unresponsive",
            |i| {
                i.activity = Some(ActivityState::Working);
                reporting(i, 600);
            },
            Verdict::WakeOverseer,
        ),
        (
            "nothing reported at all for 10m",
            |i| {
                i.activity = None;
                reporting(i, 601);
            },
            Verdict::WakeOverseer,
        ),
        (
            "idle shorter than idleAfter but unresponsive",
            |i| {
                i.in_state_for = Duration::from_secs(5);
                reporting(i, 700);
            },
            Verdict::WakeOverseer,
        ),
        (
            "unresponsive but waiting at a prompt: left to a person",
            |i| {
                i.activity = Some(ActivityState::Waiting);
                reporting(i, 700);
            },
            Verdict::Waiting,
        ),
        (
            "unresponsive, cooldown running",
            |i| {
                i.activity = Some(ActivityState::Working);
                reporting(i, 700);
                i.cooldown_over = false;
            },
            Verdict::CoolingDown,
        ),
        (
            "unresponsive, no overseer, auto-nudge on",
            |i| {
                i.activity = Some(ActivityState::Working);
                reporting(i, 700);
                i.overseer = OverseerState::Unset;
                i.auto_nudge_without_overseer = true;
            },
            Verdict::Nudge,
        ),
        (
            "exited, no overseer, auto-nudge on",
            |i| {
                i.activity = Some(ActivityState::Exited);
                i.overseer = OverseerState::Unset;
                i.auto_nudge_without_overseer = true;
            },
            Verdict::Nudge,
        ),
    ];
    for (row, change, expected) in rows {
        let mut input = base();
        change(&mut input);
        assert_eq!(candidate(&input), *expected, "row: {row}");
    }
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn spec(loop_yaml: &str) -> AgentSpec {
    let mut spec: AgentSpec =
        serde_saphyr::from_str("runtime: {name: claude, image: example.com/claude:1}\nloop: {}\n")
            .unwrap();
    spec.loop_ = serde_saphyr::from_str(loop_yaml).unwrap();
    spec
}

fn running_pod(attempt: i64) -> AgentPod {
    AgentPod {
        name: pod_name("a", attempt),
        attempt,
        phase: PodPhase::Running,
        ready: true,
        image_wait: None,
    }
}

fn activity(state: ActivityState, since: i64, attempt: i64) -> Activity {
    Activity {
        state,
        since: Some(Time(at(since))),
        last_activity_time: Some(Time(at(since))),
        heartbeat_time: None,
        attempt: Some(attempt),
        exit_code: None,
        summary: None,
        progress_time: None,
        usage: None,
        guards: None,
        resources: None,
    }
}

fn running_status(activity: Option<Activity>) -> AgentStatus {
    let mut status = AgentStatus {
        attempt: Some(1),
        pod_name: Some(pod_name("a", 1)),
        start_time: Some(Time(at(0))),
        phase: Some(AgentPhase::Running),
        activity,
        ..Default::default()
    };
    conditions::set(
        &mut status.conditions,
        "Ready",
        true,
        "PodReady",
        "",
        None,
        &Time(at(0)),
    );
    status
}

fn run(
    spec: &AgentSpec,
    status: Option<&AgentStatus>,
    pods: &[AgentPod],
    overseer: OverseerState,
    now: i64,
) -> Plan {
    plan(&Input {
        name: "a",
        generation: Some(1),
        spec,
        status,
        pods,
        overseer,
        pod_retention: None,
        now: at(now),
    })
}

#[test]
fn how_a_candidate_stopped_names_the_setting_it_crossed() {
    // (row, change, stop, "for" seconds, limit seconds, setting)
    type Change = fn(&mut CandidateInput);
    let rows: &[(&str, Change, Stop, u64, u64, &str)] = &[
        ("idle", |_| {}, Stop::Idle, 90, 60, "idleAfter"),
        (
            "exited",
            |i| i.activity = Some(ActivityState::Exited),
            Stop::Exited,
            90,
            60,
            "idleAfter",
        ),
        (
            "idle and unresponsive: idle is what a person acts on",
            |i| reporting(i, 700),
            Stop::Idle,
            90,
            60,
            "idleAfter",
        ),
        (
            "working and unresponsive",
            |i| {
                i.activity = Some(ActivityState::Working);
                reporting(i, 700);
            },
            Stop::Unresponsive,
            700,
            600,
            "reportEvery",
        ),
    ];
    for (row, change, stop, stopped_for, limit, setting) in rows {
        let mut input = base();
        change(&mut input);
        assert_eq!(input.stop(), *stop, "{row}");
        assert_eq!(
            input.stopped_for(),
            (
                Duration::from_secs(*stopped_for),
                Duration::from_secs(*limit),
                *setting
            ),
            "{row}"
        );
    }
}

#[test]
fn a_working_agent_that_stops_reporting_progress_is_unresponsive() {
    let spec = spec("{enabled: true, reportEvery: 10m}");
    let mut status = running_status(Some(activity(ActivityState::Working, 0, 1)));
    // The clock starts when the pod became ready (at 0), then at each report.
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        300,
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(
        condition(&plan.status, "Unresponsive"),
        Some(("False", "ProgressReported"))
    );
    assert_eq!(
        plan.requeue_after,
        Some(Duration::from_secs(300)),
        "the deadline"
    );
    status.activity.as_mut().unwrap().progress_time = Some(Time(at(500)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        700,
    );
    assert!(
        plan.actions.is_empty(),
        "a report at 500 moves the deadline to 1100"
    );
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(400)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        1100,
    );
    assert_eq!(
        condition(&plan.status, "Unresponsive"),
        Some(("True", "NoProgressReport"))
    );
    assert_eq!(
        plan.actions,
        vec![
            Action::Event {
                warning: true,
                reason: "NoProgressReport",
                message:
                    "no progress report (`overseer loop progress`) within loop.reportEvery (600s)"
                        .into(),
            },
            Action::Deliver(Delivery::Wake),
        ]
    );
    // Without reportEvery the condition is cleared, not left behind.
    let mut unrequired = status.clone();
    unrequired.conditions = plan.status.conditions.clone();
    let plan = run(
        &super::tests::spec("{enabled: true}"),
        Some(&unrequired),
        &[running_pod(1)],
        OverseerState::Ready,
        1100,
    );
    assert_eq!(
        condition(&plan.status, "Unresponsive"),
        Some(("False", "ReportNotRequired"))
    );
}

fn condition<'a>(status: &'a AgentStatus, type_: &str) -> Option<(&'a str, &'a str)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.as_str(), c.reason.as_str()))
}

#[test]
fn a_new_agent_gets_its_first_pod() {
    let plan = run(&spec("{enabled: true}"), None, &[], OverseerState::Unset, 0);
    assert_eq!(plan.actions, vec![Action::CreatePod { attempt: 1 }]);
    assert_eq!(plan.status.attempt, Some(1));
    assert_eq!(plan.status.pod_name.as_deref(), Some("a-1"));
    assert_eq!(plan.status.phase, Some(AgentPhase::Pending));
    assert_eq!(plan.status.start_time, Some(Time(at(0))));
    assert_eq!(
        plan.status.runtime,
        Some(crate::api::RuntimeName::Claude),
        "the pod's runtime"
    );
}

#[test]
fn a_pod_waiting_on_its_image_is_image_not_pulled_once_the_patience_is_over() {
    let spec = spec("{enabled: true}");
    let status = running_status(None);
    let waiting = |reason: &str| AgentPod {
        phase: PodPhase::Pending,
        ready: false,
        image_wait: Some(ImageWait {
            reason: reason.into(),
            since: at(0),
        }),
        ..running_pod(1)
    };
    let patience = IMAGE_PATIENCE.as_secs() as i64;
    // (row, pod, now, Ready reason, heartbeat at most)
    let rows = [
        (
            "not yet pulled",
            waiting("ErrImagePull"),
            60,
            "PodNotReady",
            Some(patience - 60),
        ),
        (
            "patience over",
            waiting("ImagePullBackOff"),
            patience,
            "ImageNotPulled",
            None,
        ),
        (
            "bad name",
            waiting("InvalidImageName"),
            patience + 600,
            "ImageNotPulled",
            None,
        ),
        (
            "pending for another reason",
            AgentPod {
                phase: PodPhase::Pending,
                ready: false,
                ..running_pod(1)
            },
            patience + 600,
            "PodNotReady",
            None,
        ),
    ];
    for (row, pod, now, reason, heartbeat) in rows {
        let plan = run(&spec, Some(&status), &[pod], OverseerState::Unset, now);
        assert_eq!(plan.status.phase, Some(AgentPhase::Pending), "{row}");
        assert_eq!(
            condition(&plan.status, "Ready"),
            Some(("False", reason)),
            "{row}"
        );
        if let Some(heartbeat) = heartbeat {
            let requeue = plan
                .requeue_after
                .expect("looks again when the patience ends");
            assert!(requeue.as_secs() as i64 <= heartbeat, "{row}: {requeue:?}");
        }
        assert!(
            plan.actions.is_empty(),
            "{row}: nothing replaced: {:?}",
            plan.actions
        );
    }
    let plan = run(
        &spec,
        Some(&status),
        &[waiting("ImagePullBackOff")],
        OverseerState::Unset,
        patience + 5,
    );
    let ready = plan
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert!(
        ready
            .message
            .contains("waited 185s for its image (ImagePullBackOff)"),
        "{}",
        ready.message
    );
}

#[test]
fn an_idle_agent_past_its_threshold_wakes_its_ready_overseer() {
    let spec = spec("{enabled: true}");
    let status = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        61,
    );
    assert_eq!(plan.actions, vec![Action::Deliver(Delivery::Wake)]);
    // Nothing is recorded before the delivery is confirmed.
    assert_eq!(plan.status.loop_.as_ref().map(|l| l.nudges), Some(0));
}

#[test]
fn schema_valid_giant_durations_and_forged_counters_do_not_panic() {
    // Reproduced on a cluster: `idleAfter: 99999999999999999999h` made the operator
    // panic (and restart into the same agent).
    let spec = spec(
        "{enabled: true, idleAfter: 99999999999999999999h, cooldown: 99999999999h, stallAfter: 99999999999h, sessionTimeout: 99999999999h}",
    );
    let mut status = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        61,
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    // Counters and times an agent can forge in its own status.
    status.attempt = Some(i64::MAX);
    status.start_time = Some(Time(Timestamp::MAX));
    let mut forged = activity(ActivityState::Idle, 0, i64::MAX);
    forged.since = Some(Time(Timestamp::MAX));
    status.activity = Some(forged);
    let plan = run(
        &spec,
        Some(&status),
        &[AgentPod {
            phase: PodPhase::Ended,
            ..running_pod(i64::MAX)
        }],
        OverseerState::Ready,
        61,
    );
    assert!(plan.status.phase.is_some());
}

#[test]
fn the_heartbeat_fires_when_idle_crosses_idle_after_not_before_interval() {
    let spec = spec("{enabled: true, interval: 15s, idleAfter: 60s}");
    let status = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        10,
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(50)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        55,
    );
    assert_eq!(
        plan.requeue_after,
        Some(Duration::from_secs(15)),
        "never more often than interval"
    );
    let off = self::spec("{enabled: true, interval: 'off'}");
    let plan = run(
        &off,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        10,
    );
    assert_eq!(plan.requeue_after, None, "interval off: only events");
}

#[test]
fn the_cooldown_counts_from_the_last_confirmed_delivery() {
    let spec = spec("{enabled: true, cooldown: 2m}");
    let mut status = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    status.loop_ = Some(record_delivery(&status, Delivery::Wake, "idle", at(100)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        150,
    );
    assert!(plan.actions.is_empty());
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(70)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        220,
    );
    assert_eq!(plan.actions, vec![Action::Deliver(Delivery::Wake)]);
    let recorded = status.loop_.unwrap();
    assert_eq!((recorded.nudges, recorded.wakes), (1, 1));
}

#[test]
fn observe_only_sets_stopped_early_with_one_event() {
    let spec = spec("{enabled: true}");
    let status = running_status(Some(activity(ActivityState::Exited, 0, 1)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Offline,
        61,
    );
    assert!(conditions::is_true(&plan.status.conditions, "StoppedEarly"));
    assert!(matches!(
        plan.actions.as_slice(),
        [Action::Event {
            reason: "StoppedEarly",
            warning: true,
            ..
        }]
    ));
    let again = run(
        &spec,
        Some(&plan.status),
        &[running_pod(1)],
        OverseerState::Offline,
        75,
    );
    assert!(
        again.actions.is_empty(),
        "one event per stop: {:?}",
        again.actions
    );
}

#[test]
fn exhausted_nudges_block_the_agent() {
    let spec = spec("{enabled: true, maxNudges: 2, autoNudgeWithoutOverseer: true}");
    let mut status = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    status.loop_ = Some(LoopStatus {
        nudges: 2,
        last_nudge_time: Some(Time(at(-500))),
        ..Default::default()
    });
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Unset,
        100,
    );
    assert_eq!(plan.status.phase, Some(AgentPhase::Blocked));
    assert!(matches!(
        plan.actions.as_slice(),
        [
            Action::Event {
                reason: "NudgesExhausted",
                warning: true,
                ..
            },
            // Nothing more will happen without someone: its overseer hears (critical).
            Action::EscalationOpened(_)
        ]
    ));
    assert_eq!(
        plan.status.escalations[0].kind,
        EscalationKind::NudgesExhausted
    );
    assert!(!conditions::is_true(&plan.status.conditions, "InLoop"));
}

#[test]
fn a_current_exit_ends_the_loop_and_a_stale_one_is_ignored() {
    let spec = spec("{enabled: true, autoNudgeWithoutOverseer: true}");
    let mut status = running_status(Some(activity(ActivityState::Idle, 0, 2)));
    status.attempt = Some(2);
    status.exit = Some(Box::new(AgentExit {
        outcome: ExitOutcome::Done,
        reason: Some("shipped".into()),
        time: None,
        attempt: 1,
    }));
    let stale = run(
        &spec,
        Some(&status),
        &[running_pod(2)],
        OverseerState::Unset,
        100,
    );
    assert_eq!(stale.status.phase, Some(AgentPhase::Running));
    assert_eq!(stale.actions, vec![Action::Deliver(Delivery::Nudge)]);

    status.exit.as_mut().unwrap().attempt = 2;
    let done = run(
        &spec,
        Some(&status),
        &[running_pod(2)],
        OverseerState::Unset,
        100,
    );
    assert_eq!(done.status.phase, Some(AgentPhase::Done));
    assert!(!done.status.loop_.unwrap().active);
    assert!(matches!(
        done.actions.as_slice(),
        [Action::Event { reason: "Done", .. }]
    ));
}

#[test]
fn a_release_ends_the_loop_and_taking_an_exit_back_resumes_it() {
    let spec = spec("{enabled: true, autoNudgeWithoutOverseer: true}");
    let mut status = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    status.exit = Some(Box::new(AgentExit {
        outcome: ExitOutcome::Released,
        reason: Some("merged by hand".into()),
        time: None,
        attempt: 1,
    }));
    let released = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        100,
    );
    assert_eq!(released.status.phase, Some(AgentPhase::Done));
    let in_loop = released
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "InLoop")
        .unwrap();
    assert_eq!(
        (in_loop.status.as_str(), in_loop.reason.as_str()),
        ("False", "Released")
    );
    assert!(matches!(
        released.actions.as_slice(),
        [Action::Event { reason: "Released", message, .. }] if message.contains("merged by hand")
    ));
    // Released again on the next look: no nudge, no second Event.
    let again = run(
        &spec,
        Some(&released.status),
        &[running_pod(1)],
        OverseerState::Ready,
        500,
    );
    assert_eq!(again.actions, vec![]);

    // `overseer loop add` removes the exit: the loop runs again.
    let mut readded = released.status.clone();
    readded.exit = None;
    let resumed = run(
        &spec,
        Some(&readded),
        &[running_pod(1)],
        OverseerState::Ready,
        500,
    );
    assert_eq!(resumed.status.phase, Some(AgentPhase::Running));
    assert_eq!(resumed.actions, vec![Action::Deliver(Delivery::Wake)]);
}

#[test]
fn blocked_by_the_operator_stays_blocked_without_an_exit() {
    let spec = spec("{enabled: true, maxNudges: 1, autoNudgeWithoutOverseer: true}");
    let mut status = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    status.loop_ = Some(LoopStatus {
        nudges: 1,
        ..Default::default()
    });
    let blocked = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Unset,
        100,
    );
    assert_eq!(blocked.status.phase, Some(AgentPhase::Blocked));
    let later = run(
        &spec,
        Some(&blocked.status),
        &[running_pod(1)],
        OverseerState::Unset,
        900,
    );
    assert_eq!(later.status.phase, Some(AgentPhase::Blocked));
    assert_eq!(later.actions, vec![]);
}

fn message(seq: i64, sent: i64) -> InboxMessage {
    InboxMessage {
        seq,
        from: "lead".into(),
        text: format!("continue #{seq}"),
        sent_time: Time(at(sent)),
    }
}

/// The inbox, one row per case, for an agent at attempt 2: (case, inbox, handled,
/// in flight (seq, the attempt it was claimed for), pod ready, now, step).
#[test]
fn inbox_steps() {
    type Row = (
        &'static str,
        Vec<InboxMessage>,
        i64,
        Option<(i64, Option<i64>)>,
        bool,
        i64,
        SendStep,
    );
    let rows: Vec<Row> = vec![
        ("empty", vec![], 0, None, true, 10, SendStep::Idle),
        (
            "all handled",
            vec![message(1, 0), message(2, 0)],
            2,
            None,
            true,
            10,
            SendStep::Idle,
        ),
        (
            "lowest unhandled seq first, whatever the list order",
            vec![message(3, 0), message(2, 0), message(1, 0)],
            1,
            None,
            true,
            10,
            SendStep::Deliver(message(2, 0)),
        ),
        (
            "a claim left in flight to the pod still ready is delivered again under its id",
            vec![message(2, 0)],
            2,
            Some((2, Some(2))),
            true,
            10,
            SendStep::Redeliver(message(2, 0)),
        ),
        (
            "a claim for an earlier attempt's pod is abandoned, never resent",
            vec![message(2, 0)],
            2,
            Some((2, Some(1))),
            true,
            10,
            SendStep::Abandon { seq: 2 },
        ),
        (
            "a claim whose pod is not ready is abandoned (a new shim would type it again)",
            vec![message(2, 0)],
            2,
            Some((2, Some(2))),
            false,
            10,
            SendStep::Abandon { seq: 2 },
        ),
        (
            "a claim that names no attempt (an older operator's) is abandoned",
            vec![message(2, 0)],
            2,
            Some((2, None)),
            true,
            10,
            SendStep::Abandon { seq: 2 },
        ),
        (
            "a claimed message a sender dropped from the inbox is abandoned",
            vec![message(3, 0)],
            2,
            Some((2, Some(2))),
            true,
            10,
            SendStep::Abandon { seq: 2 },
        ),
        (
            "no ready pod: wait until the message expires",
            vec![message(1, 0)],
            0,
            None,
            false,
            100,
            SendStep::Wait {
                retry_after: Duration::from_secs(200),
            },
        ),
        (
            "no ready pod for the expiry: fails",
            vec![message(1, 0)],
            0,
            None,
            false,
            300,
            SendStep::Expire(message(1, 0)),
        ),
    ];
    for (case, inbox, handled, in_flight, ready, now, expected) in rows {
        let status = AgentStatus {
            attempt: Some(2),
            inbox,
            sends: Some(SendStatus {
                handled_seq: handled,
                in_flight_seq: in_flight.map(|(seq, _)| seq),
                in_flight_attempt: in_flight.and_then(|(_, attempt)| attempt),
                results: vec![],
            }),
            ..Default::default()
        };
        assert_eq!(
            next_send(&status, ready, Duration::from_secs(300), at(now)),
            expected,
            "{case}"
        );
    }
}

#[test]
fn sends_are_held_while_the_agent_waits_on_a_person() {
    let mut status = AgentStatus {
        attempt: Some(2),
        inbox: vec![message(1, 0)],
        activity: Some(activity(ActivityState::Waiting, 0, 2)),
        ..Default::default()
    };
    let expiry = Duration::from_secs(300);
    assert_eq!(
        next_send(&status, true, expiry, at(5)),
        SendStep::Wait {
            retry_after: Duration::from_secs(295)
        },
        "held, not typed over the question"
    );
    assert_eq!(
        next_send(&status, true, expiry, at(300)),
        SendStep::Expire(message(1, 0)),
        "a question nobody answers for the expiry fails the send"
    );
    status.sends = Some(claim_send(&status, 1));
    assert_eq!(
        next_send(&status, true, expiry, at(5)),
        SendStep::Wait {
            retry_after: expiry
        },
        "a claim is held too, not redelivered"
    );
    status.activity = Some(activity(ActivityState::Idle, 0, 2));
    assert_eq!(
        next_send(&status, true, expiry, at(5)),
        SendStep::Redeliver(message(1, 0)),
        "once the question is answered"
    );
}

#[test]
fn a_send_is_claimed_before_delivery_and_settled_after() {
    let mut status = AgentStatus {
        attempt: Some(3),
        inbox: vec![message(1, 0), message(2, 0)],
        ..Default::default()
    };
    status.sends = Some(claim_send(&status, 1));
    assert_eq!(status.sends.as_ref().unwrap().in_flight_attempt, Some(3));
    assert_eq!(
        next_send(&status, true, Duration::from_secs(300), at(5)),
        SendStep::Redeliver(message(1, 0))
    );
    status.attempt = Some(4);
    assert_eq!(
        next_send(&status, true, Duration::from_secs(300), at(5)),
        SendStep::Abandon { seq: 1 }
    );
    assert!(claim_held_elsewhere(&status, Some(1)), "not settled yet");
    status.sends = Some(settle_send(&status, 1, "lead", Ok(()), at(5)));
    assert!(!claim_held_elsewhere(&status, Some(1)), "settled");
    assert!(!claim_held_elsewhere(&status, None), "nothing settled yet");
    let written = serde_json::to_value(status.sends.as_ref().unwrap()).unwrap();
    assert!(
        written["inFlightSeq"].is_null() && written.get("inFlightSeq").is_some(),
        "the settled claim is written as null, so an apply clears it: {written}"
    );
    assert_eq!(
        next_send(&status, true, Duration::from_secs(300), at(5)),
        SendStep::Deliver(message(2, 0))
    );
    for seq in 2..=14 {
        status.sends = Some(settle_send(
            &status,
            seq,
            "lead",
            Err("pod gone".into()),
            at(6),
        ));
    }
    let sends = status.sends.unwrap();
    assert_eq!(sends.handled_seq, 14);
    assert_eq!(sends.results.len(), 10, "bounded");
    assert_eq!(sends.results.first().unwrap().seq, 5);
    assert_eq!(sends.results.last().unwrap().outcome, SendOutcome::Failed);
}

#[test]
fn excerpts_are_one_clean_line() {
    assert_eq!(
        excerpt("\n  continue: fix the tests\nthen more"),
        "continue: fix the tests"
    );
    assert_eq!(excerpt("bell\u{7} here"), "bell here");
    let long = excerpt(&"x".repeat(300));
    assert_eq!(long.chars().count(), 100);
    assert!(long.ends_with('…'));
}

#[test]
fn a_waiting_agent_is_never_nudged() {
    let spec = spec("{enabled: true, autoNudgeWithoutOverseer: true}");
    let status = running_status(Some(activity(ActivityState::Waiting, 0, 1)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        10_000,
    );
    // Never nudged: its prompt is a person's, and past `waitingEscalatesAfter` the
    // overseer hears of it as an escalation instead.
    assert!(
        matches!(plan.actions.as_slice(), [Action::EscalationOpened(_)]),
        "{:?}",
        plan.actions
    );
    assert_eq!(plan.status.escalations[0].kind, EscalationKind::Waiting);
}

#[test]
fn activity_of_an_earlier_attempt_is_ignored() {
    let spec = spec("{enabled: true, autoNudgeWithoutOverseer: true}");
    let mut status = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    status.attempt = Some(2);
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(2)],
        OverseerState::Unset,
        10_000,
    );
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
}

#[test]
fn a_stall_replaces_the_pod_up_to_the_limit_then_blocks() {
    let spec = spec("{enabled: true, stallAfter: 30m}");
    let status = running_status(Some(activity(ActivityState::Working, 0, 1)));
    let early = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        600,
    );
    assert!(early.actions.is_empty());
    assert_eq!(early.requeue_after, Some(Duration::from_secs(1200)));

    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Ready,
        1800,
    );
    assert!(conditions::is_true(&plan.status.conditions, "Inactive"));
    assert_eq!(plan.status.loop_.as_ref().unwrap().stalls, 1);
    assert!(
        plan.actions
            .contains(&Action::DeletePod { name: "a-1".into() })
    );
    // The pod is gone: after the backoff the next attempt starts.
    let wait = run(&spec, Some(&plan.status), &[], OverseerState::Ready, 1801);
    assert!(wait.actions.is_empty(), "{:?}", wait.actions);
    let next = run(&spec, Some(&plan.status), &[], OverseerState::Ready, 1803);
    assert_eq!(next.actions, vec![Action::CreatePod { attempt: 2 }]);

    let mut limit = status.clone();
    limit.loop_ = Some(LoopStatus {
        stalls: STALL_LIMIT,
        ..Default::default()
    });
    let blocked = run(
        &spec,
        Some(&limit),
        &[running_pod(1)],
        OverseerState::Ready,
        1800,
    );
    assert_eq!(blocked.status.phase, Some(AgentPhase::Blocked));
    assert!(matches!(
        blocked.actions.as_slice(),
        [
            Action::Event {
                reason: "StallLimit",
                ..
            },
            Action::EscalationOpened(_)
        ]
    ));
}

#[test]
fn a_lost_pod_is_replaced_with_the_next_attempt_after_a_backoff() {
    let spec = spec("{enabled: false}");
    let status = running_status(None);
    let ended = AgentPod {
        phase: PodPhase::Ended,
        ..running_pod(1)
    };
    let plan = run(&spec, Some(&status), &[ended], OverseerState::Unset, 10);
    assert_eq!(plan.actions[0], Action::DeletePod { name: "a-1".into() });
    assert!(matches!(
        plan.actions[1],
        Action::Event {
            reason: "PodLost",
            ..
        }
    ));
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(2)));
    let gone = run(&spec, Some(&plan.status), &[], OverseerState::Unset, 11);
    assert!(gone.actions.is_empty());
    let replaced = run(&spec, Some(&plan.status), &[], OverseerState::Unset, 12);
    assert_eq!(replaced.actions, vec![Action::CreatePod { attempt: 2 }]);
    assert_eq!(replaced.status.pod_name.as_deref(), Some("a-2"));
}

#[test]
fn suspend_stops_the_pod_and_resume_starts_the_next_attempt_at_once() {
    let mut spec = spec("{enabled: true}");
    spec.suspend = true;
    let status = running_status(None);
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Unset,
        10,
    );
    assert_eq!(plan.status.phase, Some(AgentPhase::Suspended));
    assert_eq!(plan.actions[0], Action::DeletePod { name: "a-1".into() });
    spec.suspend = false;
    let resumed = run(&spec, Some(&plan.status), &[], OverseerState::Unset, 11);
    assert_eq!(resumed.actions, vec![Action::CreatePod { attempt: 2 }]);
}

#[test]
fn the_session_timeout_stops_the_agent_and_keeps_its_state() {
    let spec = spec("{enabled: true, sessionTimeout: 1h}");
    let status = running_status(Some(activity(ActivityState::Working, 3500, 1)));
    let before = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Unset,
        3000,
    );
    assert_eq!(before.requeue_after, Some(Duration::from_secs(600)));
    let plan = run(
        &spec,
        Some(&status),
        &[running_pod(1)],
        OverseerState::Unset,
        3600,
    );
    assert_eq!(plan.status.phase, Some(AgentPhase::Blocked));
    assert_eq!(plan.actions[0], Action::DeletePod { name: "a-1".into() });
    assert_eq!(plan.status.activity, status.activity, "state kept");
}

#[test]
fn pod_names_stay_within_the_hostname_limit() {
    assert_eq!(pod_name("builder", 3), "builder-3");
    let long = "x".repeat(80);
    let name = pod_name(&long, 12);
    assert!(name.len() <= 63, "{name}");
    assert_ne!(name, pod_name(&"x".repeat(81), 12));
}

#[test]
fn a_persons_loop_switch_wins_over_the_spec() {
    let rows = [
        (None, true, true),
        (None, false, false),
        (Some("on"), false, true),
        (Some("off"), true, false),
        (Some("maybe"), true, true),
        (Some("maybe"), false, false),
    ];
    for (annotation, spec, want) in rows {
        assert_eq!(
            loop_enabled(annotation, spec),
            want,
            "annotation {annotation:?}, spec {spec}"
        );
    }
}

#[test]
fn a_pod_created_before_a_crash_that_lost_its_record_is_adopted() {
    // Found by tests/cluster/crash.rs: with the status written before the pod, a crash
    // in between left a recorded attempt without a pod, which the next operator took
    // for a lost pod (attempt 2 after a backoff). The pod is now created first; a crash
    // before the record leaves a pod of a later attempt than recorded, which is ours.
    let spec = spec("{enabled: true}");
    let first = run(&spec, None, &[], OverseerState::Unset, 0);
    assert_eq!(first.actions, vec![Action::CreatePod { attempt: 1 }]);
    let adopted = run(&spec, None, &[running_pod(1)], OverseerState::Unset, 1);
    assert!(
        !adopted
            .actions
            .iter()
            .any(|a| matches!(a, Action::CreatePod { .. } | Action::DeletePod { .. })),
        "{:?}",
        adopted.actions
    );
    assert_eq!(adopted.status.attempt, Some(1));
    assert_eq!(adopted.status.pod_name.as_deref(), Some("a-1"));
}

#[test]
fn each_delivery_about_an_agent_gets_an_id_of_its_own() {
    let mut status = AgentStatus::default();
    let first = delivery_id("b", &status, Delivery::Nudge);
    assert_eq!(first, "nudge/b/1");
    // A retry before the delivery is recorded names the same delivery.
    assert_eq!(delivery_id("b", &status, Delivery::Nudge), first);
    status.loop_ = Some(record_delivery(&status, Delivery::Nudge, "idle", at(10)));
    assert_eq!(delivery_id("b", &status, Delivery::Wake), "wake/b/2");
    status.loop_ = Some(record_delivery(&status, Delivery::Wake, "idle", at(20)));
    assert_eq!(delivery_id("b", &status, Delivery::Nudge), "nudge/b/3");
    assert_eq!(
        delivery_id("other", &status, Delivery::Nudge),
        "nudge/other/3"
    );
    // A forged count at its maximum still gives an id (and the nudges are exhausted).
    status.loop_.as_mut().unwrap().nudges = i32::MAX;
    assert_eq!(
        delivery_id("b", &status, Delivery::Nudge),
        format!("nudge/b/{}", i64::from(i32::MAX) + 1)
    );
    assert_eq!(send_id(7), "send/7");
}

#[test]
fn a_claimed_delivery_is_counted_once_however_often_it_is_settled() {
    let wake = |id: &str| InFlightDelivery {
        kind: Delivery::Wake,
        id: id.into(),
        target: "lead".into(),
        reason: "idle".into(),
    };
    let fresh = AgentStatus::default();
    let mut claimed = fresh.clone();
    claimed.loop_ = Some(claim_delivery(&fresh, wake("wake/b/1")));
    // The wakes written, or None when nothing is written; a written status never keeps
    // the claim it settled.
    let settle = |status: &AgentStatus, id: &str, delivered: bool| {
        let settled = settle_delivery("b", status, &wake(id), delivered, at(10))?;
        assert_eq!(settled.in_flight, None);
        Some(settled.wakes)
    };
    let cases = [
        (
            "claimed and delivered: counted",
            &claimed,
            "wake/b/1",
            true,
            Some(1),
        ),
        (
            "claimed, not delivered: claim released only",
            &claimed,
            "wake/b/1",
            false,
            Some(0),
        ),
        (
            "delivered, its claim overwritten: counted",
            &fresh,
            "wake/b/1",
            true,
            Some(1),
        ),
        (
            "failed and never claimed: nothing to write",
            &fresh,
            "wake/b/1",
            false,
            None,
        ),
        (
            "a stale id: nothing to write",
            &claimed,
            "wake/b/0",
            true,
            None,
        ),
    ];
    for (case, status, id, delivered, want) in cases {
        assert_eq!(settle(status, id, delivered), want, "{case}");
    }
    // Settling the same delivery again (the shim asked after a crash) counts nothing.
    let mut counted = claimed.clone();
    counted.loop_ = settle_delivery("b", &claimed, &wake("wake/b/1"), true, at(10));
    assert_eq!(settle(&counted, "wake/b/1", true), None);
    assert_eq!(counted.loop_.unwrap().last_reason.as_deref(), Some("idle"));
}

#[test]
fn each_end_of_the_loop_is_told_to_the_webhook_once() {
    let mut told = spec("{enabled: true, maxNudges: 1}");
    told.notify = Some(crate::api::Notify {
        url_secret_ref: crate::api::SecretKeyRef {
            name: "hook".into(),
            key: "url".into(),
        },
    });
    let exit = |outcome| AgentExit {
        outcome,
        reason: Some("their words".into()),
        time: Some(Time(at(5))),
        attempt: 1,
    };
    let idle = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    let mut exhausted = idle.clone();
    exhausted.loop_ = Some(LoopStatus {
        nudges: 1,
        ..Default::default()
    });
    // (case, status, the Notify action expected: event and reason)
    type Told = Option<(&'static str, &'static str)>;
    let rows: Vec<(&str, AgentStatus, Told)> = vec![
        (
            "done",
            AgentStatus {
                exit: Some(Box::new(exit(ExitOutcome::Done))),
                ..idle.clone()
            },
            Some(("Done", "Done")),
        ),
        (
            "blocked by the agent",
            AgentStatus {
                exit: Some(Box::new(exit(ExitOutcome::Blocked))),
                ..idle.clone()
            },
            Some(("Blocked", "Blocked")),
        ),
        (
            "released by its overseer",
            AgentStatus {
                exit: Some(Box::new(exit(ExitOutcome::Released))),
                ..idle.clone()
            },
            Some(("Released", "Released")),
        ),
        (
            "blocked by the operator",
            exhausted,
            Some(("Blocked", "NudgesExhausted")),
        ),
        ("still working", idle, None),
    ];
    for (case, status, expected) in rows {
        let plan = run(
            &told,
            Some(&status),
            &[running_pod(1)],
            OverseerState::Ready,
            120,
        );
        let notified: Vec<(&str, &str)> = plan
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::Notify { event, reason } => Some((*event, *reason)),
                _ => None,
            })
            .collect();
        assert_eq!(notified, expected.into_iter().collect::<Vec<_>>(), "{case}");
        // Planned again on the status it wrote: not told twice.
        let again = run(
            &told,
            Some(&plan.status),
            &[running_pod(1)],
            OverseerState::Ready,
            121,
        );
        assert!(
            !again
                .actions
                .iter()
                .any(|a| matches!(a, Action::Notify { .. })),
            "{case}: told once"
        );
        let untold = run(
            &spec("{enabled: true, maxNudges: 1}"),
            Some(&status),
            &[running_pod(1)],
            OverseerState::Ready,
            120,
        );
        assert!(
            !untold
                .actions
                .iter()
                .any(|a| matches!(a, Action::Notify { .. })),
            "{case}: no webhook, no notify"
        );
    }
}

#[test]
fn an_ended_agents_pod_goes_after_the_retention() {
    let spec = spec("{enabled: true}");
    let mut status = running_status(Some(activity(ActivityState::Idle, 0, 1)));
    status.exit = Some(Box::new(AgentExit {
        outcome: ExitOutcome::Done,
        reason: None,
        time: Some(Time(at(10))),
        attempt: 1,
    }));
    let pods = [running_pod(1)];
    let plan_at = |status: &AgentStatus, retention: Option<u64>, now: i64| {
        plan(&Input {
            name: "a",
            generation: Some(1),
            spec: &spec,
            status: Some(status),
            pods: &pods,
            overseer: OverseerState::Unset,
            pod_retention: retention.map(Duration::from_secs),
            now: at(now),
        })
    };
    // The loop ends at 20; it is kept an hour.
    let ended = plan_at(&status, Some(3600), 20).status;
    assert_eq!(ended.phase, Some(AgentPhase::Done));
    let kept = plan_at(&ended, Some(3600), 1800);
    assert!(kept.actions.is_empty(), "{:?}", kept.actions);
    assert_eq!(
        kept.requeue_after,
        Some(Duration::from_secs(1820)),
        "back when it expires"
    );
    let expired = plan_at(&ended, Some(3600), 3620);
    assert_eq!(
        expired.actions,
        vec![Action::DeletePod { name: "a-1".into() }]
    );
    assert_eq!(
        expired.status.phase,
        Some(AgentPhase::Done),
        "the status keeps the outcome"
    );
    assert!(
        plan_at(&ended, None, 99_999).actions.is_empty(),
        "retention off"
    );
}
