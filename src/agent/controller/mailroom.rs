//! The Agent controller's side of mail (the decisions are src/delivery/mail.rs): it
//! routes a sender's outbox into its swarm mates' mailboxes, types the notice into a
//! recipient whose CLI can take it, and settles read and expired mail, leaving a
//! receipt on the sender at each step. Every write is onto the version read (retried
//! on conflict) under its own field manager, so the reconciles' own status writes
//! never roll a mailbox back, and each recipient's per-sender mark makes a route
//! repeated after a stop take nothing twice.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::context::{AgentContext, owning_swarm};
use super::delivery::{type_input, write_onto_version};
use crate::delivery::mail::{self, Member, Route};
use crate::kinds::agent::{
    Agent, AgentPhase, AgentStatus, ExitOutcome, Mail, MailStatus, ReceiptState,
};
use crate::kinds::swarm::{MailPolicy, Swarm};
use crate::reasons;
use crate::{Error, Result};

/// Field manager of mailboxes and receipts.
const MAIL_MANAGER: &str = "overseer-mailroom";

/// The mail policy of the swarm that owns `agent`, and the swarm.
pub(super) fn policy(ac: &AgentContext, agent: &Agent) -> Option<(Box<Swarm>, MailPolicy)> {
    let swarm = owning_swarm(&ac.swarms, agent)?;
    let policy = swarm
        .spec
        .coordination
        .as_ref()
        .and_then(|c| c.mail.clone())
        .unwrap_or_default();
    Some((swarm, policy))
}

/// The members of `swarm` (the Agents it controls), from the cache.
fn members(ac: &AgentContext, swarm: &Swarm, namespace: &str) -> Vec<Member> {
    let uid = swarm.uid().unwrap_or_default();
    let prefix = format!("{}-", swarm.name_any());
    ac.store
        .state()
        .iter()
        .filter_map(|guarded| guarded.0.as_ref().ok())
        .filter(|a| a.namespace().as_deref() == Some(namespace))
        .filter(|a| crate::agent::oversight::swarm_owner(a).is_some_and(|o| o.uid == uid))
        .map(|a| member_of(a, &prefix))
        .collect()
}

fn member_of(agent: &Agent, prefix: &str) -> Member {
    let name = agent.name_any();
    let status = agent.status.clone().unwrap_or_default();
    let released = status
        .current_exit()
        .is_some_and(|e| e.outcome == ExitOutcome::Released);
    Member {
        member: name.strip_prefix(prefix).unwrap_or(&name).to_string(),
        role: agent.spec.role.clone(),
        ended: status.phase == Some(AgentPhase::Done) || released,
        name,
    }
}

/// Routes every message of `sender`'s outbox not routed yet, in order.
pub(super) async fn route(ac: &AgentContext, agents: &Api<Agent>, sender: &Agent) -> Result<()> {
    let name = sender.name_any();
    let namespace = sender.namespace().unwrap_or_default();
    loop {
        let fresh = agents.get_status(&name).await?;
        let status = fresh.status.clone().unwrap_or_default();
        let Some(message) = mail::unrouted(&status).into_iter().next().cloned() else {
            return Ok(());
        };
        let now = jiff::Timestamp::now();
        let route = match policy(ac, &fresh) {
            None => Route::Refused(format!(
                "mail goes between members of one swarm, and {name} belongs to none"
            )),
            Some((swarm, policy)) => {
                let members = members(ac, &swarm, &namespace);
                let prefix = format!("{}-", swarm.name_any());
                let me = member_of(&fresh, &prefix);
                let sent = mail::sent_since(&status, now);
                let lead = fresh.spec.overseer.as_deref();
                mail::route(&message, &me, lead, &members, &policy, sent)
            }
        };
        let receipts = deliver_to_mailboxes(ac, agents, &fresh, &message, route, now).await?;
        update_mail(ac, agents, &name, |status| {
            Some((
                status.mailbox.clone(),
                mail::routed(status, message.seq, receipts.clone()),
            ))
        })
        .await?;
    }
}

/// Takes `message` into each recipient's mailbox; the receipts of every recipient.
async fn deliver_to_mailboxes(
    ac: &AgentContext,
    agents: &Api<Agent>,
    sender: &Agent,
    message: &crate::kinds::agent::OutgoingMail,
    route: Route,
    now: jiff::Timestamp,
) -> Result<Vec<crate::kinds::agent::MailReceipt>> {
    let from = sender.name_any();
    let seq = message.seq;
    let (recipients, undeliverable) = match route {
        Route::Refused(reason) => {
            let note = format!("mail #{seq} to {} refused: {reason}", message.to);
            ac.ctx
                .publish_about(sender, true, reasons::MAIL_REFUSED, &note);
            count(ac, "refused");
            let receipt = mail::receipt(seq, &message.to, ReceiptState::Refused, Some(reason), now);
            return Ok(vec![receipt]);
        }
        Route::To {
            recipients,
            undeliverable,
        } => (recipients, undeliverable),
    };
    let mut receipts = Vec::new();
    for to in undeliverable {
        count(ac, "undeliverable");
        let reason = format!("{to} has ended (Done or released)");
        receipts.push(mail::receipt(
            seq,
            &to,
            ReceiptState::Undeliverable,
            Some(reason),
            now,
        ));
    }
    for to in recipients {
        let mut full = None;
        update_mail(ac, agents, &to, |status| {
            match mail::take(status, &from, message) {
                Ok(taken) => taken.map(|s| (s.mailbox, s.mail.unwrap_or_default())),
                Err(reason) => {
                    full = Some(reason);
                    None
                }
            }
        })
        .await?;
        receipts.push(match full {
            Some(reason) => {
                count(ac, "refused");
                mail::receipt(seq, &to, ReceiptState::Refused, Some(reason), now)
            }
            None => {
                count(ac, "queued");
                mail::receipt(seq, &to, ReceiptState::Queued, None, now)
            }
        });
    }
    Ok(receipts)
}

fn count(ac: &AgentContext, state: &'static str) {
    ac.ctx
        .metrics
        .mail
        .get_or_create(&crate::metrics::MailLabels { state })
        .inc();
}

/// Settles `recipient`'s mailbox: the notice when its CLI can take it, read and
/// expired mail removed, each sender's receipt moved. Returns whether the notice (if
/// one was due) went through.
pub(super) async fn settle(
    ac: &AgentContext,
    agents: &Api<Agent>,
    pods: &Api<Pod>,
    recipient: &Agent,
) -> Result<bool> {
    let name = recipient.name_any();
    let expiry = policy(ac, recipient).map_or_else(
        || MailPolicy::default().expiry.get(),
        |(_, p)| p.expiry.get(),
    );
    let status = recipient.status.clone().unwrap_or_default();
    let now = jiff::Timestamp::now();
    let room = mail::mailroom(&name, &status, expiry, now);
    let gone: Vec<(Mail, ReceiptState)> = room
        .read
        .iter()
        .map(|m| (m.clone(), ReceiptState::Read))
        .chain(
            room.expired
                .iter()
                .map(|m| (m.clone(), ReceiptState::Expired)),
        )
        .collect();
    if !gone.is_empty() {
        let ids: Vec<i64> = gone.iter().map(|(m, _)| m.id).collect();
        update_mail(ac, agents, &name, |status| {
            let mut mailbox = status.mailbox.clone();
            mailbox.retain(|m| !ids.contains(&m.id));
            Some((mailbox, status.mail.clone().unwrap_or_default()))
        })
        .await?;
        for (message, state) in &gone {
            receipt_to(ac, agents, message, &name, *state, now).await?;
        }
    }
    let Some((text, id, ids)) = room.notice else {
        return Ok(true);
    };
    let outcome = type_input(&ac.ctx, pods, recipient, &text, &[id]).await?;
    ac.ctx.metrics.count_delivery("mail", &outcome);
    if outcome.is_err() {
        return Ok(false);
    }
    update_mail(ac, agents, &name, |status| {
        let mut mailbox = status.mailbox.clone();
        for message in mailbox.iter_mut().filter(|m| ids.contains(&m.id)) {
            message.noticed_time.get_or_insert(Time(now));
        }
        Some((mailbox, status.mail.clone().unwrap_or_default()))
    })
    .await?;
    for message in status.mailbox.iter().filter(|m| ids.contains(&m.id)) {
        let waited = now
            .duration_since(message.sent_time.0)
            .as_secs_f64()
            .max(0.0);
        ac.ctx.metrics.mail_to_notice.observe(waited);
        receipt_to(ac, agents, message, &name, ReceiptState::Delivered, now).await?;
    }
    Ok(true)
}

/// Moves the receipt of `message` at `recipient` on its sender (gone: nothing to do).
async fn receipt_to(
    ac: &AgentContext,
    agents: &Api<Agent>,
    message: &Mail,
    recipient: &str,
    state: ReceiptState,
    now: jiff::Timestamp,
) -> Result<()> {
    match update_mail(ac, agents, &message.from, |status| {
        let advanced = mail::advance(status, message.seq, recipient, state, now)?;
        Some((status.mailbox.clone(), advanced))
    })
    .await
    {
        Err(Error::Kube(kube::Error::Api(status))) if status.code == 404 => Ok(()),
        other => other,
    }
}

/// When the first unread message of `status` expires (None: nothing waits).
pub(super) fn next_expiry(
    status: &AgentStatus,
    expiry: Duration,
    now: jiff::Timestamp,
) -> Option<Duration> {
    status
        .unread_mail()
        .map(|m| crate::duration::after(&m.sent_time, expiry))
        .min()
        .map(|at| at.duration_since(now).try_into().unwrap_or(Duration::ZERO))
}

/// Writes agent `name`'s mailbox and mail record as `change` makes them from its
/// fresh status (None: nothing to write), onto the version read; retried on conflict.
async fn update_mail(
    ac: &AgentContext,
    agents: &Api<Agent>,
    name: &str,
    mut change: impl FnMut(&AgentStatus) -> Option<(Vec<Mail>, MailStatus)>,
) -> Result<()> {
    let fields = |status: &AgentStatus| {
        Ok(change(status).map(|(mailbox, record)| json!({"mailbox": mailbox, "mail": record})))
    };
    write_onto_version(&ac.versions, agents, name, (MAIL_MANAGER, 16), fields)
        .await
        .map(drop)
}
