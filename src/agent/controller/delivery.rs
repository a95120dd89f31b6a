//! What the Agent controller types into pods: inbox messages from `overseer send`,
//! in order and never twice; nudges into the agent's own pod; and one wake per
//! overseer for its batch of agents that stopped early. Each is claimed in status
//! before its exec and settled after it, so a stop in between neither loses nor
//! doubles it.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use tracing::{info, warn};

use crate::agent::candidate::{self, OverseerState};
use crate::agent::message;
use crate::agent::oversight;
use crate::agent::wake::wake_batch;
use crate::api::{self, CONTROLLER_MANAGER};
use crate::controller::Context;
use crate::delivery::claims;
use crate::delivery::escalation;
use crate::delivery::inbox::{self, SendStep};
use crate::kinds::agent::{
    Agent, AgentSpec, AgentStatus, Delivery, Escalation, InFlightDelivery, InboxMessage,
    LastMessage, LoopStatus, SendStatus,
};
use crate::kubernetes::fresh::Versions;
use crate::metrics::DeliveryLabels;
use crate::reasons;
use crate::{Error, Result};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::context::{AgentContext, operator_fields, overseer_state, owning_swarm, resolve};

/// What types into an agent's pod for the Agent reconciler: its inbox, the nudges
/// and wakes about it, and the settling of a delivery an operator left in flight. Each
/// is claimed in the agent's status before its exec and settled after it; the rest of
/// the reconciler reaches them only through this type.
pub(super) struct Courier<'a> {
    pub(super) ac: &'a AgentContext,
    pub(super) agents: &'a Api<Agent>,
    pub(super) pods: &'a Api<Pod>,
}

impl Courier<'_> {
    /// Delivers the agent's inbox in order, each message once: it is claimed in status
    /// before the exec, and an operator that stopped mid-delivery delivers the claim again
    /// under the same id, which the pod's shim confirms without typing it twice (or, when
    /// that pod is gone, reports it failed).
    /// Returns when to look again while a message waits for a pod.
    pub(super) async fn inbox(
        &self,
        agent: &mut Agent,
        pod_ready: bool,
    ) -> Result<Option<Duration>> {
        let (ac, agents, pods) = (self.ac, self.agents, self.pods);
        let ctx = &ac.ctx;
        let mut settled = None;
        loop {
            let status = agent.status.clone().unwrap_or_default();
            if inbox::claim_held_elsewhere(&status, settled) {
                warn!(seq = ?settled, "the inbox claim stays after it was settled: another field manager holds status.sends");
                return Ok(None);
            }
            let now = jiff::Timestamp::now();
            let (seq, from, outcome) = match inbox::next_send(
                &status,
                pod_ready,
                ctx.send_expiry,
                now,
            ) {
                SendStep::Idle => return Ok(None),
                SendStep::Wait { retry_after } => return Ok(Some(retry_after)),
                SendStep::Abandon { seq } => {
                    let from = status
                        .inbox
                        .iter()
                        .find(|m| m.seq == seq)
                        .map(|m| m.from.clone());
                    let reason = "the operator stopped while delivering it; it is not sent again, so that no message is ever delivered twice";
                    (seq, from.unwrap_or_default(), Err(reason.to_string()))
                }
                SendStep::Expire(message) => {
                    let reason = if inbox::waits_on_a_person(&status) {
                        format!(
                            "the agent waited on a person for longer than {}s",
                            ctx.send_expiry.as_secs()
                        )
                    } else {
                        format!(
                            "no running pod could take it within {}s",
                            ctx.send_expiry.as_secs()
                        )
                    };
                    (message.seq, message.from, Err(reason))
                }
                SendStep::Deliver(message) => {
                    let seq = message.seq;
                    write_sends(ac, agents, agent, |s| inbox::claim_send(s, seq)).await?;
                    let outcome = type_send(ctx, agents, pods, agent, &message).await?;
                    (message.seq, message.from, outcome)
                }
                // Claimed already, by the operator that stopped.
                SendStep::Redeliver(message) => {
                    let outcome = type_send(ctx, agents, pods, agent, &message).await?;
                    (message.seq, message.from, outcome)
                }
            };
            write_sends(ac, agents, agent, |s| {
                inbox::settle_send(s, seq, &from, outcome.clone(), now)
            })
            .await?;
            settled = Some(seq);
            prune_inbox(agents, &agent.name_any(), seq).await;
            ctx.metrics.count_delivery("send", &outcome);
            match outcome {
                Ok(()) => {
                    let message = format!("message #{seq} from {from} delivered");
                    ctx.publish_about(agent, false, reasons::MESSAGE_DELIVERED, &message);
                }
                Err(reason) => {
                    let message = format!("message #{seq} from {from} not delivered: {reason}");
                    ctx.publish_about(agent, true, reasons::SEND_FAILED, &message);
                }
            }
        }
    }

    /// A nudge or wake claimed by an operator that stopped before recording it: asks the
    /// target's shim whether it has that delivery's id, then counts it or drops the claim.
    /// Under the overseer's wake lock, so a wake still being typed by this operator is
    /// recorded by it first. Unreachable or unsure counts as not delivered: the agent is
    /// judged again, and a repeat of that delivery has the same id.
    pub(super) async fn settle(&self, agent: &Agent) -> Result<()> {
        let (ac, agents, pods) = (self.ac, self.agents, self.pods);
        let namespace = agent.namespace().unwrap_or_default();
        let Some(claimed) = in_flight(agent) else {
            return Ok(());
        };
        let lock = ac.wake_lock(&namespace, &claimed.target);
        let _guard = lock.lock().await;
        let Some(fresh) = agents.get_opt(&agent.name_any()).await? else {
            return Ok(());
        };
        if in_flight(&fresh).as_ref() != Some(&claimed) {
            return Ok(());
        }
        let confirmed =
            match crate::delivery::input::target_named(agents, pods, &claimed.target).await? {
                Some(pod) => {
                    let ids = [claimed.id.clone()];
                    crate::delivery::input::confirm(&ac.ctx.input_command, pods, &pod, &ids).await
                }
                None => Err(format!(
                    "{} has no ready pod made by the operator",
                    claimed.target
                )),
            };
        info!(id = %claimed.id, confirmed = confirmed.is_ok(), "settled a delivery claimed before a stop");
        let now = jiff::Timestamp::now();
        // Timed on its effective spec; an agent that can no longer run (its swarm or
        // image gone) on its own spec.
        let spec = resolve(&ac.swarms, &fresh).map_or_else(|_| fresh.spec.clone(), |e| e.spec);
        record(ac, agents, (&fresh, &spec), &claimed, &confirmed, now).await?;
        Ok(())
    }

    /// Sends the canned nudge into the agent's own pod, judged on its effective `spec`;
    /// true once delivered.
    pub(super) async fn nudge(&self, agent: &Agent, spec: &AgentSpec) -> Result<bool> {
        let (ctx, agents, pods) = (&self.ac.ctx, self.agents, self.pods);
        let now = jiff::Timestamp::now();
        let name = agent.name_any();
        let status = agent.status.clone().unwrap_or_default();
        let input = candidate::candidate_input(spec, &status, OverseerState::Unset, now);
        let (stopped_for, ..) = input.stopped_for();
        let text = message::nudge(input.stop(), stopped_for);
        let Some(pod) = crate::delivery::input::target(pods, agent).await? else {
            return Ok(false);
        };
        let nudge = InFlightDelivery {
            kind: Delivery::Nudge,
            id: claims::delivery_id(&name, &status, Delivery::Nudge),
            target: name.clone(),
            reason: candidate::stop_reason(&input),
        };
        claim(&self.ac.versions, agents, &name, &nudge).await?;
        let ids = [nudge.id.clone()];
        let outcome =
            crate::delivery::input::deliver(&ctx.input_command, pods, &pod, &text, &ids).await;
        if outcome.is_ok() {
            apply_last_message(agents, &name, OPERATOR_SENDER, &text).await?;
        }
        record(self.ac, agents, (agent, spec), &nudge, &outcome, now).await
    }

    /// Wakes the overseer once for every candidate it oversees (the batch), under a lock
    /// per overseer so that concurrent reconciles never send the same batch twice.
    pub(super) async fn wake(&self, agent: &Agent) -> Result<bool> {
        let (ac, agents, pods) = (self.ac, self.agents, self.pods);
        let ctx = &ac.ctx;
        let namespace = agent.namespace().unwrap_or_default();
        let Some(overseer_name) = agent.spec.overseer.clone() else {
            return Ok(false);
        };
        let lock = ac.wake_lock(&namespace, &overseer_name);
        let _guard = lock.lock().await;
        let now = jiff::Timestamp::now();
        // Fresh reads: a batch sent while we waited for the lock has started their cooldowns.
        let Some(overseer) = agents
            .get_opt(&overseer_name)
            .await?
            .filter(|o| overseer_state(o) == OverseerState::Ready)
        else {
            return Ok(false);
        };
        // Judged on their effective specs, as their own reconciles judge them.
        let oversees: Vec<(Agent, AgentSpec)> = agents
            .list(&ListParams::default())
            .await?
            .into_iter()
            .filter(|a| oversight::accepts(&overseer, a, owning_swarm(&ac.swarms, a).as_deref()))
            .filter_map(|a| {
                let spec = resolve(&ac.swarms, &a).ok()?.spec;
                Some((a, spec))
            })
            .collect();
        let Some(batch) = wake_batch(
            &namespace,
            &overseer_name,
            &agent.name_any(),
            &oversees,
            now,
        ) else {
            return Ok(true);
        };
        for (member, _, wake) in &batch.members {
            claim(&ac.versions, agents, &member.name_any(), wake).await?;
        }
        let ids: Vec<String> = batch.members.iter().map(|(.., w)| w.id.clone()).collect();
        let outcome = type_input(ctx, pods, &overseer, &batch.text, &ids).await?;
        if outcome.is_ok() {
            apply_last_message(agents, &overseer_name, OPERATOR_SENDER, &batch.text).await?;
        }
        let mut delivered = true;
        for (member, spec, wake) in &batch.members {
            delivered &= record(ac, agents, (member, spec), wake, &outcome, now).await?;
        }
        Ok(delivered)
    }
}

impl Courier<'_> {
    /// Tells the agent's overseer, between its turns, of the open escalations it has not
    /// heard of, its own and those of every other agent it oversees, in one wake (under the wake
    /// lock, so two members never send the same lines twice); each line is a delivery
    /// of its own id, so a line typed again after a stop is confirmed, not typed twice.
    /// True once told (or nothing to tell), false when the overseer could not take it.
    pub(super) async fn tell(&self, agent: &Agent) -> Result<bool> {
        let (ac, agents, pods) = (self.ac, self.agents, self.pods);
        let namespace = agent.namespace().unwrap_or_default();
        let Some(overseer_name) = agent.spec.overseer.clone() else {
            return Ok(true);
        };
        let lock = ac.wake_lock(&namespace, &overseer_name);
        let _guard = lock.lock().await;
        let between_turns = |o: &Agent| o.status.as_ref().is_some_and(AgentStatus::between_turns);
        let Some(overseer) = agents
            .get_opt(&overseer_name)
            .await?
            .filter(|o| overseer_state(o) == OverseerState::Ready && between_turns(o))
        else {
            return Ok(false);
        };
        let members: Vec<Agent> = agents
            .list(&ListParams::default())
            .await?
            .into_iter()
            .filter(|a| oversight::accepts(&overseer, a, owning_swarm(&ac.swarms, a).as_deref()))
            .collect();
        let now = jiff::Timestamp::now();
        let items: Vec<(String, Escalation)> = members
            .iter()
            .flat_map(|m| {
                let status = m.status.clone().unwrap_or_default();
                escalation::untold(&status)
                    .into_iter()
                    .map(|e| (m.name_any(), e.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        if items.is_empty() {
            return Ok(true);
        }
        let lines: Vec<(&str, &Escalation)> = items.iter().map(|(m, e)| (m.as_str(), e)).collect();
        let text = escalation::wake(&namespace, &lines, now);
        let ids: Vec<String> = items
            .iter()
            .map(|(m, e)| escalation::tell_id(m, e.id))
            .collect();
        let outcome = type_input(&ac.ctx, pods, &overseer, &text, &ids).await?;
        if let Err(reason) = outcome {
            let message =
                format!("its overseer {overseer_name} was not told of its escalations: {reason}");
            ac.ctx
                .publish_about(agent, true, reasons::WAKE_FAILED, &message);
            return Ok(false);
        }
        apply_last_message(agents, &overseer_name, OPERATOR_SENDER, &text).await?;
        for member in members
            .iter()
            .filter(|m| items.iter().any(|(n, _)| *n == m.name_any()))
        {
            self.record_told(member, &items, now).await?;
        }
        Ok(true)
    }

    /// Records on `member` that its overseer was told of its escalations in `items`.
    async fn record_told(
        &self,
        member: &Agent,
        items: &[(String, Escalation)],
        now: jiff::Timestamp,
    ) -> Result<()> {
        let name = member.name_any();
        let told: Vec<&Escalation> = items
            .iter()
            .filter(|(m, _)| *m == name)
            .map(|(_, e)| e)
            .collect();
        update_status(&self.ac.versions, self.agents, &name, |status| {
            let mut status = status.clone();
            for escalation in status.escalations.iter_mut() {
                if told.iter().any(|t| t.id == escalation.id) && escalation.told_time.is_none() {
                    escalation.told_time = Some(Time(now));
                }
            }
            Some(status)
        })
        .await?;
        for escalation in told {
            let waited = now
                .duration_since(escalation.opened_time.0)
                .as_secs_f64()
                .max(0.0);
            self.ac.ctx.metrics.escalation_to_told.observe(waited);
            let message = format!(
                "its overseer was told of escalation #{} ({}, severity {})",
                escalation.id,
                escalation.kind.label(),
                escalation.severity.label()
            );
            self.ac
                .ctx
                .publish_about(member, false, reasons::ESCALATION_TOLD, &message);
        }
        Ok(())
    }
}

/// Field manager of `status.lastMessage`.
const MESSAGES_MANAGER: &str = "overseer-messages";

/// `lastMessage.from` of nudges and wakes.
const OPERATOR_SENDER: &str = "operator";

/// Types claimed inbox `message` into the agent's pod under its id, and records it as
/// the last message once delivered.
async fn type_send(
    ctx: &Context,
    agents: &Api<Agent>,
    pods: &Api<Pod>,
    agent: &Agent,
    message: &InboxMessage,
) -> Result<std::result::Result<(), String>> {
    let ids = [inbox::send_id(message.seq)];
    let outcome = type_input(ctx, pods, agent, &message.text, &ids).await?;
    if outcome.is_ok() {
        apply_last_message(agents, &agent.name_any(), &message.from, &message.text).await?;
    }
    Ok(outcome)
}

/// Writes the agent's `sends` as `change` makes them from its fresh status, onto the
/// version read, and takes the agent as written: the inbox's next step reads it.
async fn write_sends(
    ac: &AgentContext,
    agents: &Api<Agent>,
    agent: &mut Agent,
    change: impl Fn(&AgentStatus) -> SendStatus,
) -> Result<()> {
    let written = update_status(&ac.versions, agents, &agent.name_any(), |s| {
        let mut next = s.clone();
        next.sends = Some(change(s));
        Some(next)
    })
    .await?;
    if let Some(written) = written {
        *agent = written;
    }
    Ok(())
}

/// Removes a handled message from the head of the inbox so its text is not kept.
/// The JSON patch first tests that the head is still that message; when a sender
/// rewrote the inbox meanwhile it does nothing (senders drop handled messages too).
async fn prune_inbox(agents: &Api<Agent>, name: &str, seq: i64) {
    let patch: json_patch::Patch = match serde_json::from_value(json!([
        {"op": "test", "path": "/status/inbox/0/seq", "value": seq},
        {"op": "remove", "path": "/status/inbox/0"},
    ])) {
        Ok(patch) => patch,
        Err(_) => return,
    };
    let params = PatchParams {
        field_manager: Some(CONTROLLER_MANAGER.into()),
        ..Default::default()
    };
    if let Err(error) = agents
        .patch_status(name, &params, &Patch::<()>::Json(patch))
        .await
    {
        info!(%error, seq, "inbox head not pruned; a later send drops it");
    }
}

/// Records the last message delivered to `name` (its own field manager, so the
/// overseer's and the agent's reconciles never overwrite each other's status).
async fn apply_last_message(agents: &Api<Agent>, name: &str, from: &str, text: &str) -> Result<()> {
    let last = LastMessage {
        from: from.to_string(),
        excerpt: inbox::excerpt(text),
        time: Time(jiff::Timestamp::now()),
    };
    api::apply_status(
        agents,
        name,
        MESSAGES_MANAGER,
        &json!({"lastMessage": last}),
    )
    .await?;
    Ok(())
}

/// Types `text` (delivering `ids`) into `agent`'s own input target; the delivery's
/// outcome, or why there was nobody to type into.
pub(super) async fn type_input(
    ctx: &Context,
    pods: &Api<Pod>,
    agent: &Agent,
    text: &str,
    ids: &[String],
) -> Result<std::result::Result<(), String>> {
    Ok(match crate::delivery::input::target(pods, agent).await? {
        Some(pod) => {
            crate::delivery::input::deliver(&ctx.input_command, pods, &pod, text, ids).await
        }
        None => Err("the agent has no ready pod made by the operator".into()),
    })
}

/// Writes `change` of agent `name`'s loop status (None: nothing to write). Read fresh
/// and written onto that version (retried on conflict): a wake is claimed and recorded
/// on every member of its batch, whose own reconciles may have written their statuses
/// since the batch was listed, and writing the status as listed would roll that back.
async fn update_loop(
    versions: &Versions,
    agents: &Api<Agent>,
    name: &str,
    change: impl Fn(&AgentStatus) -> Option<LoopStatus>,
) -> Result<()> {
    update_status(versions, agents, name, |status| {
        let loop_status = change(status)?;
        let mut status = status.clone();
        status.loop_ = Some(loop_status);
        Some(status)
    })
    .await
    .map(drop)
}

/// Writes `change` of agent `name`'s status (None: nothing to write), read fresh and
/// written onto that version (retried on conflict), so that nothing written since it
/// was listed is rolled back. The agent as written, if it was.
pub(super) async fn update_status(
    versions: &Versions,
    agents: &Api<Agent>,
    name: &str,
    change: impl Fn(&AgentStatus) -> Option<AgentStatus>,
) -> Result<Option<Agent>> {
    let fields = |current: &AgentStatus| change(current).map(|s| operator_fields(&s)).transpose();
    write_onto_version(versions, agents, name, (CONTROLLER_MANAGER, 5), fields).await
}

/// Applies the status fields `fields` makes from agent `name`'s fresh status (None:
/// nothing to write) under the field manager of `writer`, onto the version read: a
/// writer that changed the agent meanwhile makes it read and try again, up to the
/// writer's number of tries.
pub(super) async fn write_onto_version(
    versions: &Versions,
    agents: &Api<Agent>,
    name: &str,
    (manager, tries): (&str, usize),
    mut fields: impl FnMut(&AgentStatus) -> Result<Option<serde_json::Value>>,
) -> Result<Option<Agent>> {
    for _ in 0..tries {
        let fresh = agents.get(name).await?;
        let current = fresh.status.clone().unwrap_or_default();
        let Some(fields) = fields(&current)? else {
            return Ok(None);
        };
        let version = fresh.resource_version().unwrap_or_default();
        match api::apply_status_at(agents, name, manager, &version, &fields).await {
            Ok(written) => {
                // A reconcile must not decide on a cached copy from before this write
                // and apply its stale status over it (src/kubernetes/fresh.rs).
                versions.saw(&written);
                return Ok(Some(written));
            }
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(error) => return Err(error.into()),
        }
    }
    Err(Error::Busy(format!(
        "agent {name} changed {tries} times while {manager} wrote its status"
    )))
}

/// Claims a nudge or wake about `name` before it is typed (see `settle_claim`).
async fn claim(
    versions: &Versions,
    agents: &Api<Agent>,
    name: &str,
    claim: &InFlightDelivery,
) -> Result<()> {
    update_loop(versions, agents, name, |status| {
        Some(claims::claim_delivery(status, claim.clone()))
    })
    .await
}

pub(super) fn in_flight(agent: &Agent) -> Option<InFlightDelivery> {
    agent
        .status
        .as_ref()
        .and_then(|s| s.loop_.as_ref())
        .and_then(|l| l.in_flight.clone())
}

/// Time from the agent crossing `idleAfter` (or `reportEvery`) of its effective `spec`
/// to now (the delivery).
fn since_threshold(agent: &Agent, spec: &AgentSpec, now: jiff::Timestamp) -> f64 {
    let status = agent.status.clone().unwrap_or_default();
    let input = candidate::candidate_input(spec, &status, OverseerState::Unset, now);
    let (stopped_for, limit, _) = input.stopped_for();
    stopped_for.saturating_sub(limit).as_secs_f64()
}

/// Settles one claimed delivery on `agent` (with its effective spec): the loop status
/// (counted when delivered, the claim released either way), an Event and the metrics.
/// Returns whether it was delivered.
async fn record(
    ac: &AgentContext,
    agents: &Api<Agent>,
    (agent, spec): (&Agent, &AgentSpec),
    claimed: &InFlightDelivery,
    outcome: &Result<(), String>,
    now: jiff::Timestamp,
) -> Result<bool> {
    let (ctx, name) = (&ac.ctx, agent.name_any());
    let delivered = outcome.is_ok();
    update_loop(&ac.versions, agents, &name, |status| {
        claims::settle_delivery(&name, status, claimed, delivered, now)
    })
    .await?;
    let kind_label = claimed.kind.label();
    ctx.metrics.count_delivery(kind_label, outcome);
    match outcome {
        Ok(()) => {
            ctx.metrics.premature_stops.inc();
            ctx.metrics
                .stop_to_delivery
                .get_or_create(&DeliveryLabels {
                    kind: kind_label,
                    outcome: "delivered",
                })
                .observe(since_threshold(agent, spec, now));
            let event = match claimed.kind {
                Delivery::Wake => reasons::OVERSEER_WOKEN,
                Delivery::Nudge => reasons::NUDGED,
            };
            ctx.publish_about(agent, false, event, &claimed.reason);
            Ok(true)
        }
        Err(error) => {
            let event = match claimed.kind {
                Delivery::Wake => reasons::WAKE_FAILED,
                Delivery::Nudge => reasons::NUDGE_FAILED,
            };
            ctx.publish_about(
                agent,
                true,
                event,
                &format!("not delivered, retried at the next heartbeat: {error}"),
            );
            Ok(false)
        }
    }
}
