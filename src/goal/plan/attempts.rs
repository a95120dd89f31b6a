//! The life of one step attempt in the plan: started, running, succeeded, or failed
//! and retried after its backoff, paused, or the goal failed.

use crate::conditions::Recording;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{Action, NotifyReason, Planner, StepRun, backoff, pod_name, run_fingerprint};
use crate::goal::message::{StepOutcome, humanize};
use crate::kinds::goal::*;
use crate::reasons;
use crate::{conditions, duration};

impl Planner<'_> {
    pub(super) fn start_attempt(&mut self, u: usize, attempt: i32) {
        let run = &self.runs[u];
        let step = run.step;
        let role = self.status.steps[u]
            .role
            .clone()
            .unwrap_or_else(|| "builder".into());
        let Some(runtime) = self.runtime(step, &role) else {
            let message = format!(
                "step {} has no runtime image: set spec.defaults.runtime.image or the step's runtime.image",
                step.name
            );
            if self.condition(
                conditions::PROGRESSING,
                false,
                reasons::MISSING_RUNTIME,
                &message,
            ) {
                self.event(true, reasons::MISSING_RUNTIME, message.clone());
            }
            self.status.message = Some(message);
            return;
        };
        let timeout = self.timeout(step);
        let template = self.pod_template(step, &role);
        // The platform enforces a read-only role's boundary, not the prompt.
        let read_only = crate::roles::role(self.input.swarm, &role).read_only;
        let instructions =
            crate::goal::instructions::compose(self.input.name, &run.name, &role, self.input.swarm);
        let lands = self.lands(u, attempt, read_only);
        let entry = &mut self.status.steps[u];
        let new_attempt = entry.attempts < attempt;
        entry.attempts = attempt;
        entry.phase = StepPhase::Running;
        entry.pod_name = Some(pod_name(self.input.name, u, attempt));
        entry.fingerprint = Some(run_fingerprint(run));
        entry.next_retry_time = None;
        entry.finished_at = None;
        if new_attempt {
            entry.started_at = Some(self.now.clone());
            entry.message = None;
        }
        self.actions.push(Action::CreatePod(Box::new(StepRun {
            step: u,
            name: run.name.clone(),
            action: run.action(),
            item: run.item.map(String::from),
            attempt,
            role,
            runtime,
            timeout,
            read_only,
            instructions,
            template,
            lands,
        })));
        if new_attempt {
            self.step_progress(
                u,
                reasons::STEP_STARTED,
                format!("step {} attempt {attempt} started", run.name),
            );
        }
        let started = self.status.steps[u]
            .started_at
            .as_ref()
            .map_or(self.input.now, |t| t.0);
        self.requeue_at(duration::later(started, timeout));
        // The same attempt's pod again while its name is another owner's: the refusal
        // stays the one condition (the controller looks again with backoff), not a
        // StepRunning that the next refusal overwrites, many times a second.
        if new_attempt {
            self.running(u);
        } else if let Some(at) = self.name_taken_recheck() {
            self.requeue_at(at);
        } else {
            self.running(u);
        }
    }

    /// Where attempt `attempt` of run `u` lands its work: a run that writes, of a goal
    /// with a git workspace whose runs do not make one chain (they may run side by side).
    fn lands(&self, u: usize, attempt: i32, read_only: bool) -> Option<super::LandsOn> {
        let git = self.input.spec.workspace.as_ref()?.git.as_ref()?;
        if read_only || super::graph::is_chain(self.runs) {
            return None;
        }
        let checks = self
            .input
            .swarm
            .and_then(|s| s.coordination.as_ref()?.merge.as_ref())
            .map(|policy| policy.checks.clone())
            .unwrap_or_default();
        Some(super::LandsOn {
            branch: crate::goal::land::run_branch(self.input.name, &self.runs[u].name, attempt),
            onto: git
                .branch
                .clone()
                .unwrap_or_else(|| crate::workspace::default_branch(self.input.name)),
            checks,
        })
    }

    /// While `Progressing` says the step pod's name is taken, when to try its create
    /// again: as long after now as the refusal has lasted (so each try waits about
    /// twice as long as the one before), from 1 s to a minute.
    fn name_taken_recheck(&self) -> Option<jiff::Timestamp> {
        const FIRST: std::time::Duration = std::time::Duration::from_secs(1);
        const LONGEST: std::time::Duration = std::time::Duration::from_secs(60);
        let refused = self.status.conditions.iter().find(|c| {
            c.type_ == conditions::PROGRESSING
                && c.status == "False"
                && c.reason == reasons::NAME_TAKEN
        })?;
        let lasted = self
            .input
            .now
            .duration_since(refused.last_transition_time.0)
            .unsigned_abs();
        Some(duration::later(
            self.input.now,
            lasted.clamp(FIRST, LONGEST),
        ))
    }

    /// Run `u` runs (or waits out its backoff): the goal is Running, unless a step out
    /// of retries holds it paused while the runs still going finish.
    pub(super) fn running(&mut self, u: usize) {
        if self.holding {
            return;
        }
        if self.status.phase != Some(GoalPhase::Running) {
            self.status.phase = Some(GoalPhase::Running);
        }
        self.status.started_at.get_or_insert(self.now.clone());
        self.status.message = None;
        let name = &self.runs[u].name;
        self.condition(
            conditions::PROGRESSING,
            true,
            reasons::STEP_RUNNING,
            &format!("step {name} is running"),
        );
        if self.paused_reason().is_some() && !self.input.spec.paused {
            self.condition(conditions::PAUSED, false, reasons::RUNNING, "");
        }
    }

    pub(super) fn any_running(&self) -> bool {
        self.status
            .steps
            .iter()
            .any(|s| s.phase == StepPhase::Running)
    }

    /// Records run `u` as done, in the same status write that counts it: its entry is
    /// its checkpoint.
    pub(super) fn complete_step(&mut self, u: usize, result: Option<String>) {
        let name = self.runs[u].name.clone();
        let entry = &mut self.status.steps[u];
        entry.phase = StepPhase::Succeeded;
        entry.result = result;
        entry.finished_at.get_or_insert(self.now.clone());
        entry.next_retry_time = None;
        entry.message = None;
        self.status.completed_steps = self
            .status
            .steps
            .iter()
            .filter(|s| s.phase == StepPhase::Succeeded)
            .count() as i32;
        self.step_progress(u, reasons::STEP_SUCCEEDED, format!("step {name} succeeded"));
        let next = self.next_after(u);
        self.wake_overseer(u, "succeeded", next);
    }

    /// What run `u`'s success lets start, in words for its overseer.
    fn next_after(&self, u: usize) -> String {
        let freed: Vec<&str> = self
            .runs
            .iter()
            .enumerate()
            .filter(|(v, run)| run.after.contains(&u) && !self.done(*v) && self.ready(*v))
            .map(|(_, run)| run.name.as_str())
            .collect();
        match freed.as_slice() {
            [] if self.all_done() => "the goal succeeded".into(),
            [] => "other steps are still to finish".into(),
            [one] => format!("step {one} starts"),
            many => format!("steps {} start", many.join(", ")),
        }
    }

    /// `effort: high` with an overseer: tell it every step outcome.
    fn wake_overseer(&mut self, u: usize, outcome: &'static str, next: String) {
        if self.input.spec.effort != Effort::High || self.input.spec.overseer.is_none() {
            return;
        }
        let entry = &self.status.steps[u];
        self.actions.push(Action::WakeOverseer(StepOutcome {
            position: u + 1,
            steps: self.runs.len(),
            step: entry.name.clone(),
            attempt: entry.attempts,
            outcome,
            next,
        }));
    }

    pub(super) fn fail_step(&mut self, u: usize, phase: StepPhase, message: String) {
        let step = self.runs[u].step;
        let max_retries = step
            .max_retries
            .unwrap_or(self.input.spec.defaults.max_retries)
            .max(0);
        let entry = &mut self.status.steps[u];
        entry.phase = phase;
        entry.finished_at = Some(self.now.clone());
        entry.message = Some(message.clone());
        let used = entry.attempts.saturating_sub(entry.attempt_base);
        let attempts = entry.attempts;
        let name = self.runs[u].name.clone();
        let outcome = match phase {
            StepPhase::TimedOut => "timed out",
            _ => "failed",
        };
        if used <= max_retries {
            let delay = backoff(&self.input.spec.defaults.backoff, used);
            let at = duration::later(self.input.now, delay);
            entry.next_retry_time = Some(Time(at));
            self.wake_overseer(u, outcome, format!("retry in {}", humanize(delay)));
            self.step_warning(
                u,
                reasons::STEP_FAILED,
                format!(
                    "step {name} attempt {attempts}: {message}; retry in {}",
                    humanize(delay)
                ),
            );
            self.running(u);
            self.requeue_at(at);
            return;
        }
        entry.next_retry_time = None;
        let next = match self.input.spec.on_failure {
            OnFailure::Pause => "the goal is paused",
            OnFailure::Fail => "the goal failed",
        };
        self.wake_overseer(u, outcome, next.into());
        let summary = format!("step {name} failed after {used} attempts: {message}");
        self.status.message = Some(summary.clone());
        match self.input.spec.on_failure {
            OnFailure::Pause => {
                // The runs still going finish and are recorded; none starts.
                self.holding = true;
                self.status.phase = Some(GoalPhase::Paused);
                self.condition(conditions::PAUSED, true, reasons::STEP_FAILED, &summary);
                self.condition(
                    conditions::PROGRESSING,
                    false,
                    reasons::STEP_FAILED,
                    &summary,
                );
                self.step_warning(u, reasons::STEP_FAILED, summary.clone());
                self.actions.push(Action::Notify {
                    reason: NotifyReason::Paused,
                    message: summary,
                    step: None,
                });
            }
            OnFailure::Fail => {
                self.stop_the_others(u);
                self.status.phase = Some(GoalPhase::Failed);
                self.status.finished_at = Some(self.now.clone());
                self.condition(
                    conditions::PROGRESSING,
                    false,
                    reasons::STEP_FAILED,
                    &summary,
                );
                self.event(true, reasons::GOAL_FAILED, summary.clone());
                self.actions.push(Action::Notify {
                    reason: NotifyReason::Failed,
                    message: summary,
                    step: None,
                });
            }
        }
    }

    /// The goal failed at run `u`: every other run still going is stopped, its entry
    /// saying why.
    fn stop_the_others(&mut self, u: usize) {
        let message = format!("stopped: step {} failed the goal", self.runs[u].name);
        for (v, entry) in self.status.steps.iter_mut().enumerate() {
            if v == u || entry.phase != StepPhase::Running {
                continue;
            }
            entry.phase = StepPhase::Failed;
            entry.finished_at = Some(self.now.clone());
            entry.message = Some(message.clone());
            if let Some(name) = entry.pod_name.clone() {
                self.actions.push(Action::DeletePod { name });
            }
        }
    }

    pub(super) fn succeed(&mut self) {
        if self.status.phase == Some(GoalPhase::Succeeded) {
            return;
        }
        self.status.phase = Some(GoalPhase::Succeeded);
        self.status.started_at.get_or_insert(self.now.clone());
        self.status.finished_at = Some(self.now.clone());
        self.status.message = None;
        let message = format!("all {} steps succeeded", self.runs.len());
        self.condition(conditions::PROGRESSING, false, reasons::SUCCEEDED, &message);
        self.condition(conditions::PAUSED, false, reasons::SUCCEEDED, "");
        self.event(false, reasons::GOAL_SUCCEEDED, message.clone());
        self.actions.push(Action::Notify {
            reason: NotifyReason::Succeeded,
            message,
            step: None,
        });
    }
}
