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
mod record;
mod step;
mod upkeep;

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

/// The steps running (at most three by name, then how many more), else the first
/// not done: what `kubectl get` shows as Current.
fn current_steps(status: &GoalStatus) -> Option<String> {
    const NAMED: usize = 3;
    let running: Vec<&str> = status
        .steps
        .iter()
        .filter(|s| s.phase == StepPhase::Running)
        .map(|s| s.name.as_str())
        .collect();
    if running.is_empty() {
        return status
            .steps
            .iter()
            .find(|s| s.phase != StepPhase::Succeeded)
            .map(|s| s.name.clone());
    }
    let mut current = running[..running.len().min(NAMED)].join(",");
    if running.len() > NAMED {
        current.push_str(&format!(",+{}", running.len() - NAMED));
    }
    Some(current)
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
            item: None,
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

/// Stable hash of a run: its step's, and for an item, the step without its list (items
/// may be appended, as steps may) and the item.
fn run_fingerprint(run: &Run) -> String {
    let Some(item) = run.item else {
        return fingerprint(run.step);
    };
    let step = Step {
        for_each: None,
        ..run.step.clone()
    };
    let json = serde_json::to_string(&step).unwrap_or_default();
    format!(
        "{:016x}",
        crate::api::fnv1a(format!("{json}\n{item}").as_bytes())
    )
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

/// Why a step pod failed, in words: its exit code and the kubelet's reason, and why
/// its work did not land, when that was why.
fn failure_message(pod: &StepPod) -> String {
    let mut message = format!(
        "exit code {}",
        pod.exit_code.map_or("unknown".into(), |c| c.to_string())
    );
    if let Some(reason) = &pod.reason {
        message.push_str(&format!(" ({reason})"));
    }
    let landing = pod
        .message
        .as_deref()
        .filter(|m| m.starts_with(super::land::FAILED_PREFIX));
    if let Some(landing) = landing {
        message.push_str(&format!(": {}", truncate_result(landing)));
    }
    message
}
