//! The inbox of `overseer send` as pure decisions: which message goes next (in order,
//! once, or expired when no pod could take it), and the status of a claimed and of a
//! settled send.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::duration;
use crate::kinds::agent::*;

/// The id of inbox message `seq` delivered to an agent's pod.
pub fn send_id(seq: i64) -> String {
    format!("send/{seq}")
}

/// Send outcomes kept in `status.sends.results`.
const SEND_RESULTS_KEPT: usize = 10;

/// What to do about the inbox next.
#[derive(Debug, Clone, PartialEq)]
pub enum SendStep {
    /// Nothing is queued.
    Idle,
    /// A claim left by an operator that stopped during delivery, for a pod that is no
    /// longer the ready pod of the agent's attempt: it may or may not have arrived, so
    /// it is reported failed and never delivered again.
    Abandon { seq: i64 },
    /// A claim left by an operator that stopped during delivery, for the pod that is
    /// still ready: delivered again under its id (the shim never types it twice).
    Redeliver(InboxMessage),
    /// The pod cannot take input yet: look again by then (or when the pod changes).
    Wait { retry_after: Duration },
    /// Waited `expiry` for a pod: report it failed.
    Expire(InboxMessage),
    /// Claim it, then deliver it.
    Deliver(InboxMessage),
}

/// Whether the agent's CLI is asking a person something (a permission prompt): input
/// typed now would answer it, so messages are held, as nudges and wakes are.
pub fn waits_on_a_person(status: &AgentStatus) -> bool {
    status
        .current_activity()
        .is_some_and(|activity| activity.state == crate::agent::ActivityState::Waiting)
}

/// The next inbox step: messages go strictly in `seq` order, one at a time, and only
/// into a ready pod whose CLI is not asking a person something; one that cannot take
/// them for the expiry fails.
pub fn next_send(
    status: &AgentStatus,
    pod_ready: bool,
    expiry: Duration,
    now: Timestamp,
) -> SendStep {
    let sends = status.sends.clone().unwrap_or_default();
    let waiting = waits_on_a_person(status);
    if let Some(seq) = sends.in_flight_seq {
        let claimed = status.inbox.iter().find(|m| m.seq == seq);
        return match claimed {
            Some(message)
                if pod_ready
                    && sends.in_flight_attempt.is_some()
                    && sends.in_flight_attempt == status.attempt =>
            {
                if waiting {
                    SendStep::Wait {
                        retry_after: expiry,
                    }
                } else {
                    SendStep::Redeliver(message.clone())
                }
            }
            _ => SendStep::Abandon { seq },
        };
    }
    let Some(head) = pending_messages(status).into_iter().next() else {
        return SendStep::Idle;
    };
    if pod_ready && !waiting {
        return SendStep::Deliver(head);
    }
    let expires = duration::after(&head.sent_time, expiry);
    if expires <= now {
        SendStep::Expire(head)
    } else {
        SendStep::Wait {
            retry_after: expires.duration_since(now).try_into().unwrap_or_default(),
        }
    }
}

/// Whether the claim of `settled`, the message just settled, is still in `status` as
/// written: the settle writes the claim as null, so this holds only if something
/// else wrote it back; settling it again would loop.
pub fn claim_held_elsewhere(status: &AgentStatus, settled: Option<i64>) -> bool {
    settled.is_some() && status.sends.as_ref().and_then(|s| s.in_flight_seq) == settled
}

/// Inbox messages not handled yet, in delivery order.
pub fn pending_messages(status: &AgentStatus) -> Vec<InboxMessage> {
    let handled = status.sends.as_ref().map_or(0, |s| s.handled_seq);
    let mut pending: Vec<InboxMessage> = status
        .inbox
        .iter()
        .filter(|m| m.seq > handled)
        .cloned()
        .collect();
    pending.sort_by_key(|m| m.seq);
    pending
}

/// The record before delivering `seq`: handled from now on, and in flight to the pod
/// of the current attempt.
pub fn claim_send(status: &AgentStatus, seq: i64) -> SendStatus {
    let mut sends = status.sends.clone().unwrap_or_default();
    sends.handled_seq = sends.handled_seq.max(seq);
    sends.in_flight_seq = Some(seq);
    sends.in_flight_attempt = status.attempt;
    sends
}

/// The record once `seq` is settled (delivered or failed).
pub fn settle_send(
    status: &AgentStatus,
    seq: i64,
    from: &str,
    outcome: Result<(), String>,
    now: Timestamp,
) -> SendStatus {
    let mut sends = status.sends.clone().unwrap_or_default();
    sends.handled_seq = sends.handled_seq.max(seq);
    sends.in_flight_seq = None;
    sends.in_flight_attempt = None;
    let (outcome, reason) = match outcome {
        Ok(()) => (SendOutcome::Delivered, None),
        Err(reason) => (
            SendOutcome::Failed,
            Some(reason.chars().take(512).collect()),
        ),
    };
    sends.results.push(SendResult {
        seq,
        from: from.to_string(),
        outcome,
        reason,
        time: Time(now),
    });
    let excess = sends.results.len().saturating_sub(SEND_RESULTS_KEPT);
    sends.results.drain(..excess);
    sends
}

/// The first line of a delivered message, at most 100 characters, for `overseer ps`.
pub fn excerpt(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line: String = line.trim().chars().filter(|c| !c.is_control()).collect();
    if line.chars().count() > 100 {
        format!("{}…", line.chars().take(99).collect::<String>())
    } else {
        line
    }
}
