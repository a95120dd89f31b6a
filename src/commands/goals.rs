//! `overseer goals`: each goal's progress through its steps, one line per goal.

use jiff::Timestamp;
use kube::ResourceExt;

use super::output::{Listed, age};
use crate::goal::{Goal, StepPhase};

/// The longest STEPS cell of the table (`-o wide` shows them all).
const STEPS_WIDTH: usize = 60;

impl Listed for Goal {
    /// Goal, swarm, phase, progress, the current step with its attempt, each step's
    /// state, and the age of the run; `wide` adds the next retry and the message.
    fn header(wide: bool) -> Vec<&'static str> {
        let mut header = vec![
            "GOAL", "SWARM", "PHASE", "PROGRESS", "STEP", "ATTEMPT", "STEPS", "AGE",
        ];
        if wide {
            header.extend(["NEXT RETRY", "MESSAGE"]);
        }
        header
    }

    fn row(&self, wide: bool, now: Timestamp) -> Vec<String> {
        let status = self.status.clone().unwrap_or_default();
        let dash = || "-".to_string();
        let current = status
            .current_step
            .as_ref()
            .and_then(|name| status.steps.iter().find(|s| &s.name == name));
        let steps = steps_cell(self, wide);
        let mut row = vec![
            self.name_any(),
            self.spec.swarm.clone().unwrap_or_else(dash),
            status.phase.map_or_else(dash, |p| format!("{p:?}")),
            status
                .progress
                .clone()
                .unwrap_or_else(|| format!("{}/{}", status.completed_steps, self.spec.steps.len())),
            status.current_step.clone().unwrap_or_else(dash),
            current.map_or_else(dash, |s| s.attempts.to_string()),
            steps,
            status
                .started_at
                .as_ref()
                .map_or_else(dash, |t| age(now, t.0)),
        ];
        if wide {
            row.extend([
                current
                    .and_then(|s| s.next_retry_time.as_ref())
                    .map_or_else(dash, |t| format!("in {}", age(t.0, now))),
                status
                    .message
                    .as_deref()
                    .and_then(|m| m.lines().next())
                    .map_or_else(dash, |m| m.chars().take(80).collect()),
            ]);
        }
        row
    }

    fn group(&self) -> Option<String> {
        self.spec.swarm.clone()
    }
}

/// Each step of the spec with a mark for its state: `✓` succeeded, `▶` running, `✗`
/// failed, `⌛` timed out, `·` not yet run; cut at `STEPS_WIDTH` unless `wide`.
fn steps_cell(goal: &Goal, wide: bool) -> String {
    let status = goal.status.as_ref();
    let marks: Vec<String> = goal
        .spec
        .steps
        .iter()
        .map(|step| {
            let phase = status
                .and_then(|s| s.steps.iter().find(|s| s.name == step.name))
                .map(|s| s.phase);
            let mark = match phase {
                Some(StepPhase::Succeeded) => '✓',
                Some(StepPhase::Running) => '▶',
                Some(StepPhase::Failed) => '✗',
                Some(StepPhase::TimedOut) => '⌛',
                Some(StepPhase::Pending) | None => '·',
            };
            format!("{}{mark}", step.name)
        })
        .collect();
    let all = marks.join(" ");
    if wide || all.chars().count() <= STEPS_WIDTH {
        return all;
    }
    let cut: String = all.chars().take(STEPS_WIDTH - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::output::{ListArgs, Output, render};

    #[test]
    fn each_goal_shows_its_steps_progress() {
        let goals: Vec<Goal> = serde_saphyr::from_str(
            r#"
- metadata: {name: ship, namespace: team}
  spec:
    steps: [{name: plan, action: a}, {name: build, action: b}, {name: test, action: c}]
  status:
    phase: Running
    completedSteps: 1
    progress: 1/3
    currentStep: build
    startedAt: "2026-12-01T10:00:00Z"
    steps:
      - {name: plan, phase: Succeeded, attempts: 1}
      - {name: build, phase: Failed, attempts: 2, nextRetryTime: "2026-12-01T10:02:00Z"}
- metadata: {name: fresh, namespace: team}
  spec: {swarm: billing, steps: [{name: only, action: a}]}
"#,
        )
        .unwrap();
        let now: Timestamp = "2026-12-01T10:01:30Z".parse().unwrap();
        let args = |output| ListArgs {
            all_namespaces: false,
            output,
            no_headers: false,
        };
        insta::assert_snapshot!(render(&goals, &args(None), now).unwrap(), @r"
        GOAL    SWARM     PHASE     PROGRESS   STEP    ATTEMPT   STEPS                AGE
        ship    -         Running   1/3        build   2         plan✓ build✗ test·   90s
        fresh   billing   -         0/1        -       -         only·                -
        ");
        insta::assert_snapshot!(render(&goals, &args(Some(Output::Wide)), now).unwrap(), @r"
        GOAL    SWARM     PHASE     PROGRESS   STEP    ATTEMPT   STEPS                AGE   NEXT RETRY   MESSAGE
        ship    -         Running   1/3        build   2         plan✓ build✗ test·   90s   in 30s       -
        fresh   billing   -         0/1        -       -         only·                -     -            -
        ");
    }

    #[test]
    fn a_long_run_of_steps_is_cut_unless_wide() {
        let steps: Vec<serde_json::Value> = (0..40)
            .map(|i| serde_json::json!({"name": format!("step-{i}"), "action": "a"}))
            .collect();
        let goal: Goal = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "long"}, "spec": {"steps": steps}}))
        .unwrap();
        let cut = steps_cell(&goal, false);
        assert_eq!(cut.chars().count(), STEPS_WIDTH);
        assert!(cut.ends_with('…'));
        assert!(steps_cell(&goal, true).ends_with("step-39·"));
    }
}
