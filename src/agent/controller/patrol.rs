//! The Agent controller's side of a swarm's fleet monitor (the decisions are
//! `agent/monitor.rs`): the members it watches, found by index, each with the pod the
//! operator verified as that member's (its Role lets it peek those, no other); the
//! monitors a member's change concerns; and the patrol, typed between the monitor's
//! turns, recorded before it is typed so that a stop never types one twice.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, ResourceExt};

use super::context::{AgentContext, owning_swarm, resolve};
use super::delivery::{Courier, type_input, update_status};
use crate::Result;
use crate::agent::monitor::{self, FleetMember};
use crate::agent::oversight::swarm_owner;
use crate::agent::pod::Overseen;
use crate::kinds::agent::{Agent, AgentSpec};
use crate::kinds::swarm::Swarm;
use crate::kubernetes::guard::Guarded;
use crate::kubernetes::index::Index;
use crate::reasons;

/// Notes `agent` in `members` under the swarm that controls it, if any, and in
/// `monitors` too when its role is the monitor's.
pub(super) fn note_member((members, monitors): (&Index, &Index), agent: &Agent) {
    if let (Some(namespace), Some(swarm)) = (&agent.metadata.namespace, swarm_owner(agent)) {
        members.note(namespace, &swarm.name, &agent.name_any());
        if agent.spec.role == monitor::ROLE {
            monitors.note(namespace, &swarm.name, &agent.name_any());
        }
    }
}

/// The cached members of `swarm` (controlled by it), but `except`.
fn members(
    store: &Store<Guarded<Agent>>,
    index: &Index,
    swarm: &Swarm,
    except: &str,
) -> Vec<Agent> {
    let namespace = swarm.namespace().unwrap_or_default();
    index
        .named(&namespace, &swarm.name_any())
        .into_iter()
        .filter(|name| name != except)
        .filter_map(|name| store.get(&ObjectRef::new(&name).within(&namespace)))
        .filter_map(|cached| cached.0.as_ref().ok().cloned())
        .filter(|member| monitor::in_fleet(swarm, member))
        .collect()
}

/// The monitors of the swarm `changed` belongs to, from the `monitors` index, those
/// the cache still shows as monitors (a member's change may change what its monitor's
/// Role names).
pub(super) fn monitors_of(
    store: &Store<Guarded<Agent>>,
    monitors: &Index,
    changed: &Agent,
) -> Vec<ObjectRef<Guarded<Agent>>> {
    let (Some(namespace), Some(swarm)) = (changed.namespace(), swarm_owner(changed)) else {
        return Vec::new();
    };
    monitors
        .named(&namespace, &swarm.name)
        .into_iter()
        .filter(|name| *name != changed.name_any())
        .map(|name| ObjectRef::new(&name).within(&namespace))
        .filter(|found| {
            store.get(found).is_some_and(|cached| {
                cached
                    .0
                    .as_ref()
                    .is_ok_and(|a| a.spec.role == monitor::ROLE)
            })
        })
        .collect()
}

/// The fleet `agent` watches as its swarm's monitor, each member with its verified
/// pod; None when it is no swarm's monitor.
pub(super) async fn fleet(
    ac: &AgentContext,
    pods: &Api<Pod>,
    agent: &Agent,
    swarm: Option<&Swarm>,
) -> Result<Option<Vec<Overseen>>> {
    let Some(swarm) = swarm.filter(|s| monitor::monitors(s, agent)) else {
        return Ok(None);
    };
    let mut fleet = Vec::new();
    for member in members(&ac.store, &ac.members, swarm, &agent.name_any()) {
        fleet.push(Overseen {
            pod: super::verified_pod(ac, pods, &member).await?,
            agent: member.name_any(),
        });
    }
    fleet.sort();
    Ok(Some(fleet))
}

/// Whether a patrol is due now, or how long until it is (None: nothing to wait for:
/// not a monitor, not started, or due but inside a turn, whose end brings it back).
pub(super) fn due(
    agent: &Agent,
    spec: &AgentSpec,
    monitor: bool,
    now: Timestamp,
) -> Option<std::result::Result<(), Duration>> {
    let status = agent.status.as_ref().filter(|_| monitor)?;
    let next = monitor::next_patrol(status, monitor::every(&spec.loop_))?;
    if next > now {
        return Some(Err(next.duration_since(now).unsigned_abs()));
    }
    status.between_turns().then_some(Ok(()))
}

impl Courier<'_> {
    /// Types the fleet summary into the monitor `agent`, once per patrol: the patrol is
    /// recorded first. False when it could not be typed (said in an Event; the next
    /// patrol comes after the interval).
    pub(super) async fn patrol(&self, agent: &Agent) -> Result<bool> {
        let ac = self.ac;
        let Some(swarm) = owning_swarm(&ac.swarms, agent).filter(|s| monitor::monitors(s, agent))
        else {
            return Ok(true);
        };
        let now = Timestamp::now();
        let name = agent.name_any();
        let fleet: Vec<FleetMember> = members(&ac.store, &ac.members, &swarm, &name)
            .iter()
            .map(|member| {
                // Judged on its effective spec, as its own reconciles judge it.
                let spec =
                    resolve(&ac.swarms, member).map_or_else(|_| member.spec.clone(), |e| e.spec);
                let status = member.status.clone().unwrap_or_default();
                FleetMember {
                    name: member.name_any(),
                    role: member.spec.role.clone(),
                    state: monitor::state_of(member, &spec, now),
                    open_escalations: status.open_escalations().count(),
                }
            })
            .collect();
        let written = update_status(&ac.versions, self.agents, &name, |status| {
            let mut status = status.clone();
            let patrol = status.patrol.get_or_insert_default();
            patrol.patrols += 1;
            patrol.last_time = Some(Time(now));
            Some(status)
        })
        .await?;
        let count = written
            .and_then(|a| a.status?.patrol)
            .map_or(1, |p| p.patrols);
        let text = monitor::summary(&swarm.name_any(), count, &fleet, now);
        let ids = [format!("patrol-{count}")];
        let outcome = type_input(&ac.ctx, self.pods, agent, &text, &ids).await?;
        ac.ctx.metrics.count_delivery("patrol", &outcome);
        if let Err(reason) = outcome {
            let message = format!("patrol #{count} was not typed: {reason}");
            ac.ctx
                .publish_about(agent, true, reasons::PATROL_FAILED, &message);
            return Ok(false);
        }
        Ok(true)
    }
}
