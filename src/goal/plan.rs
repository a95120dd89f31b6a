//! The Goal's plan as one pure function: (goal, its step pods, the other goals, now)
//! → the new status and the actions to take. The reconciler only executes it.

use std::ops::ControlFlow;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::dependencies::{DependencyState, GoalSummary, dependency_state};
use super::message::{StepOutcome, humanize};
use super::roles::{Performer, performer};
use crate::api::RuntimeSpec;
use crate::kinds::goal::*;
use crate::reasons;
use crate::template::PodTemplate;
use crate::{conditions, duration};

mod attempts;

/// Annotation whose new value resumes a paused goal.
pub const RESUME_ANNOTATION: &str = "overseer.dev/resume";
/// A step's result is at most this long (the termination message limit).
pub const MAX_RESULT_BYTES: usize = 4096;

/// Phase of an observed pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
}

/// What the reconciler saw of one step pod.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPod {
    pub name: String,
    pub step: usize,
    /// The name of the step the pod was made for (its `overseer.dev/step` label).
    pub step_name: String,
    pub attempt: i32,
    pub phase: PodPhase,
    pub finished_at: Option<Timestamp>,
    /// The container's termination message.
    pub message: Option<String>,
    pub exit_code: Option<i32>,
    pub reason: Option<String>,
}

pub struct Input<'a> {
    pub name: &'a str,
    pub generation: Option<i64>,
    pub resume: Option<&'a str>,
    pub spec: &'a GoalSpec,
    pub status: Option<&'a GoalStatus>,
    pub pods: &'a [StepPod],
    pub goals: &'a [GoalSummary],
    /// The goal's swarm (`spec.swarm`), whose roles are templates for its steps.
    pub swarm: Option<&'a crate::swarm::SwarmSpec>,
    /// The notify step (index) whose webhook the operator has just sent: only then is
    /// it recorded complete, so a crash between the two sends it again, never loses it.
    pub notified: Option<usize>,
    /// How long a finished pod whose outcome the status holds is kept (None: always).
    pub pod_retention: Option<Duration>,
    pub now: Timestamp,
}

/// Why a notification is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum NotifyReason {
    Succeeded,
    Paused,
    Failed,
    /// A notify step of the goal.
    Step,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Action {
    /// Create the pod of `step`'s `attempt` (idempotent: the name is deterministic).
    CreatePod {
        step: usize,
        attempt: i32,
        role: String,
        runtime: RuntimeSpec,
        timeout: Duration,
        /// The step's role only reads: its workspace is mounted read-only.
        read_only: bool,
        /// What the step's agent is told besides its action (src/goal/instructions.rs).
        #[serde(skip)]
        instructions: String,
        /// The step's pod settings: its swarm's defaults and role, the goal's, its own.
        #[serde(skip_serializing_if = "PodTemplate::is_empty")]
        template: Box<PodTemplate>,
    },
    /// Stop a pod that ran past its deadline.
    DeletePod { name: String },
    /// Tell the webhook; a failure is an Event, never a failed goal.
    Notify {
        reason: NotifyReason,
        message: String,
        /// The notify step it is (for `NotifyReason::Step`): the plan stops there until
        /// the operator has sent it and plans again with `Input::notified`.
        step: Option<usize>,
    },
    Event {
        warning: bool,
        reason: &'static str,
        message: String,
        /// The step pod the Event is about, if any (its `related` object).
        pod: Option<String>,
        /// A step's progress (started, succeeded): `status.steps` records every one, so
        /// the controller may fold it into the goal's next Event (src/goal/progress.rs).
        progress: bool,
    },
    /// `effort: high`: wake the goal's overseer with a step's outcome.
    WakeOverseer(StepOutcome),
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Plan {
    pub status: GoalStatus,
    pub actions: Vec<Action>,
    /// When a time-based rule (deadline, backoff) next falls due.
    pub requeue_after: Option<Duration>,
}

struct Planner<'a> {
    input: &'a Input<'a>,
    status: GoalStatus,
    actions: Vec<Action>,
    requeue_after: Option<Duration>,
    now: Time,
}

pub fn plan(input: &Input) -> Plan {
    let mut planner = Planner {
        input,
        status: input.status.cloned().unwrap_or_default(),
        actions: Vec::new(),
        requeue_after: None,
        now: Time(input.now),
    };
    planner.run();
    planner.stop_strays();
    planner.expire_pods();
    let Planner {
        mut status,
        actions,
        requeue_after,
        ..
    } = planner;
    status.observed_generation = input.generation;
    status.progress = Some(format!(
        "{}/{}",
        status.completed_steps,
        input.spec.steps.len()
    ));
    status.current_step = input
        .spec
        .steps
        .get(status.completed_steps as usize)
        .map(|s| s.name.clone());
    let (ready, reason, message) = readiness(&status);
    conditions::set(
        &mut status.conditions,
        conditions::READY,
        ready,
        &reason,
        &message,
        input.generation,
        &Time(input.now),
    );
    let reading = crate::health::goal(&status);
    crate::health::set(
        &mut status.conditions,
        &reading,
        input.generation,
        &Time(input.now),
    );
    Plan {
        status,
        actions,
        requeue_after,
    }
}

/// The goal's `Ready` condition, for `kubectl wait` and GitOps tools: True once it
/// succeeded; else why not, from what says most: a spec conflict, a block (a deadlock,
/// a stalled predecessor), else the phase, with the progress as the message.
pub fn readiness(status: &GoalStatus) -> (bool, String, String) {
    let progress = format!("{} steps done", status.progress.as_deref().unwrap_or("0/0"));
    let holding = |type_: &str, wanted: &str| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status == wanted)
    };
    if let Some(conflict) = holding(conditions::PROGRESSING, "False")
        .filter(|c| c.reason == reasons::SPEC_CONFLICT)
        .or_else(|| holding(conditions::BLOCKED, "True"))
    {
        return (false, conflict.reason.clone(), conflict.message.clone());
    }
    let phase = match status.phase.unwrap_or(GoalPhase::Pending) {
        GoalPhase::Succeeded => return (true, reasons::SUCCEEDED.into(), progress),
        GoalPhase::Pending => reasons::PENDING,
        GoalPhase::Waiting => reasons::WAITING,
        GoalPhase::Running => reasons::RUNNING,
        GoalPhase::Paused => reasons::PAUSED,
        GoalPhase::Failed => reasons::FAILED,
    };
    (false, phase.into(), progress)
}

impl Planner<'_> {
    fn run(&mut self) {
        if let Some(conflict) = spec_conflict(self.input.spec, &self.status) {
            if self.condition(
                conditions::PROGRESSING,
                false,
                reasons::SPEC_CONFLICT,
                &conflict,
            ) {
                self.event(true, reasons::SPEC_CONFLICT, conflict);
            }
            return;
        }
        self.align_steps();
        self.resume();
        match self.status.phase {
            Some(GoalPhase::Failed) => return,
            Some(GoalPhase::Paused)
                if conditions::is_true(&self.status.conditions, conditions::PAUSED)
                    && self.paused_reason() == Some(reasons::STEP_FAILED) =>
            {
                return;
            }
            _ => {}
        }
        if !self.started() && !self.dependencies_ready() {
            return;
        }
        self.condition(conditions::BLOCKED, false, reasons::NOT_BLOCKED, "");
        self.advance();
    }

    fn started(&self) -> bool {
        self.status.completed_steps > 0 || self.status.steps.iter().any(|s| s.attempts > 0)
    }

    fn paused_reason(&self) -> Option<&str> {
        self.status
            .conditions
            .iter()
            .find(|c| c.type_ == conditions::PAUSED)
            .map(|c| c.reason.as_str())
    }

    /// One status entry per spec step; entries of steps not yet done follow the spec.
    fn align_steps(&mut self) {
        let steps = &self.input.spec.steps;
        let completed = self.status.completed_steps as usize;
        self.status.steps.truncate(steps.len());
        for (i, step) in steps.iter().enumerate().skip(completed) {
            // A step new at this position counts its attempts on from the pods made
            // there for another step (one removed or replaced), so its pods get names
            // of their own and it never takes another step's pod or result for its own.
            let others = self
                .input
                .pods
                .iter()
                .filter(|p| p.step == i && p.step_name != step.name)
                .map(|p| p.attempt)
                .max()
                .unwrap_or(0);
            match self.status.steps.get_mut(i) {
                Some(entry) if entry.name == step.name => {}
                Some(entry) => {
                    let after = others.max(entry.attempts);
                    *entry = StepStatus::pending_after(&step.name, after);
                }
                None => self
                    .status
                    .steps
                    .push(StepStatus::pending_after(&step.name, others)),
            }
        }
    }

    /// Deletes each finished pod `pod_retention` after it finished, once the status holds
    /// its outcome (every pod but the running attempt's), and comes back for the next.
    fn expire_pods(&mut self) {
        let Some(retention) = self.input.pod_retention else {
            return;
        };
        for pod in self.input.pods {
            let Some(finished) = pod.finished_at else {
                continue;
            };
            let awaited = self.status.steps.get(pod.step).is_some_and(|s| {
                s.name == pod.step_name
                    && s.attempts == pod.attempt
                    && s.phase == StepPhase::Running
            });
            if awaited {
                continue;
            }
            let expires = duration::later(finished, retention);
            if expires <= self.input.now {
                self.actions.push(Action::DeletePod {
                    name: pod.name.clone(),
                });
            } else {
                self.requeue_at(expires);
            }
        }
    }

    /// Asks every pod that still runs and is not the current attempt of the step in
    /// progress to stop, at every reconcile until it is gone: a timed-out attempt
    /// whose delete was lost (the operator stopped after asking once, or the request
    /// failed), or the pod of a step removed from the spec.
    fn stop_strays(&mut self) {
        let i = self.status.completed_steps as usize;
        let current = self
            .status
            .steps
            .get(i)
            .filter(|entry| entry.phase == StepPhase::Running)
            .map(|entry| (i, entry.attempts));
        for pod in self.input.pods {
            let live = matches!(pod.phase, PodPhase::Pending | PodPhase::Running);
            if !live || current == Some((pod.step, pod.attempt)) {
                continue;
            }
            let stop = Action::DeletePod {
                name: pod.name.clone(),
            };
            if !self.actions.contains(&stop) {
                self.actions.push(stop);
            }
        }
    }

    fn resume(&mut self) {
        let Some(token) = self.input.resume else {
            return;
        };
        if self.status.resume_token.as_deref() == Some(token) {
            return;
        }
        self.status.resume_token = Some(token.into());
        if self.status.phase != Some(GoalPhase::Paused)
            || self.paused_reason() != Some(reasons::STEP_FAILED)
        {
            return;
        }
        let i = self.status.completed_steps as usize;
        if let Some(step) = self.status.steps.get_mut(i) {
            step.attempt_base = step.attempts;
            step.phase = StepPhase::Pending;
            step.next_retry_time = None;
            step.message = Some("resumed with fresh attempts".into());
        }
        self.status.phase = Some(GoalPhase::Running);
        self.status.message = None;
        self.condition(
            conditions::PAUSED,
            false,
            reasons::RESUMED,
            "resumed from the checkpoint",
        );
        let name = self
            .input
            .spec
            .steps
            .get(i)
            .map(|s| s.name.as_str())
            .unwrap_or_default();
        self.event(
            false,
            reasons::RESUMED,
            format!("resumed at step {name} with fresh attempts"),
        );
    }

    /// `dependsOn`: true when every predecessor succeeded.
    fn dependencies_ready(&mut self) -> bool {
        match dependency_state(
            self.input.name,
            &self.input.spec.depends_on,
            self.input.goals,
        ) {
            DependencyState::Ready => true,
            state => {
                let (blocked, reason, message) = match state {
                    DependencyState::Deadlock(m) => (true, reasons::DEADLOCK, m),
                    DependencyState::Stalled(m) => (true, reasons::PREDECESSOR_STALLED, m),
                    DependencyState::Waiting(m) => (false, reasons::WAITING_FOR_PREDECESSOR, m),
                    DependencyState::Ready => unreachable!(),
                };
                if self.condition(conditions::BLOCKED, blocked, reason, &message) && blocked {
                    self.event(true, reason, message.clone());
                }
                self.condition(conditions::PROGRESSING, false, reasons::WAITING, &message);
                self.status.phase = Some(GoalPhase::Waiting);
                self.status.message = Some(message);
                false
            }
        }
    }

    /// Walks the steps from the checkpoint: records finished pods, starts the next.
    fn advance(&mut self) {
        let spec = self.input.spec;
        loop {
            let i = self.status.completed_steps as usize;
            let Some(step) = spec.steps.get(i) else {
                self.succeed();
                return;
            };
            if self.status.phase == Some(GoalPhase::Succeeded) {
                // Steps were appended to a finished goal: it runs again.
                self.status.phase = Some(GoalPhase::Running);
                self.status.finished_at = None;
            }
            let default_role = spec.defaults.role.as_deref();
            let next = match performer(step.role.as_deref(), &step.action, default_role) {
                Performer::Notify => self.notify_step(i, step),
                Performer::Role(role) => self.run_step(i, step, role),
            };
            if next.is_break() {
                return;
            }
        }
    }

    /// A notify step: the operator sends it (planned first as an action, then, once
    /// sent, recorded as done). Continue: go on with the next step.
    fn notify_step(&mut self, i: usize, step: &Step) -> ControlFlow<()> {
        if self.input.notified != Some(i) {
            self.actions.push(Action::Notify {
                reason: NotifyReason::Step,
                message: step.action.clone(),
                step: Some(i),
            });
            return ControlFlow::Break(());
        }
        let entry = &mut self.status.steps[i];
        entry.role = Some("notify".into());
        entry.fingerprint = Some(fingerprint(step));
        entry.started_at.get_or_insert(self.now.clone());
        self.complete_step(i, Some("notification sent by the operator".into()));
        ControlFlow::Continue(())
    }

    /// A step run as a pod by `role`. Continue: it succeeded, go on with the next step.
    fn run_step(&mut self, i: usize, step: &Step, role: String) -> ControlFlow<()> {
        self.status.steps[i].role = Some(role);
        self.adopt_newest_pod(i, step);
        let entry = &self.status.steps[i];
        let (attempt, phase) = (entry.attempts, entry.phase);
        let pods = self.input.pods;
        let pod = pods.iter().find(|p| p.step == i && p.attempt == attempt);
        match (phase, pod) {
            (StepPhase::Running, Some(pod)) => return self.follow_pod(i, step, pod),
            (StepPhase::Running, None) => {
                // Our own create is not visible yet, the pod was lost, or its name is
                // another owner's: create it again under the same deterministic name
                // (a twin is impossible) until the attempt's timeout, which holds
                // whether or not its pod ever ran.
                let started = self.status.steps[i].started_at.as_ref().map(|t| t.0);
                let deadline = started.map(|s| duration::later(s, self.timeout(step)));
                if deadline.is_some_and(|d| self.input.now >= d) {
                    let message = format!(
                        "attempt {attempt} ran past its {} timeout without a pod of its own",
                        humanize(self.timeout(step))
                    );
                    self.fail_step(i, StepPhase::TimedOut, message);
                    return ControlFlow::Break(());
                }
                self.start_attempt(i, attempt);
            }
            (StepPhase::Failed | StepPhase::TimedOut, _) => {
                let retry_at = self.status.steps[i].next_retry_time.as_ref().map(|t| t.0);
                match retry_at {
                    Some(at) if self.input.now < at => {
                        self.running(i);
                        self.requeue_at(at);
                    }
                    Some(_) if self.hold_for_pause() => {}
                    Some(_) => self.start_attempt(i, attempt.saturating_add(1)),
                    // Out of retries; only a resume (which resets the phase) continues.
                    None => {}
                }
            }
            (StepPhase::Pending | StepPhase::Succeeded, _) => {
                if !self.hold_for_pause() {
                    self.start_attempt(i, attempt.saturating_add(1));
                }
            }
        }
        ControlFlow::Break(())
    }

    /// Adopts a pod beyond the recorded attempts (a crash after creating one).
    fn adopt_newest_pod(&mut self, i: usize, step: &Step) {
        let pods = self.input.pods;
        let newest_pod = pods
            .iter()
            .filter(|p| p.step == i)
            .map(|p| p.attempt)
            .max()
            .unwrap_or(0);
        let entry = &mut self.status.steps[i];
        if newest_pod > entry.attempts {
            entry.fingerprint = Some(fingerprint(step));
            entry.attempts = newest_pod;
            entry.phase = StepPhase::Running;
            entry.pod_name = Some(pod_name(self.input.name, i, newest_pod));
            entry.started_at.get_or_insert(self.now.clone());
        }
    }

    /// The running attempt's pod: succeeded (Continue), failed, timed out, or running on.
    fn follow_pod(&mut self, i: usize, step: &Step, pod: &StepPod) -> ControlFlow<()> {
        match pod.phase {
            PodPhase::Succeeded => {
                let result = pod.message.as_deref().map(truncate_result);
                self.status.steps[i].finished_at = pod.finished_at.map(Time);
                self.complete_step(i, result);
                return ControlFlow::Continue(());
            }
            PodPhase::Failed => self.fail_step(i, StepPhase::Failed, failure_message(pod)),
            PodPhase::Pending | PodPhase::Running => {
                let timeout = self.timeout(step);
                let started = self.status.steps[i]
                    .started_at
                    .as_ref()
                    .map(|t| t.0)
                    .unwrap_or(self.input.now);
                let deadline = duration::later(started, timeout);
                if self.input.now >= deadline {
                    self.actions.push(Action::DeletePod {
                        name: pod.name.clone(),
                    });
                    let message = format!(
                        "attempt {} ran past its {} timeout",
                        pod.attempt,
                        humanize(timeout)
                    );
                    self.fail_step(i, StepPhase::TimedOut, message);
                } else {
                    self.running(i);
                    self.requeue_at(deadline);
                }
            }
        }
        ControlFlow::Break(())
    }

    /// `spec.paused`: no new step starts.
    fn hold_for_pause(&mut self) -> bool {
        if !self.input.spec.paused {
            if self.paused_reason() == Some(reasons::REQUESTED)
                && conditions::is_true(&self.status.conditions, conditions::PAUSED)
            {
                self.condition(
                    conditions::PAUSED,
                    false,
                    reasons::UNPAUSED,
                    "spec.paused was cleared",
                );
                self.event(
                    false,
                    reasons::UNPAUSED,
                    "spec.paused was cleared; continuing".into(),
                );
            }
            return false;
        }
        if self.condition(
            conditions::PAUSED,
            true,
            reasons::REQUESTED,
            "spec.paused is true: no new step starts",
        ) {
            self.event(
                false,
                reasons::PAUSED,
                "spec.paused is true: no new step starts".into(),
            );
        }
        self.condition(
            conditions::PROGRESSING,
            false,
            reasons::PAUSED,
            "spec.paused is true",
        );
        self.status.phase = Some(GoalPhase::Paused);
        true
    }

    /// The role of that name in the goal's swarm: a step of that role uses its template.
    fn swarm_role(&self, role: &str) -> Option<&crate::swarm::SwarmRole> {
        self.input.swarm?.roles.get(role)
    }

    /// The step's own runtime, then its swarm role's, then the goal's defaults, then
    /// the swarm's defaults.
    fn runtime(&self, step: &Step, role: &str) -> Option<RuntimeSpec> {
        let fallbacks = [
            self.swarm_role(role).and_then(|r| r.runtime.clone()),
            self.input.spec.defaults.runtime.clone(),
            self.input.swarm.and_then(|s| s.defaults.runtime.clone()),
        ];
        let runtime = fallbacks
            .into_iter()
            .flatten()
            .fold(step.runtime.clone().unwrap_or_default(), |r, f| r.or(&f));
        runtime.image.is_some().then_some(runtime)
    }

    /// The step's pod settings: the swarm's defaults, its swarm role's, the goal's,
    /// then its own.
    fn pod_template(&self, step: &Step, role: &str) -> PodTemplate {
        PodTemplate::layered([
            self.input
                .swarm
                .and_then(|s| s.defaults.pod_template.as_ref()),
            self.swarm_role(role).and_then(|r| r.pod_template.as_ref()),
            self.input.spec.pod_template.as_ref(),
            step.pod_template.as_ref(),
        ])
    }

    fn timeout(&self, step: &Step) -> Duration {
        step.timeout
            .as_ref()
            .unwrap_or(&self.input.spec.defaults.timeout)
            .get()
    }

    fn requeue_at(&mut self, at: Timestamp) {
        let after = at.duration_since(self.input.now);
        let after = Duration::try_from(after)
            .unwrap_or_default()
            .max(Duration::from_millis(100));
        self.requeue_after = Some(self.requeue_after.map_or(after, |r| r.min(after)));
    }

    fn condition(&mut self, type_: &str, status: bool, reason: &str, message: &str) -> bool {
        conditions::set(
            &mut self.status.conditions,
            type_,
            status,
            reason,
            message,
            self.input.generation,
            &self.now,
        )
    }

    fn event(&mut self, warning: bool, reason: &'static str, message: String) {
        self.actions.push(Action::Event {
            warning,
            reason,
            message,
            pod: None,
            progress: false,
        });
    }

    /// A Warning about step `i`, related to its current pod: Events of different
    /// attempts stay apart instead of being merged into one series.
    fn step_warning(&mut self, i: usize, reason: &'static str, message: String) {
        let pod = self.status.steps[i].pod_name.clone();
        self.actions.push(Action::Event {
            warning: true,
            reason,
            message,
            pod,
            progress: false,
        });
    }

    /// A Normal Event of step `i`'s progress, related to its current pod.
    fn step_progress(&mut self, i: usize, reason: &'static str, message: String) {
        let pod = self.status.steps[i].pod_name.clone();
        self.actions.push(Action::Event {
            warning: false,
            reason,
            message,
            pod,
            progress: true,
        });
    }
}

impl StepStatus {
    /// A step not started yet whose first attempt comes after `attempts` pods made at
    /// its position for other steps.
    fn pending_after(name: &str, attempts: i32) -> StepStatus {
        StepStatus {
            attempts,
            attempt_base: attempts,
            ..StepStatus::pending(name)
        }
    }

    fn pending(name: &str) -> StepStatus {
        StepStatus {
            name: name.into(),
            role: None,
            phase: StepPhase::Pending,
            attempts: 0,
            pod_name: None,
            started_at: None,
            finished_at: None,
            result: None,
            message: None,
            next_retry_time: None,
            attempt_base: 0,
            fingerprint: None,
        }
    }
}

/// A completed step that was edited or removed: the checkpoint would lie.
fn spec_conflict(spec: &GoalSpec, status: &GoalStatus) -> Option<String> {
    let completed = status.completed_steps as usize;
    if spec.steps.len() < completed {
        return Some(format!(
            "{completed} steps are completed but the spec now has {}: completed steps cannot be removed",
            spec.steps.len()
        ));
    }
    status
        .steps
        .iter()
        .take(completed)
        .zip(&spec.steps)
        .find_map(|(done, step)| {
            let edited = done.name != step.name
                || done
                    .fingerprint
                    .as_deref()
                    .is_some_and(|f| f != fingerprint(step));
            edited.then(|| {
                format!(
                    "step {} completed and cannot be edited; revert the edit or create a new Goal",
                    done.name
                )
            })
        })
}

/// Wait before the attempt after `failed_attempts` failures: initial × factor^(n-1), at most max.
pub fn backoff(backoff: &Backoff, failed_attempts: i32) -> Duration {
    let initial = backoff.initial.get();
    let max = backoff.max.get();
    let exponent = failed_attempts.saturating_sub(1).clamp(0, 30) as u32;
    let factor = (backoff.factor.max(1) as u32).saturating_pow(exponent);
    initial.saturating_mul(factor).min(max)
}

/// Deterministic pod name of a step attempt: a retried reconcile never makes a twin.
pub fn pod_name(goal: &str, step: usize, attempt: i32) -> String {
    let suffix = format!("-s{step}-a{attempt}");
    // Cut names end in a hash of the whole: two long goals sharing a beginning must
    // not share their step pods.
    format!("{}{suffix}", crate::api::fit_name(goal, 253 - suffix.len()))
}

/// Stable hash of a step's spec (FNV-1a over its JSON).
pub fn fingerprint(step: &Step) -> String {
    let json = serde_json::to_string(step).unwrap_or_default();
    format!("{:016x}", crate::api::fnv1a(json.as_bytes()))
}

/// A step's result cut to `MAX_RESULT_BYTES` at a character boundary.
fn truncate_result(message: &str) -> String {
    if message.len() <= MAX_RESULT_BYTES {
        return message.to_string();
    }
    let mut end = MAX_RESULT_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message[..end].to_string()
}

/// Why a step pod failed, in words: its exit code and the kubelet's reason.
fn failure_message(pod: &StepPod) -> String {
    let mut message = format!(
        "exit code {}",
        pod.exit_code.map_or("unknown".into(), |c| c.to_string())
    );
    if let Some(reason) = &pod.reason {
        message.push_str(&format!(" ({reason})"));
    }
    message
}
