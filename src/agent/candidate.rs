//! The premature-stop rule of DESIGN.md as one pure function: whether an agent in the
//! loop stopped too early (a candidate), and whether its overseer is woken or the
//! agent nudged.

use std::time::Duration;

use jiff::Timestamp;

use crate::duration::{self, SpecDuration};
use crate::kinds::agent::*;

/// The agent's overseer, as the candidate rule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverseerState {
    /// No overseer is set.
    Unset,
    /// Set, and its pod is ready to take input.
    Ready,
    /// Set, but missing or its pod is not ready.
    Offline,
    /// Set, but that agent has not agreed to oversee this one (`oversight::accepts`):
    /// as if offline, and said in a condition.
    NotAccepted,
    /// Set and ready, but its CLI asks a person something: a wake typed now would
    /// answer that question, so it is held until the question is gone.
    WaitingOnPerson,
}

/// Everything the premature-stop rule looks at.
#[derive(Debug, Clone, Copy)]
pub struct CandidateInput {
    pub loop_enabled: bool,
    /// An exit (`overseer loop done|block`) is recorded for the current attempt.
    pub exit_recorded: bool,
    /// The current attempt's activity (None: nothing reported yet).
    pub activity: Option<ActivityState>,
    /// How long the activity has been in its state.
    pub in_state_for: Duration,
    pub idle_after: Duration,
    /// The cooldown since the last delivered nudge or wake has passed (or none was delivered).
    pub cooldown_over: bool,
    pub nudges: i32,
    pub max_nudges: i32,
    pub overseer: OverseerState,
    pub auto_nudge_without_overseer: bool,
    /// `loop.reportEvery`: None, no progress reports are required.
    pub report_every: Option<Duration>,
    /// How long since the agent last reported progress (or its pod became ready).
    pub unreported_for: Duration,
}

/// How a candidate stopped: idle or exited for `idleAfter`, else silent (no progress
/// report) for `reportEvery`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Idle,
    Exited,
    Unresponsive,
}

impl Stop {
    /// The word the texts use for it.
    pub fn word(self) -> &'static str {
        match self {
            Stop::Idle => "idle",
            Stop::Exited => "exited",
            Stop::Unresponsive => "unresponsive",
        }
    }
}

impl CandidateInput {
    fn stopped_for_idle_after(&self) -> bool {
        matches!(
            self.activity,
            Some(ActivityState::Idle | ActivityState::Exited)
        ) && self.in_state_for >= self.idle_after
    }

    /// It has not reported progress for `loop.reportEvery`.
    pub fn unresponsive(&self) -> bool {
        self.report_every
            .is_some_and(|every| self.unreported_for >= every)
    }

    /// How it stopped, for a candidate: idle or exited comes first, being what a
    /// person acts on.
    pub fn stop(&self) -> Stop {
        match self.activity {
            Some(ActivityState::Exited) if self.stopped_for_idle_after() => Stop::Exited,
            _ if self.stopped_for_idle_after() || !self.unresponsive() => Stop::Idle,
            _ => Stop::Unresponsive,
        }
    }

    /// How long it has been stopped, and the setting that makes that too long.
    pub fn stopped_for(&self) -> (Duration, Duration, &'static str) {
        match (self.stop(), self.report_every) {
            (Stop::Unresponsive, Some(every)) => (self.unreported_for, every, "reportEvery"),
            _ => (self.in_state_for, self.idle_after, "idleAfter"),
        }
    }
}

/// What the premature-stop rule decides for one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    NotInLoop,
    /// The agent ended its loop itself.
    LoopEnded,
    /// A human or permission prompt is pending: never steamroll it.
    Waiting,
    /// Starting, working, or nothing reported yet.
    Busy,
    /// Idle or exited, but not for `idleAfter` yet.
    NotIdleLongEnough,
    CoolingDown,
    /// A candidate with no nudges left: the agent is Blocked.
    NudgesExhausted,
    /// A candidate: wake its overseer.
    WakeOverseer,
    /// A candidate: nudge it directly.
    Nudge,
    /// A candidate nobody can act on: observe only.
    ObserveOnly,
    /// A candidate whose overseer waits on a person: its wake is held.
    OverseerWaiting,
}

impl Verdict {
    pub fn is_candidate(self) -> bool {
        matches!(
            self,
            Verdict::WakeOverseer
                | Verdict::Nudge
                | Verdict::ObserveOnly
                | Verdict::OverseerWaiting
        )
    }
}

/// The premature-stop rule (DESIGN.md, Agent): one row of the truth table.
pub fn candidate(input: &CandidateInput) -> Verdict {
    if !input.loop_enabled {
        return Verdict::NotInLoop;
    }
    if input.exit_recorded {
        return Verdict::LoopEnded;
    }
    match input.activity {
        Some(ActivityState::Waiting) => return Verdict::Waiting,
        _ if input.stopped_for_idle_after() || input.unresponsive() => {}
        Some(ActivityState::Idle | ActivityState::Exited) => return Verdict::NotIdleLongEnough,
        Some(ActivityState::Starting | ActivityState::Working) | None => return Verdict::Busy,
    }
    if !input.cooldown_over {
        return Verdict::CoolingDown;
    }
    if input.nudges >= input.max_nudges {
        return Verdict::NudgesExhausted;
    }
    match input.overseer {
        OverseerState::Ready => Verdict::WakeOverseer,
        OverseerState::WaitingOnPerson => Verdict::OverseerWaiting,
        OverseerState::Unset | OverseerState::Offline | OverseerState::NotAccepted
            if input.auto_nudge_without_overseer =>
        {
            Verdict::Nudge
        }
        OverseerState::Unset | OverseerState::Offline | OverseerState::NotAccepted => {
            Verdict::ObserveOnly
        }
    }
}

/// The candidate rule's input for an agent as it stands.
pub fn candidate_input(
    spec: &AgentSpec,
    status: &AgentStatus,
    overseer: OverseerState,
    now: Timestamp,
) -> CandidateInput {
    let times = LoopTimes::of(&spec.loop_);
    let activity = status.current_activity();
    let loop_status = status.loop_.clone().unwrap_or_default();
    let last_delivery = [&loop_status.last_nudge_time, &loop_status.last_wake_time]
        .into_iter()
        .flatten()
        .max_by_key(|t| t.0);
    let attempt_ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == crate::conditions::READY && c.status == "True")
        .map(|c| &c.last_transition_time);
    let last_report = [
        activity.and_then(|a| a.progress_time.as_ref()),
        attempt_ready,
    ]
    .into_iter()
    .flatten()
    .max_by_key(|t| t.0);
    CandidateInput {
        loop_enabled: spec.loop_.enabled,
        exit_recorded: status.current_exit().is_some(),
        activity: activity.map(|a| a.state),
        in_state_for: duration::since(now, activity.and_then(|a| a.since.as_ref())),
        idle_after: times.idle_after,
        cooldown_over: last_delivery
            .is_none_or(|t| duration::since(now, Some(t)) >= times.cooldown),
        nudges: loop_status.nudges,
        max_nudges: spec.loop_.max_nudges,
        overseer,
        auto_nudge_without_overseer: spec.loop_.auto_nudge_without_overseer,
        report_every: times.report_every,
        unreported_for: duration::since(now, last_report),
    }
}

/// Why the agent counts as stopped, in words (no agent output is quoted).
pub fn stop_reason(input: &CandidateInput) -> String {
    let (stopped_for, limit, setting) = input.stopped_for();
    let what = match input.stop() {
        Stop::Unresponsive => "no progress report",
        stop => stop.word(),
    };
    format!(
        "{what} for {}s ({setting} {}s) without `overseer loop done|block`",
        stopped_for.as_secs(),
        limit.as_secs()
    )
}

/// The loop settings as durations (the schema guarantees the patterns).
pub struct LoopTimes {
    /// None: `interval: off`, no time-based checks.
    pub interval: Option<Duration>,
    pub idle_after: Duration,
    pub cooldown: Duration,
    pub stall_after: Duration,
    pub session_timeout: Option<Duration>,
    pub report_every: Option<Duration>,
}

/// When a nudge or wake that was not delivered is tried again with `interval: off`
/// (there is no heartbeat to wait for then).
const DELIVERY_RETRY_WITHOUT_HEARTBEAT: Duration = Duration::from_secs(15);

impl LoopTimes {
    /// When a nudge or wake that was not delivered is tried again: at the next
    /// heartbeat (its cooldown has not started).
    pub fn delivery_retry(&self) -> Duration {
        self.interval.unwrap_or(DELIVERY_RETRY_WITHOUT_HEARTBEAT)
    }

    pub fn of(spec: &LoopSpec) -> LoopTimes {
        LoopTimes {
            interval: duration::heartbeat(spec.interval.get()),
            idle_after: spec.idle_after.get(),
            cooldown: spec.cooldown.get(),
            stall_after: spec.stall_after.get(),
            session_timeout: spec.session_timeout.as_ref().map(SpecDuration::get),
            report_every: spec.report_every.as_ref().map(SpecDuration::get),
        }
    }
}
