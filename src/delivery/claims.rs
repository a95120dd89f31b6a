//! Nudges and wakes claimed in `status.loop.inFlight` before their exec and settled
//! after it, as pure status changes: a settle is idempotent by the delivery's id, so
//! one counted twice (after a restart) counts once.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::kinds::agent::*;

/// The loop status after a confirmed delivery: only then does the cooldown start.
pub(crate) fn record_delivery(
    status: &AgentStatus,
    kind: Delivery,
    reason: &str,
    now: Timestamp,
) -> LoopStatus {
    let mut loop_status = status.loop_.clone().unwrap_or_default();
    loop_status.nudges = loop_status.nudges.saturating_add(1);
    match kind {
        Delivery::Wake => {
            loop_status.wakes = loop_status.wakes.saturating_add(1);
            loop_status.last_wake_time = Some(Time(now));
        }
        Delivery::Nudge => loop_status.last_nudge_time = Some(Time(now)),
    }
    loop_status.last_reason = Some(reason.chars().take(256).collect());
    loop_status
}

/// The loop status with `claim` recorded as in flight, written before it is typed.
pub fn claim_delivery(status: &AgentStatus, claim: InFlightDelivery) -> LoopStatus {
    let mut loop_status = status.loop_.clone().unwrap_or_default();
    loop_status.in_flight = Some(claim);
    loop_status
}

/// The loop status once delivery `id` about `agent` is settled, or None when nothing
/// changes. Its claim is released either way; it is counted when `delivered` and not
/// counted yet (the id is still the next one), so settling it twice (the operator that
/// typed it and one that asked the shim after a crash) counts it once.
pub fn settle_delivery(
    agent: &str,
    status: &AgentStatus,
    claim: &InFlightDelivery,
    delivered: bool,
    now: Timestamp,
) -> Option<LoopStatus> {
    let claimed = status
        .loop_
        .as_ref()
        .and_then(|l| l.in_flight.as_ref())
        .is_some_and(|c| c.id == claim.id);
    let count = delivered && delivery_id(agent, status, claim.kind) == claim.id;
    if !claimed && !count {
        return None;
    }
    let mut loop_status = if count {
        record_delivery(status, claim.kind, &claim.reason, now)
    } else {
        status.loop_.clone().unwrap_or_default()
    };
    if claimed {
        loop_status.in_flight = None;
    }
    Some(loop_status)
}

/// The id of the next nudge or wake delivered about `agent` (the shim confirms a
/// retried delivery of it without typing it twice). Its count of deliveries only ever
/// grows, so an id is never reused for a later delivery.
pub fn delivery_id(agent: &str, status: &AgentStatus, kind: Delivery) -> String {
    let delivered = status.loop_.as_ref().map_or(0, |l| l.nudges);
    format!("{}/{agent}/{}", kind.label(), i64::from(delivered) + 1)
}
