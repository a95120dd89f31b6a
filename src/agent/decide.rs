//! The Agent's decisions as pure functions: the premature-stop rule (the candidate
//! truth table of DESIGN.md) and the plan (agent, its pod, its overseer, now → new
//! status, actions, when to look again). The reconciler only executes them.

use crate::conditions::{PlannedEvent, Recording};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as KubeCondition;
use std::ops::ControlFlow;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::candidate::*;
use crate::delivery::escalation;
use crate::kinds::agent::*;
use crate::kinds::agent_pod::{AgentPod, PodPhase, pod_name};
use crate::reasons;
use crate::{conditions, duration};

/// Stalled pods are replaced this many times; the next stall blocks the agent.
pub const STALL_LIMIT: i32 = 3;

/// A person's loop switch (`overseer loop add|remove` sets it): `on` or `off` wins over
/// `spec.loop.enabled`. An annotation, not a spec edit, so that a GitOps tool that
/// owns the spec sees no drift and does not undo it.
pub const LOOP_ANNOTATION: &str = "overseer.dev/loop";

/// Whether the loop is on: the annotation's `on` or `off` when set, else the spec's.
/// Any other annotation value is ignored.
pub fn loop_enabled(annotation: Option<&str>, spec_enabled: bool) -> bool {
    match annotation {
        Some("on") => true,
        Some("off") => false,
        _ => spec_enabled,
    }
}
/// The longest wait before a lost pod is replaced.
const MAX_REPLACE_BACKOFF: Duration = Duration::from_secs(300);

/// How long a pod may wait on its image before the agent reports `ImageNotPulled`
/// (Degraded in Argo CD): long enough for a large image's first pull and a registry's
/// brief outage, short enough that a wrong image name is seen before anyone asks.
pub const IMAGE_PATIENCE: Duration = Duration::from_secs(180);

pub struct Input<'a> {
    pub name: &'a str,
    pub generation: Option<i64>,
    pub spec: &'a AgentSpec,
    pub status: Option<&'a AgentStatus>,
    /// This agent's pods that are not being deleted.
    pub pods: &'a [AgentPod],
    pub overseer: OverseerState,
    /// How long the pod of an agent whose loop ended is kept (None: until the Agent goes).
    pub pod_retention: Option<Duration>,
    pub now: Timestamp,
}

impl Delivery {
    /// Its name in metrics and delivery ids.
    pub fn label(self) -> &'static str {
        match self {
            Delivery::Wake => "wake",
            Delivery::Nudge => "nudge",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create the pod of `attempt` (and the agent's ServiceAccount and Role).
    CreatePod {
        attempt: i64,
    },
    DeletePod {
        name: String,
    },
    /// Deliver a wake or nudge; the loop status is recorded only once it is confirmed.
    Deliver(Delivery),
    /// Tell the webhook (`spec.notify`, else the swarm's) how the agent's loop ended:
    /// `event` is Done, Blocked or Released, `reason` the InLoop condition's reason.
    Notify {
        event: &'static str,
        reason: &'static str,
    },
    Event {
        warning: bool,
        reason: &'static str,
        message: String,
    },
    /// An escalation opened: a Warning Event `Escalated` and its count.
    EscalationOpened(Escalation),
    /// Tell the webhook of an escalation (its `notifiedTime` is in the new status).
    NotifyEscalation(Escalation),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub status: AgentStatus,
    pub actions: Vec<Action>,
    /// When a time-based rule can fire next (the heartbeat); None: wait for a change.
    pub requeue_after: Option<Duration>,
}

/// The wait before replacing a lost pod: 2^attempt seconds, at most five minutes.
fn replace_backoff(attempt: i64) -> Duration {
    Duration::from_secs(1u64 << attempt.clamp(1, 9)).min(MAX_REPLACE_BACKOFF)
}

struct Builder<'a> {
    input: &'a Input<'a>,
    status: AgentStatus,
    actions: Vec<Action>,
    now_time: Time,
    /// Earliest time a rule of the heartbeat can fire.
    next_rule: Option<Timestamp>,
    /// Earliest time a pod must be replaced or removed (not bound by the heartbeat).
    next_replace: Option<Timestamp>,
}

impl conditions::Recording for Builder<'_> {
    fn stamped(&mut self) -> (&mut Vec<KubeCondition>, Option<i64>, &Time) {
        (
            &mut self.status.conditions,
            self.input.generation,
            &self.now_time,
        )
    }

    fn queue(&mut self, event: PlannedEvent) {
        let PlannedEvent {
            warning,
            reason,
            message,
        } = event;
        self.actions.push(Action::Event {
            warning,
            reason,
            message,
        });
    }
}

impl Builder<'_> {
    fn fire_at(&mut self, at: Timestamp) {
        self.next_rule = Some(self.next_rule.map_or(at, |t| t.min(at)));
    }

    /// An ended agent's pods go `pod_retention` after the loop ended (the InLoop
    /// condition turned False for it; without a loop, the exit's time); the status
    /// keeps the outcome.
    fn expire_pods(&mut self) {
        let Some(retention) = self.input.pod_retention else {
            return;
        };
        let loop_ended = self
            .status
            .conditions
            .iter()
            .find(|c| {
                c.type_ == conditions::IN_LOOP
                    && c.status == "False"
                    && c.reason != reasons::LOOP_DISABLED
            })
            .map(|c| c.last_transition_time.clone());
        let exited = self.status.current_exit().and_then(|e| e.time.clone());
        let Some(ended) = loop_ended.or(exited) else {
            return;
        };
        if self.input.pods.is_empty() {
            return;
        }
        let expires = duration::after(&ended, retention);
        if expires <= self.input.now {
            self.delete_pods();
        } else {
            self.next_replace = Some(self.next_replace.map_or(expires, |t| t.min(expires)));
        }
    }

    fn delete_pods(&mut self) {
        for pod in self.input.pods {
            self.actions.push(Action::DeletePod {
                name: pod.name.clone(),
            });
        }
    }

    /// Ends in a terminal phase; the first time with an Event.
    fn finish(&mut self, phase: AgentPhase, reason: &'static str, message: String, warning: bool) {
        let changed = self.status.phase != Some(phase);
        self.status.phase = Some(phase);
        self.set_loop_active(false, reason, &message);
        if !changed {
            return;
        }
        self.event(warning, reason, message);
        if self.input.spec.notify.is_some() {
            let event = match (phase, reason) {
                (_, reasons::RELEASED) => "Released",
                (AgentPhase::Blocked, _) => "Blocked",
                _ => "Done",
            };
            self.actions.push(Action::Notify { event, reason });
        }
    }

    /// Records `attempt` as the agent's current one: its pod name, the runtime it runs
    /// with, and the start of the agent's first attempt.
    fn record_attempt(&mut self, attempt: i64) {
        self.status.attempt = Some(attempt);
        self.status.pod_name = Some(pod_name(self.input.name, attempt));
        self.status.runtime = self.input.spec.runtime.name;
        self.status
            .start_time
            .get_or_insert_with(|| self.now_time.clone());
    }

    fn set_loop_active(&mut self, active: bool, reason: &str, message: &str) {
        if self.input.spec.loop_.enabled || self.status.loop_.is_some() {
            self.status
                .loop_
                .get_or_insert_with(LoopStatus::default)
                .active = active;
        }
        if self.input.spec.loop_.enabled {
            self.condition(conditions::IN_LOOP, active, reason, message);
        } else {
            self.condition(
                conditions::IN_LOOP,
                false,
                reasons::LOOP_DISABLED,
                "loop.enabled is false",
            );
        }
    }
}

/// The plan for one agent.
pub fn plan(input: &Input) -> Plan {
    let mut b = Builder {
        input,
        status: input.status.cloned().unwrap_or_default(),
        actions: Vec::new(),
        now_time: Time(input.now),
        next_rule: None,
        next_replace: None,
    };
    b.status.observed_generation = input.generation;
    decide(&mut b);
    escalations(&mut b);
    let before = input.status.map_or(&[][..], |s| &s.conditions[..]);
    crate::health::settle_agent(
        input.name,
        &mut b.status,
        before,
        input.generation,
        &b.now_time,
    );
    let now = input.now;
    let times = LoopTimes::of(&input.spec.loop_);
    let wait =
        |at: Timestamp| -> Duration { at.duration_since(now).try_into().unwrap_or(Duration::ZERO) };
    // The heartbeat: wake exactly when the next time-based rule can fire, never more
    // often than `interval`; with `interval: off` only events bring the agent back.
    let rule = times
        .interval
        .zip(b.next_rule)
        .map(|(interval, at)| wait(at).max(interval));
    let replace = b.next_replace.map(wait);
    let requeue_after = match (rule, replace) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Plan {
        status: b.status,
        actions: b.actions,
        requeue_after,
    }
}

/// Opens, settles and reports the agent's escalations on the status just decided.
fn escalations(b: &mut Builder) {
    let limits = escalation::Limits::of(b.input.spec);
    let outcome = escalation::step(&mut b.status, &limits, b.input.now);
    for opened in outcome.opened {
        b.actions.push(Action::EscalationOpened(opened));
    }
    for due in outcome.notify {
        b.actions.push(Action::NotifyEscalation(due));
    }
    if let Some(at) = outcome.next_at {
        b.fire_at(at);
    }
}

fn decide(b: &mut Builder) {
    overseer_consent(b);
    // Each step either decides (Break) or hands on to the next.
    let _ = decide_in_order(b);
}

/// `OverseerAccepted`: False while the agent `spec.overseer` names has not agreed to
/// oversee this one; True once it agrees, only if it had been False (an agent whose
/// overseer accepts it at once carries no such condition).
fn overseer_consent(b: &mut Builder) {
    let refused = b.input.overseer == OverseerState::NotAccepted;
    let known = b
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == conditions::OVERSEER_ACCEPTED);
    if refused {
        let overseer = b.input.spec.overseer.clone().unwrap_or_default();
        let message = format!(
            "spec.overseer: agent {overseer} has not agreed to oversee this agent (its spec.oversees does not list it, and they are not of one swarm): it is not woken about this agent and gets no rights over it"
        );
        b.condition(
            conditions::OVERSEER_ACCEPTED,
            false,
            reasons::OVERSEER_NOT_ACCEPTED,
            &message,
        );
    } else if known && b.input.spec.overseer.is_some() {
        b.condition(
            conditions::OVERSEER_ACCEPTED,
            true,
            reasons::OVERSEER_ACCEPTED,
            "its overseer agreed to oversee it",
        );
    }
}

/// The rules in order: the first that applies decides the agent's state.
fn decide_in_order(b: &mut Builder) -> ControlFlow<()> {
    let times = LoopTimes::of(&b.input.spec.loop_);
    adopt_newer_attempt(b);
    suspended(b)?;
    exited(b)?;
    ended_by_operator(b)?;
    session_timed_out(b, &times)?;
    let pod = current_pod(b)?;
    pod_ready(b, pod)?;
    stalled(b, pod, &times)?;
    act_on_verdict(b, &times);
    ControlFlow::Continue(())
}

/// A pod is created before the status that records its attempt, so a pod of a later
/// attempt than recorded is ours from before a crash: adopt it, never make a twin.
fn adopt_newer_attempt(b: &mut Builder) {
    let newest = b.input.pods.iter().map(|p| p.attempt).max().unwrap_or(0);
    if newest > b.status.attempt.unwrap_or(0) {
        b.record_attempt(newest);
    }
}

/// `spec.suspend`: the pod goes, the state stays.
fn suspended(b: &mut Builder) -> ControlFlow<()> {
    if !b.input.spec.suspend {
        return ControlFlow::Continue(());
    }
    b.delete_pods();
    if b.status.phase != Some(AgentPhase::Suspended) {
        b.event(
            false,
            reasons::SUSPENDED,
            "suspended (its spec.suspend, or its swarm suspended or ended): pod stopped, state kept".into(),
        );
    }
    b.status.phase = Some(AgentPhase::Suspended);
    b.condition(
        conditions::READY,
        false,
        reasons::SUSPENDED,
        "suspended: its spec.suspend, or its swarm suspended or ended",
    );
    b.set_loop_active(
        false,
        reasons::SUSPENDED,
        "suspended: its spec.suspend, or its swarm suspended or ended",
    );
    ControlFlow::Break(())
}

/// The agent ran `overseer loop done` or `block`, or its overseer released it.
fn exited(b: &mut Builder) -> ControlFlow<()> {
    let Some(exit) = b.status.current_exit().cloned() else {
        return ControlFlow::Continue(());
    };
    let reason = exit.reason.clone().unwrap_or_default();
    let (phase, why, message) = match exit.outcome {
        ExitOutcome::Done => (
            AgentPhase::Done,
            reasons::DONE,
            format!("the agent ran `overseer loop done`: {reason}"),
        ),
        ExitOutcome::Blocked => (
            AgentPhase::Blocked,
            reasons::BLOCKED,
            format!("the agent ran `overseer loop block`: {reason}"),
        ),
        ExitOutcome::Released => (
            AgentPhase::Done,
            reasons::RELEASED,
            format!("its overseer ran `overseer loop release`: {reason}"),
        ),
    };
    b.finish(phase, why, message, false);
    b.expire_pods();
    ControlFlow::Break(())
}

/// Blocked or Failed by the operator stays so: the pod is kept for a person to look
/// at, for `pod_retention`. A phase that came from an exit ends with the exit
/// (`overseer loop add`).
fn ended_by_operator(b: &mut Builder) -> ControlFlow<()> {
    let ended = matches!(
        b.status.phase,
        Some(AgentPhase::Blocked | AgentPhase::Failed | AgentPhase::Done)
    ) && !ended_by_exit(&b.status);
    if ended {
        b.expire_pods();
        ControlFlow::Break(())
    } else {
        ControlFlow::Continue(())
    }
}

/// `loop.sessionTimeout` after the session's start: the pod goes, the agent is Blocked.
fn session_timed_out(b: &mut Builder, times: &LoopTimes) -> ControlFlow<()> {
    let (Some(timeout), Some(start)) = (times.session_timeout, b.status.start_time.clone()) else {
        return ControlFlow::Continue(());
    };
    let start = &start;
    let spec = b.input.spec;
    if duration::after(start, timeout) <= b.input.now {
        b.delete_pods();
        b.condition(
            conditions::READY,
            false,
            reasons::SESSION_TIMEOUT,
            "loop.sessionTimeout passed",
        );
        let message = format!(
            "loop.sessionTimeout ({}) passed: pod stopped, state kept",
            spec.loop_
                .session_timeout
                .as_ref()
                .map_or("", |t| t.as_str())
        );
        b.finish(AgentPhase::Blocked, reasons::SESSION_TIMEOUT, message, true);
        return ControlFlow::Break(());
    }
    b.fire_at(duration::after(start, timeout));
    ControlFlow::Continue(())
}

/// The pod of the current attempt, when it runs: pods of earlier attempts go, and an
/// ended or missing pod is replaced.
fn current_pod<'a>(b: &mut Builder<'a>) -> ControlFlow<(), &'a AgentPod> {
    let input = b.input;
    let attempt = b.status.attempt.unwrap_or(0);
    let mut current = None;
    for pod in input.pods {
        if pod.attempt == attempt && attempt > 0 && current.is_none() {
            current = Some(pod);
        } else {
            b.actions.push(Action::DeletePod {
                name: pod.name.clone(),
            });
        }
    }
    let pod = match current {
        Some(pod) if pod.phase == PodPhase::Ended => {
            b.actions.push(Action::DeletePod {
                name: pod.name.clone(),
            });
            b.condition(
                conditions::READY,
                false,
                reasons::POD_LOST,
                &format!("pod {} ended", pod.name),
            );
            b.event(
                true,
                reasons::POD_LOST,
                format!("pod {} ended; it will be replaced", pod.name),
            );
            None
        }
        other => other,
    };
    match pod {
        Some(pod) => ControlFlow::Continue(pod),
        None => {
            replace_pod(b, attempt);
            ControlFlow::Break(())
        }
    }
}

/// Why the pod is not ready: `ImageNotPulled` once it has waited on its image for
/// `IMAGE_PATIENCE` (the agent looks again then), else `PodNotReady`.
fn not_ready(b: &mut Builder, pod: &AgentPod) -> (&'static str, String) {
    let not_ready = format!("pod {} is not ready", pod.name);
    let Some(wait) = &pod.image_wait else {
        return (reasons::POD_NOT_READY, not_ready);
    };
    let patience_ends = duration::later(wait.since, IMAGE_PATIENCE);
    if patience_ends > b.input.now {
        b.next_replace = Some(
            b.next_replace
                .map_or(patience_ends, |t| t.min(patience_ends)),
        );
        return (reasons::POD_NOT_READY, not_ready);
    }
    let waited = duration::since(b.input.now, Some(&Time(wait.since)));
    (
        reasons::IMAGE_NOT_PULLED,
        format!(
            "pod {} has waited {}s for its image ({}): check the runtime's image and pull secrets",
            pod.name,
            waited.as_secs(),
            wait.reason
        ),
    )
}

/// Running and Ready, or Pending until it is.
fn pod_ready(b: &mut Builder, pod: &AgentPod) -> ControlFlow<()> {
    let spec = b.input.spec;
    if !pod.ready || pod.phase != PodPhase::Running {
        b.status.phase = Some(AgentPhase::Pending);
        let (reason, message) = not_ready(b, pod);
        b.condition(conditions::READY, false, reason, &message);
        b.set_loop_active(spec.loop_.enabled, reason, "waiting for the pod");
        return ControlFlow::Break(());
    }
    b.status.phase = Some(AgentPhase::Running);
    b.condition(
        conditions::READY,
        true,
        reasons::POD_READY,
        &format!("pod {} is ready", pod.name),
    );
    b.set_loop_active(
        spec.loop_.enabled,
        reasons::RUNNING,
        "the agent must declare done or blocked",
    );
    ControlFlow::Continue(())
}

/// Stall: working, but nothing changed for `stallAfter`. Activity after a stall
/// clears the condition.
fn stalled(b: &mut Builder, pod: &AgentPod, times: &LoopTimes) -> ControlFlow<()> {
    let now = b.input.now;
    let activity = b.status.current_activity().cloned();
    if let Some(activity) = activity
        .as_ref()
        .filter(|a| a.state == ActivityState::Working)
    {
        let last = activity
            .last_activity_time
            .as_ref()
            .or(activity.since.as_ref());
        if let Some(last) = last {
            let stalled_at = duration::after(last, times.stall_after);
            if stalled_at <= now {
                stall(b, &pod.name);
                return ControlFlow::Break(());
            }
            b.fire_at(stalled_at);
        }
    }
    if activity.is_some() && conditions::is_true(&b.status.conditions, conditions::INACTIVE) {
        b.condition(
            conditions::INACTIVE,
            false,
            reasons::ACTIVITY_RESUMED,
            "the new pod reports activity",
        );
    }
    ControlFlow::Continue(())
}

/// The premature-stop rule's verdict, acted on: a delivery, a condition, or when to
/// look again.
fn act_on_verdict(b: &mut Builder, times: &LoopTimes) {
    let input = b.input;
    let spec = input.spec;
    let activity = b.status.current_activity().cloned();
    let status = b.status.clone();
    let verdict_input = candidate_input(spec, &status, input.overseer, input.now);
    let verdict = candidate(&verdict_input);
    if !matches!(verdict, Verdict::NotInLoop | Verdict::LoopEnded) {
        report_deadline(b, &verdict_input);
    }
    match verdict {
        Verdict::WakeOverseer => b.actions.push(Action::Deliver(Delivery::Wake)),
        Verdict::Nudge => b.actions.push(Action::Deliver(Delivery::Nudge)),
        Verdict::ObserveOnly => {
            let message = format!(
                "{}; no overseer online and autoNudgeWithoutOverseer is false",
                stop_reason(&verdict_input)
            );
            if b.condition(
                conditions::STOPPED_EARLY,
                true,
                reasons::STOPPED_EARLY,
                &message,
            ) {
                b.event(true, reasons::STOPPED_EARLY, message);
            }
        }
        Verdict::OverseerWaiting => {
            let message = format!(
                "{}; the wake is held while its overseer waits on a person",
                stop_reason(&verdict_input)
            );
            b.condition(
                conditions::STOPPED_EARLY,
                true,
                reasons::STOPPED_EARLY,
                &message,
            );
        }
        Verdict::NudgesExhausted => {
            b.condition(
                conditions::STOPPED_EARLY,
                true,
                reasons::NUDGES_EXHAUSTED,
                &stop_reason(&verdict_input),
            );
            let message = format!(
                "{} nudges and wakes delivered (loop.maxNudges) and the agent stopped again",
                verdict_input.nudges
            );
            b.finish(
                AgentPhase::Blocked,
                reasons::NUDGES_EXHAUSTED,
                message,
                true,
            );
        }
        Verdict::NotIdleLongEnough | Verdict::CoolingDown => {
            look_again(b, verdict, activity.as_ref(), &status, times)
        }
        Verdict::Busy => {
            b.condition(
                conditions::STOPPED_EARLY,
                false,
                reasons::ACTIVE,
                "the agent is working",
            );
        }
        Verdict::NotInLoop | Verdict::LoopEnded | Verdict::Waiting => {}
    }
}

/// When a verdict that waits can change: once the agent has idled `idleAfter`, or once
/// the cooldown after the last nudge or wake is over.
fn look_again(
    b: &mut Builder,
    verdict: Verdict,
    activity: Option<&Activity>,
    status: &AgentStatus,
    times: &LoopTimes,
) {
    let at = match verdict {
        Verdict::NotIdleLongEnough => activity
            .and_then(|a| a.since.as_ref())
            .map(|since| duration::after(since, times.idle_after)),
        _ => {
            let loop_status = status.loop_.clone().unwrap_or_default();
            [loop_status.last_nudge_time, loop_status.last_wake_time]
                .into_iter()
                .flatten()
                .max_by_key(|t| t.0)
                .map(|last| duration::after(&last, times.cooldown))
        }
    };
    if let Some(at) = at {
        b.fire_at(at);
    }
}

/// `loop.reportEvery`: the `Unresponsive` condition, and when it can next turn true.
/// The wake or nudge itself comes from the candidate rule.
fn report_deadline(b: &mut Builder, input: &CandidateInput) {
    let Some(every) = input.report_every else {
        if b.status
            .conditions
            .iter()
            .any(|c| c.type_ == conditions::UNRESPONSIVE)
        {
            b.condition(
                conditions::UNRESPONSIVE,
                false,
                reasons::REPORT_NOT_REQUIRED,
                "loop.reportEvery is not set",
            );
        }
        return;
    };
    if input.unresponsive() {
        let message = format!(
            "no progress report (`overseer loop progress`) within loop.reportEvery ({}s)",
            every.as_secs()
        );
        if b.condition(
            conditions::UNRESPONSIVE,
            true,
            reasons::NO_PROGRESS_REPORT,
            &message,
        ) {
            b.event(true, reasons::NO_PROGRESS_REPORT, message);
        }
        return;
    }
    b.condition(
        conditions::UNRESPONSIVE,
        false,
        reasons::PROGRESS_REPORTED,
        "progress reported within loop.reportEvery",
    );
    let now = b.input.now;
    b.fire_at(duration::later(
        now,
        every.saturating_sub(input.unreported_for),
    ));
}

/// The terminal phase came from an exit (done, block, release), not from the operator.
fn ended_by_exit(status: &AgentStatus) -> bool {
    status.conditions.iter().any(|c| {
        c.type_ == conditions::IN_LOOP
            && matches!(
                c.reason.as_str(),
                reasons::DONE | reasons::BLOCKED | reasons::RELEASED
            )
    })
}

/// No current pod: create the next attempt, after a backoff when one was lost.
fn replace_pod(b: &mut Builder, attempt: i64) {
    let resuming = b.status.phase == Some(AgentPhase::Suspended);
    if attempt > 0 && !resuming {
        let lost_at = b
            .status
            .conditions
            .iter()
            .find(|c| {
                c.type_ == conditions::READY
                    && c.status == "False"
                    && matches!(c.reason.as_str(), reasons::POD_LOST | reasons::STALLED)
            })
            .map(|c| c.last_transition_time.clone());
        b.status.phase = Some(AgentPhase::Pending);
        let Some(lost_at) = lost_at else {
            let message = "the agent's pod is gone; it will be replaced";
            b.condition(conditions::READY, false, reasons::POD_LOST, message);
            b.event(true, reasons::POD_LOST, message.into());
            b.next_replace = Some(duration::after(
                &b.now_time.clone(),
                replace_backoff(attempt),
            ));
            return;
        };
        let at = duration::after(&lost_at, replace_backoff(attempt));
        if at > b.input.now {
            b.next_replace = Some(at);
            return;
        }
    }
    let next = attempt.saturating_add(1);
    b.record_attempt(next);
    b.status.phase = Some(AgentPhase::Pending);
    let message = format!("pod of attempt {next} created");
    b.condition(conditions::READY, false, reasons::POD_CREATED, &message);
    b.set_loop_active(
        b.input.spec.loop_.enabled,
        reasons::POD_CREATED,
        "waiting for the pod",
    );
    b.actions.push(Action::CreatePod { attempt: next });
}

fn stall(b: &mut Builder, pod: &str) {
    let times = LoopTimes::of(&b.input.spec.loop_);
    let stalls = b.status.loop_.as_ref().map_or(0, |l| l.stalls);
    let message = format!(
        "working with no activity change for {}s (loop.stallAfter)",
        times.stall_after.as_secs()
    );
    b.condition(conditions::INACTIVE, true, reasons::NO_ACTIVITY, &message);
    if stalls >= STALL_LIMIT {
        let message = format!("{message}; the pod was already replaced {stalls} times");
        b.finish(AgentPhase::Blocked, reasons::STALL_LIMIT, message, true);
        return;
    }
    b.status
        .loop_
        .get_or_insert_with(LoopStatus::default)
        .stalls = stalls.saturating_add(1);
    b.actions.push(Action::DeletePod {
        name: pod.to_string(),
    });
    b.condition(conditions::READY, false, reasons::STALLED, &message);
    b.status.phase = Some(AgentPhase::Pending);
    b.event(
        true,
        reasons::STALLED,
        format!("{message}: replacing pod {pod}"),
    );
    b.next_replace = Some(duration::after(
        &b.now_time.clone(),
        replace_backoff(b.status.attempt.unwrap_or(1)),
    ));
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
