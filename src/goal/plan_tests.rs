//! Table tests and snapshots of every Goal transition.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::dependencies::GoalSummary;
use super::message::{StepOutcome, outcome_message};
use super::plan::*;
use crate::kinds::goal::*;

const NOW: i64 = 1_800_000_000;

fn now() -> Timestamp {
    Timestamp::from_second(NOW).unwrap()
}

fn ago(seconds: i64) -> Time {
    Time(Timestamp::from_second(NOW - seconds).unwrap())
}

fn spec(yaml: &str) -> GoalSpec {
    serde_saphyr::from_str(yaml).unwrap()
}

const THREE_STEPS: &str = r#"
defaults: {runtime: {name: codex, mode: headless, image: "example.com/codex:1"}}
steps:
  - {name: survey, action: Investigate the billing module}
  - {name: implement, action: Implement proration}
  - {name: verify, action: Run tests and verify}
"#;

struct Case<'a> {
    spec: GoalSpec,
    status: Option<GoalStatus>,
    pods: Vec<StepPod>,
    goals: Vec<GoalSummary>,
    resume: Option<&'a str>,
    name: &'a str,
    swarm: Option<crate::swarm::SwarmSpec>,
    notified: Option<usize>,
    retention: Option<Duration>,
}

impl<'a> Case<'a> {
    fn new(spec_yaml: &str) -> Case<'a> {
        Case {
            spec: spec(spec_yaml),
            status: None,
            pods: vec![],
            goals: vec![],
            resume: None,
            name: "ship",
            swarm: None,
            notified: None,
            retention: None,
        }
    }
    fn status(mut self, status: GoalStatus) -> Self {
        self.status = Some(status);
        self
    }
    /// A pod of the run at position `step` (a step, or an item of a `forEach` step).
    fn pod(self, step: usize, attempt: i32, phase: PodPhase) -> Self {
        let step_name = graph::runs(&self.spec).unwrap()[step].name.clone();
        self.pod_of(step, &step_name, attempt, phase)
    }
    /// A pod made at position `step` for the step then named `step_name`.
    fn pod_of(mut self, step: usize, step_name: &str, attempt: i32, phase: PodPhase) -> Self {
        self.pods.push(StepPod {
            name: pod_name("ship", step, attempt),
            step,
            step_name: step_name.into(),
            attempt,
            phase,
            finished_at: matches!(phase, PodPhase::Succeeded | PodPhase::Failed).then(now),
            message: (phase == PodPhase::Succeeded).then(|| format!("result of step {step}")),
            exit_code: match phase {
                PodPhase::Succeeded => Some(0),
                PodPhase::Failed => Some(2),
                _ => None,
            },
            reason: (phase == PodPhase::Failed).then(|| "Error".into()),
        });
        self
    }
    fn plan(&self) -> Plan {
        plan(&Input {
            name: self.name,
            generation: Some(1),
            resume: self.resume,
            spec: &self.spec,
            status: self.status.as_ref(),
            pods: &self.pods,
            goals: &self.goals,
            swarm: self.swarm.as_ref(),
            notified: self.notified,
            pod_retention: self.retention,
            now: now(),
        })
    }
}

/// The status after running `case` once more from the plan's own status.
fn then<'a>(case: Case<'a>, plan: &Plan) -> Case<'a> {
    case.status(plan.status.clone())
}

fn creates(plan: &Plan) -> Vec<(usize, i32)> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::CreatePod(run) => Some((run.step, run.attempt)),
            _ => None,
        })
        .collect()
}

fn events(plan: &Plan) -> Vec<&'static str> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::Event { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect()
}

fn condition<'p>(plan: &'p Plan, type_: &str) -> (&'p str, &'p str) {
    let c = plan
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_}"));
    (c.status.as_str(), c.reason.as_str())
}

/// Status with step 0 running as `attempt`, started `started` seconds ago.
fn running_first(attempts: i32, started: i64) -> GoalStatus {
    let case = Case::new(THREE_STEPS);
    let mut status = case.plan().status;
    status.steps[0].attempts = attempts;
    status.steps[0].pod_name = Some(pod_name("ship", 0, attempts));
    status.steps[0].started_at = Some(ago(started));
    status
}

#[test]
fn first_step_starts_one_pod() {
    let plan = Case::new(THREE_STEPS).plan();
    assert_eq!(creates(&plan), [(0, 1)]);
    assert_eq!(plan.status.phase, Some(GoalPhase::Running));
    assert_eq!(
        plan.status.steps[0].role.as_deref(),
        Some("scout"),
        "role inferred from the action"
    );
    assert_eq!(plan.status.progress.as_deref(), Some("0/3"));
    assert_eq!(
        plan.requeue_after,
        Some(Duration::from_secs(3600)),
        "requeue at the deadline"
    );
    insta::assert_yaml_snapshot!(plan);
}

#[test]
fn success_records_the_result_and_starts_the_next_step_at_once() {
    let case = Case::new(THREE_STEPS)
        .status(running_first(1, 30))
        .pod(0, 1, PodPhase::Succeeded);
    let plan = case.plan();
    assert_eq!(plan.status.completed_steps, 1);
    assert_eq!(plan.status.steps[0].phase, StepPhase::Succeeded);
    assert_eq!(
        plan.status.steps[0].result.as_deref(),
        Some("result of step 0")
    );
    assert_eq!(creates(&plan), [(1, 1)]);
    assert_eq!(plan.status.current_step.as_deref(), Some("implement"));
    insta::assert_yaml_snapshot!(plan);
}

#[test]
fn failure_with_retries_left_waits_out_the_backoff() {
    let plan = Case::new(THREE_STEPS)
        .status(running_first(1, 30))
        .pod(0, 1, PodPhase::Failed)
        .plan();
    assert_eq!(plan.status.steps[0].phase, StepPhase::Failed);
    assert_eq!(
        plan.status.steps[0].next_retry_time,
        Some(ago(-10)),
        "initial backoff 10s"
    );
    assert!(creates(&plan).is_empty());
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(10)));
    assert_eq!(plan.status.phase, Some(GoalPhase::Running));
    insta::assert_yaml_snapshot!(plan);
}

#[test]
fn a_due_retry_creates_the_next_attempt() {
    let mut status = running_first(1, 60);
    status.steps[0].phase = StepPhase::Failed;
    status.steps[0].next_retry_time = Some(ago(1));
    let plan = Case::new(THREE_STEPS)
        .status(status)
        .pod(0, 1, PodPhase::Failed)
        .plan();
    assert_eq!(creates(&plan), [(0, 2)]);
    assert_eq!(plan.status.steps[0].pod_name.as_deref(), Some("ship-s0-a2"));
}

#[test]
fn failure_without_retries_pauses_the_goal() {
    let plan = Case::new(THREE_STEPS)
        .status(running_first(3, 30))
        .pod(0, 3, PodPhase::Failed)
        .plan();
    assert_eq!(plan.status.phase, Some(GoalPhase::Paused));
    assert_eq!(condition(&plan, "Paused"), ("True", "StepFailed"));
    assert!(plan.actions.iter().any(|a| matches!(
        a,
        Action::Notify {
            reason: NotifyReason::Paused,
            ..
        }
    )));
    assert!(plan.actions.iter().any(|a| matches!(
        a,
        Action::Event {
            warning: true,
            reason: "StepFailed",
            ..
        }
    )));
    assert!(creates(&plan).is_empty());
    // A paused goal stays put on the next reconcile.
    let again = then(Case::new(THREE_STEPS).pod(0, 3, PodPhase::Failed), &plan).plan();
    assert!(again.actions.is_empty(), "{:?}", again.actions);
    insta::assert_yaml_snapshot!(plan);
}

#[test]
fn on_failure_fail_fails_the_goal() {
    let spec = format!("{THREE_STEPS}\nonFailure: fail\n");
    let plan = Case::new(&spec)
        .status(running_first(3, 30))
        .pod(0, 3, PodPhase::Failed)
        .plan();
    assert_eq!(plan.status.phase, Some(GoalPhase::Failed));
    assert!(plan.status.finished_at.is_some());
    assert!(plan.actions.iter().any(|a| matches!(
        a,
        Action::Notify {
            reason: NotifyReason::Failed,
            ..
        }
    )));
}

#[test]
fn a_pod_past_its_deadline_is_stopped_and_retried() {
    let plan = Case::new(THREE_STEPS)
        .status(running_first(1, 3601))
        .pod(0, 1, PodPhase::Running)
        .plan();
    assert!(plan.actions.contains(&Action::DeletePod {
        name: "ship-s0-a1".into()
    }));
    assert_eq!(plan.status.steps[0].phase, StepPhase::TimedOut);
    assert!(plan.status.steps[0].next_retry_time.is_some());
    insta::assert_yaml_snapshot!(plan);
}

#[test]
fn a_running_pod_before_its_deadline_requeues_for_the_deadline() {
    let plan = Case::new(THREE_STEPS)
        .status(running_first(1, 600))
        .pod(0, 1, PodPhase::Running)
        .plan();
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(3000)));
}

#[test]
fn schema_valid_giant_timeouts_and_forged_times_do_not_panic() {
    // Reproduced on a cluster: `defaults.timeout: 99999999999h` made the operator panic
    // (and restart into the same goal).
    let giant = THREE_STEPS.replace(
        "defaults: {",
        "defaults: {timeout: 99999999999h, backoff: {initial: 99999999999999999999h, max: 99999999999999999999h}, ",
    );
    let plan = Case::new(&giant)
        .status(running_first(1, 600))
        .pod(0, 1, PodPhase::Running)
        .plan();
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert!(plan.requeue_after.is_some());
    // A failure waits out a (capped) backoff instead of panicking at now + backoff.
    let failed = Case::new(&giant)
        .status(running_first(1, 600))
        .pod(0, 1, PodPhase::Failed)
        .plan();
    assert_eq!(failed.status.steps[0].phase, StepPhase::Failed);
    // A start time at the end of time plus any timeout is not a panic either.
    let mut forged = running_first(i32::MAX, 0);
    forged.steps[0].started_at = Some(Time(Timestamp::MAX));
    forged.steps[0].attempt_base = i32::MIN;
    let plan = Case::new(&giant)
        .status(forged)
        .pod(0, i32::MAX, PodPhase::Failed)
        .plan();
    assert!(!plan.status.conditions.is_empty());
}

#[test]
fn spec_paused_starts_no_step_and_clearing_it_continues() {
    let paused = format!("{THREE_STEPS}\npaused: true\n");
    let plan = Case::new(&paused).plan();
    assert!(creates(&plan).is_empty());
    assert_eq!(plan.status.phase, Some(GoalPhase::Paused));
    assert_eq!(condition(&plan, "Paused"), ("True", "Requested"));
    let resumed = then(Case::new(THREE_STEPS), &plan).plan();
    assert_eq!(creates(&resumed), [(0, 1)]);
    assert_eq!(condition(&resumed, "Paused"), ("False", "Running"));
}

#[test]
fn resume_continues_from_the_checkpoint_with_fresh_attempts() {
    let paused = Case::new(THREE_STEPS)
        .status(running_first(3, 30))
        .pod(0, 3, PodPhase::Failed)
        .plan();
    let mut case = then(Case::new(THREE_STEPS).pod(0, 3, PodPhase::Failed), &paused);
    case.resume = Some("2026-11-30T12:00:00Z");
    let plan = case.plan();
    assert_eq!(
        creates(&plan),
        [(0, 4)],
        "a new pod name, fresh retry budget"
    );
    assert_eq!(plan.status.steps[0].attempt_base, 3);
    assert_eq!(
        plan.status.resume_token.as_deref(),
        Some("2026-11-30T12:00:00Z")
    );
    assert_eq!(condition(&plan, "Paused"), ("False", "Running"));
    insta::assert_yaml_snapshot!(plan);
}

#[test]
fn an_edited_completed_step_is_a_spec_conflict_and_changes_nothing() {
    let done = Case::new(THREE_STEPS)
        .status(running_first(1, 30))
        .pod(0, 1, PodPhase::Succeeded)
        .plan();
    let edited = THREE_STEPS.replace(
        "Investigate the billing module",
        "Investigate something else",
    );
    let plan = then(Case::new(&edited).pod(0, 1, PodPhase::Succeeded), &done).plan();
    assert_eq!(condition(&plan, "Progressing"), ("False", "SpecConflict"));
    assert_eq!(events(&plan), ["SpecConflict"]);
    assert_eq!(plan.status.completed_steps, done.status.completed_steps);
    assert_eq!(plan.status.steps, done.status.steps);
}

#[test]
fn appended_steps_run_after_a_succeeded_goal() {
    let one = "defaults: {runtime: {name: codex, image: \"example.com/codex:1\"}}\nsteps: [{name: a, action: Implement it}]";
    let mut status = Case::new(one).plan().status;
    status.steps[0].attempts = 1;
    let done = Case::new(one)
        .status(status)
        .pod(0, 1, PodPhase::Succeeded)
        .plan();
    assert_eq!(done.status.phase, Some(GoalPhase::Succeeded));
    let two = format!("{one}\n");
    let two = two.replace(
        "steps: [{name: a, action: Implement it}]",
        "steps: [{name: a, action: Implement it}, {name: b, action: Verify it}]",
    );
    let plan = then(Case::new(&two).pod(0, 1, PodPhase::Succeeded), &done).plan();
    assert_eq!(creates(&plan), [(1, 1)], "only the new step runs");
    assert_eq!(plan.status.phase, Some(GoalPhase::Running));
    assert_eq!(plan.status.finished_at, None);
}

#[test]
fn a_pod_created_before_a_crash_is_adopted_not_twinned() {
    // Status never recorded attempt 1, but its pod exists.
    let mut case = Case::new(THREE_STEPS).pod(0, 1, PodPhase::Running);
    case.status = Some(Case::new(THREE_STEPS).plan().status).map(|mut s| {
        s.steps[0].attempts = 0;
        s.steps[0].phase = StepPhase::Pending;
        s
    });
    let plan = case.plan();
    assert!(creates(&plan).is_empty(), "{:?}", plan.actions);
    assert_eq!(plan.status.steps[0].attempts, 1);
    assert!(
        plan.status.steps[0].fingerprint.is_some(),
        "an adopted attempt still guards against edits"
    );
}

#[test]
fn a_recorded_attempt_without_its_pod_is_created_under_the_same_name() {
    let plan = Case::new(THREE_STEPS).status(running_first(1, 5)).plan();
    assert_eq!(creates(&plan), [(0, 1)]);
}

/// Another owner's pod holds the step pod's name: the refusal the controller wrote
/// stays the one condition (no StepRunning to flip it back), the create is tried again
/// after as long as the refusal has lasted, and the attempt's timeout still holds.
#[test]
fn a_step_pod_name_taken_is_one_condition_and_the_timeout_still_holds() {
    let mut status = running_first(1, 8);
    crate::conditions::set(
        &mut status.conditions,
        crate::conditions::PROGRESSING,
        false,
        crate::reasons::NAME_TAKEN,
        "pod ship-s0-a1 is another owner's",
        Some(1),
        &ago(4),
    );
    // As the reconcile that wrote the refusal left it: Stalled with its reason.
    let reading = crate::health::goal(&status);
    crate::health::set(&mut status.conditions, &reading, Some(1), &ago(4));
    let plan = Case::new(THREE_STEPS).status(status.clone()).plan();
    assert_eq!(creates(&plan), [(0, 1)], "tried again");
    assert_eq!(
        plan.status, status,
        "nothing to write while the name is taken"
    );
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(4)), "backoff");

    // A refusal that lasted longer waits longer, up to a minute.
    let mut long = status.clone();
    for c in &mut long.conditions {
        c.last_transition_time = ago(600);
    }
    let plan = Case::new(THREE_STEPS).status(long).plan();
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(60)));

    // Past the step's timeout (an hour), the attempt times out though it never had a
    // pod of its own, and the retry's pod has a name of its own.
    let mut late = status;
    late.steps[0].started_at = Some(ago(3601));
    let plan = Case::new(THREE_STEPS).status(late).plan();
    assert!(creates(&plan).is_empty());
    assert_eq!(plan.status.steps[0].phase, StepPhase::TimedOut);
    assert!(
        deletes(&plan).is_empty(),
        "the other owner's pod is never deleted"
    );
    let retried = then(Case::new(THREE_STEPS), &plan).plan();
    let retry_at = retried.requeue_after;
    assert!(retry_at.is_some(), "the retry is timed");
}

#[test]
fn a_notify_step_is_recorded_only_once_the_operator_has_sent_it() {
    let spec = "defaults: {runtime: {name: codex, image: \"example.com/codex:1\"}}\nsteps: [{name: tell, action: Notify the team}, {name: b, action: Implement it}]";
    // Not sent yet: the plan stops at the step and asks for it, recording nothing.
    let due = Case::new(spec).plan();
    assert!(due.actions.iter().any(|a| matches!(
        a,
        Action::Notify {
            reason: NotifyReason::Step,
            step: Some(0),
            ..
        }
    )));
    assert_eq!(due.status.completed_steps, 0);
    assert!(creates(&due).is_empty());
    // Sent: recorded, and the next step starts in the same plan.
    let mut case = Case::new(spec);
    case.notified = Some(0);
    let sent = case.plan();
    assert!(
        !sent
            .actions
            .iter()
            .any(|a| matches!(a, Action::Notify { .. }))
    );
    assert_eq!(sent.status.completed_steps, 1);
    assert_eq!(creates(&sent), [(1, 1)]);
}

#[test]
fn a_step_without_an_image_is_a_condition_not_a_crash() {
    let plan = Case::new("steps: [{name: a, action: Implement it}]").plan();
    assert!(creates(&plan).is_empty());
    assert_eq!(condition(&plan, "Progressing"), ("False", "MissingRuntime"));
}

#[test]
fn steps_use_their_swarm_role_as_a_template() {
    let mut case = Case::new(
        "swarm: billing\nsteps: [{name: a, role: reviewer, action: Review the change}, {name: b, role: builder, action: Fix it}]",
    );
    case.swarm = Some(
        serde_saphyr::from_str(
            r#"
defaults: {runtime: {name: claude, image: example.com/claude:1}}
roles:
  reviewer:
    runtime: {name: codex, image: example.com/codex:2}
    podTemplate: {resources: {limits: {memory: 1Gi}}}
"#,
        )
        .unwrap(),
    );
    let plan = case.plan();
    let Some(Action::CreatePod(run)) = plan
        .actions
        .iter()
        .find(|a| matches!(a, Action::CreatePod(_)))
    else {
        panic!("no pod: {:?}", plan.actions);
    };
    let StepRun {
        role,
        runtime,
        template,
        ..
    } = run.as_ref();
    assert_eq!(role, "reviewer");
    assert_eq!(
        runtime.image.as_deref(),
        Some("example.com/codex:2"),
        "the role's template"
    );
    let memory = template
        .resources
        .clone()
        .and_then(|r| r.limits)
        .and_then(|l| l.get("memory").cloned());
    assert_eq!(memory.map(|q| q.0).as_deref(), Some("1Gi"));
    // A role the swarm does not list falls back to the swarm's defaults.
    let mut later = then(case, &plan);
    later.pods.push(StepPod {
        name: pod_name("ship", 0, 1),
        step: 0,
        step_name: later.spec.steps[0].name.clone(),
        attempt: 1,
        phase: PodPhase::Succeeded,
        finished_at: Some(now()),
        message: Some("ok".into()),
        exit_code: Some(0),
        reason: None,
    });
    let next = later.plan();
    let Some(Action::CreatePod(run)) = next
        .actions
        .iter()
        .find(|a| matches!(a, Action::CreatePod(_)))
    else {
        panic!("no second pod: {:?}", next.actions);
    };
    let StepRun {
        runtime, template, ..
    } = run.as_ref();
    assert_eq!(runtime.image.as_deref(), Some("example.com/claude:1"));
    assert!(template.is_empty());
}

fn summary(name: &str, phase: Option<GoalPhase>, depends_on: &[&str]) -> GoalSummary {
    GoalSummary {
        name: name.into(),
        phase,
        depends_on: depends_on.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn dependencies_table() {
    let spec = format!("{THREE_STEPS}\ndependsOn: [base]\n");
    let rows = [
        (
            "predecessor running",
            vec![summary("base", Some(GoalPhase::Running), &[])],
            "False",
            "WaitingForPredecessor",
            false,
        ),
        (
            "predecessor missing",
            vec![],
            "False",
            "WaitingForPredecessor",
            false,
        ),
        (
            "predecessor paused",
            vec![summary("base", Some(GoalPhase::Paused), &[])],
            "True",
            "PredecessorStalled",
            false,
        ),
        (
            "predecessor failed",
            vec![summary("base", Some(GoalPhase::Failed), &[])],
            "True",
            "PredecessorStalled",
            false,
        ),
        (
            "cycle",
            vec![summary("base", Some(GoalPhase::Waiting), &["ship"])],
            "True",
            "Deadlock",
            false,
        ),
        (
            "predecessor succeeded",
            vec![summary("base", Some(GoalPhase::Succeeded), &[])],
            "False",
            "NotBlocked",
            true,
        ),
    ];
    for (name, goals, blocked, reason, starts) in rows {
        let mut case = Case::new(&spec);
        case.goals = goals;
        let plan = case.plan();
        assert_eq!(condition(&plan, "Blocked"), (blocked, reason), "{name}");
        assert_eq!(!creates(&plan).is_empty(), starts, "{name}");
        if !starts {
            assert_eq!(plan.status.phase, Some(GoalPhase::Waiting), "{name}");
        }
    }
}

#[test]
fn backoff_table() {
    let b = Backoff::default();
    let rows = [
        (1, 10),
        (2, 20),
        (3, 40),
        (4, 80),
        (5, 160),
        (6, 300),
        (30, 300),
    ];
    for (failed, secs) in rows {
        assert_eq!(
            backoff(&b, failed),
            Duration::from_secs(secs),
            "after {failed} failures"
        );
    }
}

#[test]
fn pod_names_are_deterministic_and_bounded() {
    assert_eq!(pod_name("ship", 2, 3), "ship-s2-a3");
    let long = "a".repeat(253);
    assert!(pod_name(&long, 99, 100).len() <= 253);
    let (one, other) = (format!("{long}x"), format!("{long}y"));
    let (one, other) = (&one[1..], &other[1..]);
    assert_ne!(
        pod_name(one, 0, 1),
        pod_name(other, 0, 1),
        "two long goals that share a beginning share no step pod"
    );
}

fn wakes(plan: &Plan) -> Vec<StepOutcome> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::WakeOverseer(outcome) => Some(outcome.clone()),
            _ => None,
        })
        .collect()
}

/// `effort: high` tells the overseer every step outcome; standard effort, or no
/// overseer, tells nobody. (case, extra spec, pod outcome, wake: outcome and next)
#[test]
fn high_effort_wakes_the_overseer_with_each_step_outcome() {
    type Row = (
        &'static str,
        &'static str,
        PodPhase,
        Option<(&'static str, &'static str)>,
    );
    let rows: &[Row] = &[
        (
            "success",
            "effort: high\noverseer: lead\n",
            PodPhase::Succeeded,
            Some(("succeeded", "step implement starts")),
        ),
        (
            "failure, retries left",
            "effort: high\noverseer: lead\n",
            PodPhase::Failed,
            Some(("failed", "retry in 10s")),
        ),
        (
            "failure, none left",
            "effort: high\noverseer: lead\n",
            PodPhase::Failed,
            Some(("failed", "the goal is paused")),
        ),
        (
            "standard effort",
            "overseer: lead\n",
            PodPhase::Succeeded,
            None,
        ),
        ("no overseer", "effort: high\n", PodPhase::Succeeded, None),
    ];
    for (label, extra, phase, expected) in rows {
        let mut case = Case::new(&format!("{extra}{THREE_STEPS}"));
        if *label == "failure, none left" {
            case.spec.defaults.max_retries = 0;
        }
        let plan = case.status(running_first(1, 30)).pod(0, 1, *phase).plan();
        let told: Vec<(&str, String)> = wakes(&plan)
            .iter()
            .map(|w| (w.outcome, w.next.clone()))
            .collect();
        let expected: Vec<(&str, String)> =
            expected.iter().map(|(o, n)| (*o, n.to_string())).collect();
        assert_eq!(told, expected, "{label}");
    }
}

#[test]
fn the_outcome_message_has_a_fixed_shape() {
    let outcome = StepOutcome {
        position: 2,
        steps: 3,
        step: "implement".into(),
        attempt: 1,
        outcome: "failed",
        next: "retry in 20s".into(),
    };
    insta::assert_snapshot!(outcome_message("team", "ship", &outcome), @r"
    [overseer] goal: goal=ship step=2/3 name=implement attempt=1 outcome=failed next=retry in 20s
    The step's result and message are in the Goal's status.steps[1] (kubectl -n team get goal ship -o yaml). This message quotes nothing the step wrote.
    ");
}

#[test]
fn a_timed_out_attempt_still_running_after_a_restart_is_stopped_again() {
    // The delete was asked once, when the step timed out; the operator stopped before
    // it landed. Its successor asks again instead of leaving it beside the retry.
    let timed_out =
        Case::new(THREE_STEPS)
            .status(running_first(1, 7200))
            .pod(0, 1, PodPhase::Running);
    let plan = timed_out.plan();
    assert_eq!(plan.status.steps[0].phase, StepPhase::TimedOut);
    let after_restart =
        Case::new(THREE_STEPS)
            .status(plan.status.clone())
            .pod(0, 1, PodPhase::Running);
    let again = after_restart.plan();
    assert!(
        again.actions.contains(&Action::DeletePod {
            name: "ship-s0-a1".into()
        }),
        "{:?}",
        again.actions
    );
}

/// Status with step 0 done and step 1 ("implement") running its first attempt.
fn implement_running() -> GoalStatus {
    let first = Case::new(THREE_STEPS)
        .pod(0, 1, PodPhase::Succeeded)
        .pod(1, 1, PodPhase::Running);
    let mut status = first.plan().status;
    status.steps[1].phase = StepPhase::Running;
    status.steps[1].attempts = 1;
    status
}

#[test]
fn a_replaced_step_never_takes_the_old_steps_pod_or_result() {
    // Step 1 ("implement") ran attempt 1 and is replaced by "rewrite" before it ended.
    let status = implement_running();
    let replaced = THREE_STEPS.replace(
        "{name: implement, action: Implement proration}",
        "{name: rewrite, action: Implement it again}",
    );
    let plan = Case::new(&replaced)
        .status(status)
        .pod(0, 1, PodPhase::Succeeded)
        .pod_of(1, "implement", 1, PodPhase::Running)
        .plan();
    assert_eq!(plan.status.steps[1].name, "rewrite");
    assert_eq!(creates(&plan), [(1, 2)], "a pod name of its own");
    assert!(
        plan.actions.contains(&Action::DeletePod {
            name: "ship-s1-a1".into()
        }),
        "the old step's pod is stopped: {:?}",
        plan.actions
    );
    // Even when the old step's pod had succeeded, its result is not the new step's.
    let mut status = plan.status.clone();
    status.steps[1].phase = StepPhase::Running;
    let done_old = Case::new(&replaced)
        .status(status)
        .pod(0, 1, PodPhase::Succeeded)
        .pod_of(1, "implement", 1, PodPhase::Succeeded)
        .plan();
    assert_eq!(done_old.status.completed_steps, 1);
    assert_eq!(done_old.status.steps[1].result, None);
}

#[test]
fn a_pod_of_a_removed_step_is_stopped() {
    let status = implement_running();
    let removed = THREE_STEPS.replace("  - {name: implement, action: Implement proration}\n", "");
    let plan = Case::new(&removed)
        .status(status)
        .pod(0, 1, PodPhase::Succeeded)
        .pod_of(1, "implement", 1, PodPhase::Running)
        .plan();
    assert_eq!(plan.status.steps[1].name, "verify");
    assert!(
        plan.actions.contains(&Action::DeletePod {
            name: "ship-s1-a1".into()
        }),
        "{:?}",
        plan.actions
    );
    assert_eq!(creates(&plan), [(1, 2)]);
}

fn deletes(plan: &Plan) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::DeletePod { name } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn finished_pods_are_deleted_after_the_retention_once_their_outcome_is_recorded() {
    // Step 0 succeeded; step 1's first attempt failed and its second runs.
    let first = Case::new(THREE_STEPS).pod(0, 1, PodPhase::Succeeded);
    let plan = first.plan();
    let mut status = then(first, &plan).plan().status;
    status.steps[1].attempts = 2;
    status.steps[1].phase = StepPhase::Running;
    let case = |retention: Option<Duration>, running: PodPhase| {
        let mut case = Case::new(THREE_STEPS)
            .status(status.clone())
            .pod(0, 1, PodPhase::Succeeded)
            .pod(1, 1, PodPhase::Failed)
            .pod(1, 2, running);
        case.retention = retention;
        case
    };
    // (case, retention, the running attempt's pod phase, pods deleted)
    let rows: &[(&str, Option<Duration>, PodPhase, &[&str])] = &[
        ("kept: retention off", None, PodPhase::Running, &[]),
        (
            "kept: within an hour",
            Some(Duration::from_secs(3600)),
            PodPhase::Running,
            &[],
        ),
        (
            "expired: the succeeded step's and the failed attempt's, not the running one",
            Some(Duration::ZERO),
            PodPhase::Running,
            &["ship-s0-a1", "ship-s1-a1"],
        ),
        (
            "the attempt just finished: its outcome is in this plan's status, which is written first",
            Some(Duration::ZERO),
            PodPhase::Succeeded,
            &["ship-s0-a1", "ship-s1-a1", "ship-s1-a2"],
        ),
    ];
    for (row, retention, running, deleted) in rows {
        let plan = case(*retention, *running).plan();
        assert_eq!(deletes(&plan), *deleted, "{row}");
    }
    let waiting = case(Some(Duration::from_secs(3600)), PodPhase::Running).plan();
    assert!(
        waiting
            .requeue_after
            .is_some_and(|r| r <= Duration::from_secs(3600)),
        "back when the first pod expires: {:?}",
        waiting.requeue_after
    );
}

#[test]
fn a_step_whose_role_only_reads_gets_a_read_only_workspace() {
    let mut case = Case::new(
        "defaults: {runtime: {name: codex, image: \"example.com/codex:1\"}}\nswarm: billing\nsteps: [{name: a, action: Investigate the billing module}, {name: b, role: tester, action: Implement it}, {name: c, role: builder, action: Implement it}]",
    );
    case.swarm = Some(serde_saphyr::from_str("roles: {tester: {readOnly: true}}").unwrap());
    let read_only = |plan: &Plan| {
        plan.actions.iter().find_map(|a| match a {
            Action::CreatePod(run) => Some(run.read_only),
            _ => None,
        })
    };
    // (step, its role, read-only): a built-in scout, the swarm's tester, a builder.
    let mut plan = case.plan();
    for (i, role, expected) in [
        (0, "scout", true),
        (1, "tester", true),
        (2, "builder", false),
    ] {
        assert_eq!(plan.status.steps[i].role.as_deref(), Some(role));
        assert_eq!(read_only(&plan), Some(expected), "step {i}, role {role}");
        case = then(case, &plan).pod(i, 1, PodPhase::Succeeded);
        plan = case.plan();
    }
}

#[test]
fn ready_is_true_once_the_goal_succeeded_and_else_says_why_not() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    let made = |type_: &str, status: &str, reason: &str| Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: format!("{reason} message"),
        observed_generation: Some(1),
        last_transition_time: ago(0),
    };
    let status = |phase, conditions: Vec<Condition>| GoalStatus {
        phase,
        progress: Some("1/3".into()),
        conditions,
        ..Default::default()
    };
    // (status, Ready, reason, message)
    let rows = [
        (status(None, vec![]), false, "Pending", "1/3 steps done"),
        (
            status(Some(GoalPhase::Running), vec![]),
            false,
            "Running",
            "1/3 steps done",
        ),
        (
            status(Some(GoalPhase::Succeeded), vec![]),
            true,
            "Succeeded",
            "1/3 steps done",
        ),
        (
            status(
                Some(GoalPhase::Paused),
                vec![made("Paused", "True", "StepFailed")],
            ),
            false,
            "Paused",
            "1/3 steps done",
        ),
        (
            status(Some(GoalPhase::Failed), vec![]),
            false,
            "Failed",
            "1/3 steps done",
        ),
        (
            status(
                Some(GoalPhase::Waiting),
                vec![made("Blocked", "True", "Deadlock")],
            ),
            false,
            "Deadlock",
            "Deadlock message",
        ),
        (
            status(
                Some(GoalPhase::Running),
                vec![
                    made("Blocked", "False", "NotBlocked"),
                    made("Progressing", "False", "SpecConflict"),
                ],
            ),
            false,
            "SpecConflict",
            "SpecConflict message",
        ),
    ];
    for (status, ready, reason, message) in rows {
        let (r, why, text) = readiness(&status);
        assert_eq!(
            (r, why.as_str(), text.as_str()),
            (ready, reason, message),
            "{status:?}"
        );
    }
    // plan() keeps it, with the generation it decided on.
    let started = Case::new(THREE_STEPS).plan();
    assert_eq!(condition(&started, "Ready"), ("False", "Running"));
    let ready = started
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready");
    assert_eq!(ready.and_then(|c| c.observed_generation), Some(1));
}

#[path = "plan_graph_tests.rs"]
mod graph_tests;
