//! The Goal's plan as one pure function: (goal, its step pods, the other goals, now)
//! → the new status and the actions to take. The reconciler only executes it. The
//! steps are a graph of runs (src/goal/plan/graph.rs); every run ready to go is
//! followed or started in one plan, up to `maxParallel` pods at once.

use crate::conditions::Recording;
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
use graph::Run;

mod attempts;
pub mod graph;
mod names;
mod outcome;
mod readiness;
mod record;
mod step;
mod upkeep;

use names::run_fingerprint;
pub use names::{fingerprint, pod_name};
pub use outcome::backoff;
use outcome::truncate_result;
use readiness::current_steps;
pub use readiness::readiness;

/// Annotation whose new value resumes a paused goal.
pub const RESUME_ANNOTATION: &str = "overseer.dev/resume";
pub use crate::step::MAX_RESULT_BYTES;

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

/// One attempt of one step as a pod runs it: decided by the plan, carried unchanged to
/// the pod built from it (src/goal/pod.rs).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepRun {
    /// The run's position (src/goal/plan/graph.rs): the step's, or its item's.
    pub step: usize,
    /// The step's name, or `<step>.<n>` for an item of a `forEach` step.
    pub name: String,
    /// What the agent is to do: the step's action, with its item in place.
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    pub attempt: i32,
    pub role: String,
    pub runtime: RuntimeSpec,
    pub timeout: Duration,
    /// The step's role only reads: its workspace is mounted read-only.
    pub read_only: bool,
    /// What the step's agent is told besides its action (src/goal/instructions.rs).
    #[serde(skip)]
    pub instructions: String,
    /// The step's pod settings: its swarm's defaults and role, the goal's, its own.
    #[serde(skip_serializing_if = "PodTemplate::is_empty")]
    pub template: PodTemplate,
    /// A run beside others that writes code lands its own branch (src/goal/land.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lands: Option<LandsOn>,
}

/// Where a run that lands works and lands: its own branch, the goal's branch, and
/// the checks of its swarm's merge queue.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LandsOn {
    pub branch: String,
    pub onto: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::kinds::merge::MergeCheck>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Action {
    /// Create the pod of a step's attempt (idempotent: the name is deterministic).
    CreatePod(Box<StepRun>),
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
    /// The runs of the goal's steps, in the order of the spec.
    runs: &'a [Run<'a>],
    /// Runs already followed or started in this plan: none is planned twice.
    visited: Vec<bool>,
    /// A step ran out of retries and paused the goal: runs that are running are
    /// followed to their end, and none starts.
    holding: bool,
    status: GoalStatus,
    actions: Vec<Action>,
    requeue_after: Option<Duration>,
    now: Time,
}

pub fn plan(input: &Input) -> Plan {
    let runs = graph::runs(input.spec);
    let mut planner = Planner {
        input,
        runs: runs.as_deref().unwrap_or(&[]),
        visited: Vec::new(),
        holding: false,
        status: input.status.cloned().unwrap_or_default(),
        actions: Vec::new(),
        requeue_after: None,
        now: Time(input.now),
    };
    match &runs {
        Ok(_) => planner.run(),
        Err(message) => planner.invalid(message),
    }
    planner.stop_strays();
    planner.expire_pods();
    let run_count = planner.runs.len();
    let Planner {
        mut status,
        actions,
        requeue_after,
        ..
    } = planner;
    status.observed_generation = input.generation;
    status.progress = Some(format!("{}/{run_count}", status.completed_steps));
    status.current_step = current_steps(&status);
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

impl Planner<'_> {
    fn run(&mut self) {
        if let Some(conflict) = self.spec_conflict() {
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
                self.holding = true;
            }
            _ => {}
        }
        if !self.started() && !self.dependencies_ready() {
            return;
        }
        self.condition(conditions::BLOCKED, false, reasons::NOT_BLOCKED, "");
        self.advance();
    }

    /// Steps that do not make a graph (stored before the API server's rules refused
    /// them): nothing runs until the spec is mended.
    fn invalid(&mut self, message: &str) {
        if self.condition(
            conditions::PROGRESSING,
            false,
            reasons::INVALID_SPEC,
            message,
        ) {
            self.event(true, reasons::INVALID_SPEC, message.to_string());
        }
        self.status.message = Some(message.to_string());
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

    /// Follows every run whose predecessors are done: records finished pods, starts
    /// what may start, again while a run completes (its successors may be ready).
    fn advance(&mut self) {
        let runs = self.runs;
        self.visited = vec![false; runs.len()];
        if self.status.phase == Some(GoalPhase::Succeeded) && !self.all_done() {
            // Steps were appended to a finished goal: it runs again.
            self.status.phase = Some(GoalPhase::Running);
            self.status.finished_at = None;
        }
        loop {
            let mut completed = false;
            for (u, run) in runs.iter().enumerate() {
                if self.visited[u] || self.done(u) || !self.ready(u) {
                    continue;
                }
                let default_role = self.input.spec.defaults.role.as_deref();
                let next = match performer(run.step.role.as_deref(), &run.action(), default_role) {
                    Performer::Notify => self.notify_step(u),
                    Performer::Role(role) => self.run_step(u, role),
                };
                completed |= next.is_continue();
                if self.status.phase == Some(GoalPhase::Failed) {
                    return;
                }
            }
            if !completed {
                break;
            }
        }
        if self.all_done() {
            self.succeed();
        }
    }

    fn done(&self, u: usize) -> bool {
        self.status.steps[u].phase == StepPhase::Succeeded
    }

    fn all_done(&self) -> bool {
        (0..self.runs.len()).all(|u| self.done(u))
    }

    /// Every run that run `u` waits for has succeeded.
    fn ready(&self, u: usize) -> bool {
        self.runs[u].after.iter().all(|&p| self.done(p))
    }
}
