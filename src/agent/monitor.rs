//! A swarm's fleet monitor, as pure decisions: which agent is a swarm's monitor (its
//! role, and a name the swarm gave a member of that role: rights by ownership, as for
//! overseers), when its next patrol is due, and the summary of the fleet it is woken
//! with. The summary holds names, roles, states and counts the operator knows, never
//! text a member or a third party wrote (their progress is read with `overseer ps`).

use std::time::Duration;

use jiff::Timestamp;
use kube::{Resource, ResourceExt};

use super::oversight::swarm_owner;
use crate::kinds::agent::{ActivityState, Agent, AgentPhase, AgentSpec, AgentStatus, LoopSpec};
use crate::kinds::swarm::Swarm;
use crate::roles::member_name;

/// The role whose member patrols its swarm.
pub const ROLE: &str = "monitor";
/// How often a monitor patrols when its loop does not say.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(600);
/// The shortest patrol interval taken.
pub const MIN_EVERY: Duration = Duration::from_secs(60);

/// Whether `agent` is `swarm`'s monitor: role `monitor`, controlled by the swarm, and
/// named as the swarm names a member of that role (its spec's, or one it spawned).
/// An agent of another owner that names the role gets no fleet and no rights.
pub fn monitors(swarm: &Swarm, agent: &Agent) -> bool {
    let owned =
        swarm_owner(agent).is_some_and(|o| Some(o.uid.as_str()) == swarm.meta().uid.as_deref());
    let name = agent.name_any();
    let swarm_name = swarm.name_any();
    let listed = swarm
        .spec
        .agents
        .iter()
        .any(|m| m.role == ROLE && member_name(&swarm_name, &m.name) == name);
    let spawned = swarm.status.as_ref().is_some_and(|s| {
        s.spawned
            .iter()
            .any(|e| e.role == ROLE && member_name(&swarm_name, &e.name) == name)
    });
    owned && agent.spec.role == ROLE && (listed || spawned)
}

/// Whether `member` is one of `swarm`'s members a monitor watches (controlled by it).
pub fn in_fleet(swarm: &Swarm, member: &Agent) -> bool {
    swarm_owner(member).is_some_and(|o| Some(o.uid.as_str()) == swarm.meta().uid.as_deref())
        && member.meta().deletion_timestamp.is_none()
}

/// How often the monitor patrols (`loop.monitorEvery`).
pub fn every(spec: &LoopSpec) -> Duration {
    spec.monitor_every
        .as_ref()
        .map_or(DEFAULT_EVERY, |e| e.get())
        .max(MIN_EVERY)
}

/// When the next patrol is due: `every` after the last one, or after the current
/// attempt started (a monitor that just started has nothing to compare yet).
pub fn next_patrol(status: &AgentStatus, every: Duration) -> Option<Timestamp> {
    let from = status
        .patrol
        .as_ref()
        .and_then(|p| p.last_time.clone())
        .or_else(|| status.start_time.clone())?;
    Some(crate::duration::after(&from, every))
}

/// A member's state, as its monitor is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FleetState {
    /// At or above its memory share (`loop.memoryEscalatesAbove`).
    OverBudget,
    /// Idle or waiting on a prompt for longer than its `loop.idleAfter`.
    Stalled,
    Blocked,
    /// Waiting on a permission or question prompt.
    Waiting,
    Working,
    Idle,
    Starting,
    Suspended,
    Done,
    Failed,
}

impl FleetState {
    fn label(self) -> &'static str {
        match self {
            FleetState::OverBudget => "over budget",
            FleetState::Stalled => "stalled",
            FleetState::Blocked => "blocked",
            FleetState::Waiting => "waiting on a prompt",
            FleetState::Working => "working",
            FleetState::Idle => "idle",
            FleetState::Starting => "starting",
            FleetState::Suspended => "suspended",
            FleetState::Done => "done",
            FleetState::Failed => "failed",
        }
    }
}

/// `member`'s state by its status, judged on its effective `spec`, at `now`.
pub fn state_of(member: &Agent, spec: &AgentSpec, now: Timestamp) -> FleetState {
    let status = member.status.clone().unwrap_or_default();
    match status.phase {
        Some(AgentPhase::Done) => return FleetState::Done,
        Some(AgentPhase::Failed) => return FleetState::Failed,
        Some(AgentPhase::Blocked) => return FleetState::Blocked,
        Some(AgentPhase::Suspended) => return FleetState::Suspended,
        Some(AgentPhase::Running) => {}
        Some(AgentPhase::Pending) | None => return FleetState::Starting,
    }
    let Some(activity) = status.current_activity() else {
        return FleetState::Starting;
    };
    let share = i64::from(spec.loop_.memory_escalates_above);
    let over = activity.resources.as_ref().is_some_and(|r| {
        r.memory_limit_bytes
            .is_some_and(|limit| share > 0 && limit > 0 && r.memory_bytes * 100 >= limit * share)
    });
    if over {
        return FleetState::OverBudget;
    }
    let since = activity.since.as_ref().map_or(now, |t| t.0);
    let long = now.duration_since(since).as_secs() >= spec.loop_.idle_after.get().as_secs() as i64;
    match activity.state {
        ActivityState::Idle | ActivityState::Waiting if long => FleetState::Stalled,
        ActivityState::Waiting => FleetState::Waiting,
        ActivityState::Idle | ActivityState::Exited => FleetState::Idle,
        ActivityState::Working => FleetState::Working,
        ActivityState::Starting => FleetState::Starting,
    }
}

/// One member, as the summary lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct FleetMember {
    pub name: String,
    pub role: String,
    pub state: FleetState,
    pub open_escalations: usize,
}

/// The fleet summary a monitor is woken with: the members by state (the states that
/// need a look first), their open escalations, and what to do about them.
pub fn summary(swarm: &str, patrol: i64, fleet: &[FleetMember], now: Timestamp) -> String {
    let mut fleet = fleet.to_vec();
    fleet.sort_by(|a, b| (a.state, &a.name).cmp(&(b.state, &b.name)));
    let mut text = format!(
        "[overseer] Patrol #{patrol} of swarm {swarm} at {now}: {} members.\n",
        fleet.len()
    );
    let mut states: Vec<FleetState> = fleet.iter().map(|m| m.state).collect();
    states.dedup();
    for state in states {
        let names: Vec<String> = fleet
            .iter()
            .filter(|m| m.state == state)
            .map(|m| format!("{} ({})", m.name, m.role))
            .collect();
        text.push_str(&format!(
            "- {} ({}): {}\n",
            state.label(),
            names.len(),
            names.join(", ")
        ));
    }
    let escalated: Vec<String> = fleet
        .iter()
        .filter(|m| m.open_escalations > 0)
        .map(|m| format!("{} {}", m.name, m.open_escalations))
        .collect();
    if !escalated.is_empty() {
        text.push_str(&format!("Open escalations: {}.\n", escalated.join(", ")));
    }
    text.push_str(
        "Look closer with `overseer ps`, `overseer peek NAME`, `overseer escalations NAME` and `overseer claims`. \
         Raise what needs the overseer with `overseer escalate --severity warning --reason \"<who and what>\"`; then wait for the next patrol.",
    );
    text
}

#[cfg(test)]
#[path = "monitor_tests.rs"]
mod tests;
