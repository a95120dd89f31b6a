//! Table tests of goals whose steps make a graph: fan-out and fan-in (`after`),
//! `forEach`, `maxParallel`, and failure, pause and resume with runs side by side.

use super::*;

/// plan, then `left` and `right` after it, then `join` after both.
const DIAMOND: &str = r#"
defaults: {runtime: {name: codex, mode: headless, image: "example.com/codex:1"}}
steps:
  - {name: plan, action: Plan the work}
  - {name: left, action: Build the API, after: [plan]}
  - {name: right, action: Build the web page, after: [plan]}
  - {name: join, action: Check both halves together, after: [left, right]}
"#;

/// Five items, at most two at a time, then a step after them all.
const FAN: &str = r#"
defaults: {runtime: {name: codex, mode: headless, image: "example.com/codex:1"}}
maxParallel: 10
steps:
  - {name: test, action: "Test package {{item}}", forEach: [a, b, c, d, e], maxParallel: 2}
  - {name: report, action: Summarise the test results}
"#;

/// The plan of `case` once more, from the status it planned and with `pods`.
fn next(case: &Case, plan: &Plan, pods: &[(usize, i32, PodPhase)]) -> Plan {
    let mut again = Case::new("steps: [{name: x, action: y}]");
    again.spec = case.spec.clone();
    let again = pods.iter().fold(again, |c, &(step, attempt, phase)| {
        c.pod(step, attempt, phase)
    });
    then(again, plan).plan()
}

fn phases(plan: &Plan) -> Vec<(&str, StepPhase)> {
    plan.status
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.phase))
        .collect()
}

#[test]
fn steps_after_the_same_one_start_together_and_the_fan_in_waits_for_both() {
    use PodPhase::*;
    let case = Case::new(DIAMOND);
    let first = case.plan();
    assert_eq!(creates(&first), [(0, 1)], "plan alone first");
    let fanned = next(&case, &first, &[(0, 1, Succeeded)]);
    assert_eq!(creates(&fanned), [(1, 1), (2, 1)], "left and right at once");
    assert_eq!(fanned.status.current_step.as_deref(), Some("left,right"));
    assert_eq!(fanned.status.progress.as_deref(), Some("1/4"));
    let half = next(
        &case,
        &fanned,
        &[(0, 1, Succeeded), (1, 1, Succeeded), (2, 1, Running)],
    );
    assert!(creates(&half).is_empty(), "join waits for right");
    assert_eq!(half.status.completed_steps, 2);
    let joined = next(
        &case,
        &half,
        &[(0, 1, Succeeded), (1, 1, Succeeded), (2, 1, Succeeded)],
    );
    assert_eq!(creates(&joined), [(3, 1)], "join once both are done");
    let done = next(
        &case,
        &joined,
        &[
            (0, 1, Succeeded),
            (1, 1, Succeeded),
            (2, 1, Succeeded),
            (3, 1, Succeeded),
        ],
    );
    assert_eq!(done.status.phase, Some(GoalPhase::Succeeded));
    assert_eq!(done.status.progress.as_deref(), Some("4/4"));
}

#[test]
fn for_each_runs_an_item_per_pod_within_max_parallel() {
    use PodPhase::*;
    let case = Case::new(FAN);
    let first = case.plan();
    let runs: Vec<(usize, &str, Option<&str>)> = first
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::CreatePod(run) => Some((run.step, run.action.as_str(), run.item.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(
        runs,
        [
            (0, "Test package a", Some("a")),
            (1, "Test package b", Some("b"))
        ],
        "the step's maxParallel: two items at once, each told its item"
    );
    assert_eq!(
        phases(&first),
        [
            ("test.1", StepPhase::Running),
            ("test.2", StepPhase::Running),
            ("test.3", StepPhase::Pending),
            ("test.4", StepPhase::Pending),
            ("test.5", StepPhase::Pending),
            ("report", StepPhase::Pending),
        ]
    );
    assert_eq!(first.status.steps[2].item.as_deref(), Some("c"));
    let one_done = next(&case, &first, &[(0, 1, Succeeded), (1, 1, Running)]);
    assert_eq!(creates(&one_done), [(2, 1)], "a slot freed, the next item");
    let mut all = vec![(0, 1, Succeeded), (1, 1, Succeeded), (2, 1, Succeeded)];
    let more = next(&case, &one_done, &all);
    assert_eq!(creates(&more), [(3, 1), (4, 1)]);
    all.extend([(3, 1, Succeeded), (4, 1, Succeeded)]);
    let report = next(&case, &more, &all);
    assert_eq!(creates(&report), [(5, 1)], "the fan-in after every item");
    assert_eq!(report.status.progress.as_deref(), Some("5/6"));
}

#[test]
fn the_goals_max_parallel_bounds_every_step_together() {
    let spec = r#"
defaults: {runtime: {name: codex, mode: headless, image: "example.com/codex:1"}}
maxParallel: 3
steps:
  - {name: a, action: Build a, after: []}
  - {name: b, action: Build b, after: []}
  - {name: c, action: "Build {{item}}", after: [], forEach: [x, y, z]}
"#;
    let case = Case::new(spec);
    let first = case.plan();
    assert_eq!(creates(&first), [(0, 1), (1, 1), (2, 1)]);
    let freed = next(
        &case,
        &first,
        &[
            (0, 1, PodPhase::Failed),
            (1, 1, PodPhase::Running),
            (2, 1, PodPhase::Running),
        ],
    );
    assert_eq!(
        creates(&freed),
        [(3, 1)],
        "a slot is a pod: one waiting out its backoff holds none"
    );
}

#[test]
fn a_step_out_of_retries_pauses_the_goal_while_the_others_finish() {
    use PodPhase::*;
    let spec = DIAMOND.replace(
        "image: \"example.com/codex:1\"}",
        "image: x}, maxRetries: 0",
    );
    let case = Case::new(&spec);
    let first = case.plan();
    let fanned = next(&case, &first, &[(0, 1, Succeeded)]);
    let failed = next(
        &case,
        &fanned,
        &[(0, 1, Succeeded), (1, 1, Failed), (2, 1, Running)],
    );
    assert_eq!(failed.status.phase, Some(GoalPhase::Paused));
    assert_eq!(condition(&failed, "Paused"), ("True", "StepFailed"));
    assert_eq!(
        failed.status.steps[2].phase,
        StepPhase::Running,
        "right runs on"
    );
    assert!(deletes(&failed).is_empty(), "and is not stopped");
    let right_done = next(
        &case,
        &failed,
        &[(0, 1, Succeeded), (1, 1, Failed), (2, 1, Succeeded)],
    );
    assert_eq!(
        right_done.status.steps[2].phase,
        StepPhase::Succeeded,
        "recorded"
    );
    assert_eq!(
        right_done.status.phase,
        Some(GoalPhase::Paused),
        "still paused"
    );
    assert!(creates(&right_done).is_empty());
    let mut resumed = Case::new(&spec)
        .pod(0, 1, Succeeded)
        .pod(1, 1, Failed)
        .pod(2, 1, Succeeded)
        .status(right_done.status.clone());
    resumed.resume = Some("now");
    let resumed = resumed.plan();
    assert_eq!(creates(&resumed), [(1, 2)], "only the failed one again");
    assert_eq!(resumed.status.phase, Some(GoalPhase::Running));
    assert_eq!(resumed.status.steps[1].attempt_base, 1);
}

#[test]
fn a_failed_goal_stops_the_runs_beside_the_one_that_failed() {
    use PodPhase::*;
    let spec = DIAMOND.replace(
        "image: \"example.com/codex:1\"}",
        "image: x}, maxRetries: 0",
    ) + "onFailure: fail\n";
    let case = Case::new(&spec);
    let fanned = next(&case, &case.plan(), &[(0, 1, Succeeded)]);
    let failed = next(
        &case,
        &fanned,
        &[(0, 1, Succeeded), (1, 1, Failed), (2, 1, Running)],
    );
    assert_eq!(failed.status.phase, Some(GoalPhase::Failed));
    assert_eq!(deletes(&failed), [pod_name("ship", 2, 1)]);
    assert_eq!(failed.status.steps[2].phase, StepPhase::Failed);
    assert_eq!(
        failed.status.steps[2].message.as_deref(),
        Some("stopped: step left failed the goal")
    );
}

#[test]
fn spec_paused_lets_running_steps_finish_and_starts_none() {
    use PodPhase::*;
    let case = Case::new(DIAMOND);
    let fanned = next(&case, &case.plan(), &[(0, 1, Succeeded)]);
    let mut paused = Case::new(DIAMOND);
    paused.spec.paused = true;
    let half = next(
        &paused,
        &fanned,
        &[(0, 1, Succeeded), (1, 1, Succeeded), (2, 1, Running)],
    );
    assert_eq!(
        half.status.phase,
        Some(GoalPhase::Running),
        "right still runs"
    );
    let both = next(
        &paused,
        &half,
        &[(0, 1, Succeeded), (1, 1, Succeeded), (2, 1, Succeeded)],
    );
    assert!(creates(&both).is_empty(), "join does not start");
    assert_eq!(both.status.phase, Some(GoalPhase::Paused));
}

#[test]
fn items_may_be_appended_but_a_completed_item_is_not_edited() {
    let case = Case::new(FAN);
    let first = case.plan();
    let done = next(
        &case,
        &first,
        &[(0, 1, PodPhase::Succeeded), (1, 1, PodPhase::Running)],
    );
    let appended = FAN.replace("[a, b, c, d, e]", "[a, b, c, d, e, f]");
    let grown = then(
        Case::new(&appended)
            .pod(0, 1, PodPhase::Succeeded)
            .pod(1, 1, PodPhase::Running),
        &done,
    )
    .plan();
    assert_eq!(grown.status.steps.len(), 7, "one more item");
    assert_eq!(grown.status.steps[5].name, "test.6");
    assert_ne!(condition(&grown, "Progressing").1, "SpecConflict");
    let edited = FAN.replace("[a, b, c, d, e]", "[z, b, c, d, e]");
    let conflict = then(Case::new(&edited).pod(0, 1, PodPhase::Succeeded), &done).plan();
    assert_eq!(
        condition(&conflict, "Progressing"),
        ("False", "SpecConflict")
    );
    assert!(creates(&conflict).is_empty());
}

#[test]
fn steps_that_make_no_graph_are_a_condition_not_a_crash() {
    let plan = Case::new(
        "{defaults: {runtime: {image: x}}, steps: [{name: a, action: x, after: [b]}, {name: b, action: y}]}",
    )
    .plan();
    assert_eq!(condition(&plan, "Progressing"), ("False", "InvalidSpec"));
    assert!(creates(&plan).is_empty());
    assert_eq!(events(&plan), ["InvalidSpec"]);
}

#[test]
fn two_notify_steps_ready_together_are_sent_one_at_a_time() {
    let spec = r#"
steps:
  - {name: tell-a, action: Notify the team}
  - {name: tell-b, action: Notify the owners, after: []}
"#;
    let mut case = Case::new(spec);
    let first = case.plan();
    let notifies = |plan: &Plan| -> Vec<Option<usize>> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                Action::Notify { step, .. } => Some(*step),
                _ => None,
            })
            .collect()
    };
    assert_eq!(notifies(&first), [Some(0)]);
    case.notified = Some(0);
    let sent = case.plan();
    assert_eq!(sent.status.steps[0].phase, StepPhase::Succeeded);
    assert_eq!(
        notifies(&sent),
        [Some(1)],
        "the next, sent after this is recorded"
    );
}

#[test]
fn runs_that_may_run_side_by_side_and_write_land_their_own_branch() {
    let with_git = |steps: &str| {
        format!(
            "defaults: {{runtime: {{name: codex, mode: headless, image: x}}}}\n\
             workspace: {{git: {{url: 'https://git.example.com/shop.git', ref: main}}}}\nsteps: {steps}"
        )
    };
    let lands = |plan: &Plan| -> Vec<Option<(String, String)>> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                Action::CreatePod(run) => Some(
                    run.lands
                        .as_ref()
                        .map(|l| (l.branch.clone(), l.onto.clone())),
                ),
                _ => None,
            })
            .collect()
    };
    let fan = Case::new(&with_git(
        "[{name: part, action: 'Implement {{item}}', forEach: [a, b]}, \
         {name: look, action: Review the parts, role: reviewer, after: []}]",
    ))
    .plan();
    assert_eq!(
        lands(&fan),
        [
            Some((
                "overseer-runs/ship/part.1-a1".into(),
                "overseer/ship".into()
            )),
            Some((
                "overseer-runs/ship/part.2-a1".into(),
                "overseer/ship".into()
            )),
            None,
        ],
        "each writer on its own branch, landed on the goal's; the reviewer only reads"
    );
    let chain = Case::new(&with_git(
        "[{name: a, action: Implement it}, {name: b, action: Test it}]",
    ))
    .plan();
    assert_eq!(
        lands(&chain),
        [None],
        "steps one after the other share the goal's branch"
    );
}
