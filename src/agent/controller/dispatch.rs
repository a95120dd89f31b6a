//! Deliveries run out of the reconcile. A reconcile that finds something to type
//! (a nudge or wake its plan asks for, the inbox, a claim an operator left in flight)
//! hands it to a task of its own and returns: an exec that hangs holds that task, a
//! slot of its namespace (src/delivery/slots.rs) and the agent it is for, never one of the
//! controller's reconcile slots. So no number of hanging pods in one namespace delays
//! another namespace's pods, steps or sends.
//!
//! One task at a time per agent: while it runs, the agent's own reconciles wait (they
//! would write the status the task is writing), and when it ends it asks for the
//! agent to be reconciled again: at once, or after the time to retry a delivery that
//! did not go through.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, ResourceExt};
use tracing::warn;

use super::context::AgentContext;
use super::delivery::Courier;
use crate::Result;
use crate::agent::candidate::LoopTimes;
use crate::kinds::agent::{Agent, AgentSpec, Delivery};

/// The longest one task runs: a few deliveries, each with its exec's own deadline.
/// One that runs past it is left as an operator that stopped would leave it (its claim
/// is settled by the next task, under the same id).
const DEADLINE: Duration = Duration::from_secs(150);

/// What a delivery task does for one agent.
#[derive(Default)]
pub(super) struct Work {
    /// A nudge or wake its plan asked for, with the effective spec it is judged on.
    pub(super) deliver: Option<(Delivery, AgentSpec)>,
    /// Deliver its inbox (whether its pod is ready).
    pub(super) inbox: Option<bool>,
    /// Settle a delivery claimed by an operator that stopped before recording it.
    pub(super) settle: bool,
    /// Tell its overseer of the escalations it has not heard of.
    pub(super) tell: bool,
    /// Route its outbox into its swarm mates' mailboxes.
    pub(super) route: bool,
    /// Its mailbox: the notice of new mail, read and expired mail.
    pub(super) mailroom: bool,
    /// Its patrol, as its swarm's monitor: the fleet summary.
    pub(super) patrol: bool,
}

impl Work {
    pub(super) fn is_empty(&self) -> bool {
        self.deliver.is_none()
            && self.inbox.is_none()
            && !self.settle
            && !self.tell
            && !self.route
            && !self.mailroom
            && !self.patrol
    }
}

/// Starts `work` for `agent` in a task once its namespace has an exec slot. False,
/// and nothing started, when the agent has a task already or its namespace has too
/// many deliveries waiting: the caller looks again a moment later.
pub(super) fn start(ac: &Arc<AgentContext>, agent: Agent, work: Work) -> bool {
    let namespace = agent.namespace().unwrap_or_default();
    let name = agent.name_any();
    let Some(mut task) = ac.dispatch.begin(&namespace, &name) else {
        return false;
    };
    let task_ac = ac.clone();
    let slots = namespace.clone();
    // A task that never starts is dropped with its guard, which frees the agent.
    ac.ctx.deliveries.spawn(&slots, async move {
        // The whole guard is the task's, to drop when it ends.
        let task = &mut task;
        task.after = match tokio::time::timeout(DEADLINE, run(&task_ac, agent, work)).await {
            Ok(Ok(after)) => after,
            Ok(Err(error)) => {
                warn!(%namespace, agent = %name, %error, "a delivery failed; looked at again shortly");
                Some(crate::delivery::slots::RETRY)
            }
            Err(_) => {
                warn!(%namespace, agent = %name, "a delivery ran past its deadline; its claim is settled next");
                None
            }
        };
    })
}

/// Does `work`; returns when to reconcile the agent again (None: at once).
async fn run(ac: &AgentContext, mut agent: Agent, work: Work) -> Result<Option<Duration>> {
    let namespace = agent.namespace().unwrap_or_default();
    let agents: Api<Agent> = Api::namespaced(ac.ctx.client.clone(), &namespace);
    let pods: Api<Pod> = Api::namespaced(ac.ctx.client.clone(), &namespace);
    let courier = Courier {
        ac,
        agents: &agents,
        pods: &pods,
    };
    if work.settle {
        courier.settle(&agent).await?;
        return Ok(None);
    }
    let mut after: Option<Duration> = None;
    if let Some((kind, spec)) = &work.deliver {
        let delivered = match kind {
            Delivery::Nudge => courier.nudge(&agent, spec).await?,
            Delivery::Wake => courier.wake(&agent).await?,
        };
        if !delivered {
            // Retried at the next heartbeat; the cooldown has not started.
            after = Some(LoopTimes::of(&spec.loop_).delivery_retry());
        }
    }
    if work.tell && !courier.tell(&agent).await? {
        // Told again at the next heartbeat, as a wake that did not go through.
        let retry = LoopTimes::of(&agent.spec.loop_).delivery_retry();
        after = Some(after.map_or(retry, |a| a.min(retry)));
    }
    if work.route {
        super::mailroom::route(ac, &agents, &agent).await?;
    }
    if work.mailroom && !super::mailroom::settle(ac, &agents, &pods, &agent).await? {
        let retry = LoopTimes::of(&agent.spec.loop_).delivery_retry();
        after = Some(after.map_or(retry, |a| a.min(retry)));
    }
    if work.patrol {
        courier.patrol(&agent).await?;
    }
    if let Some(pod_ready) = work.inbox
        && let Some(retry) = courier.inbox(&mut agent, pod_ready).await?
    {
        after = Some(after.map_or(retry, |a| a.min(retry)));
    }
    Ok(after)
}
