//! What reaches an agent and what it raises, as fields of its status: escalations
//! (its own requests and the operator's record of them), mail between swarm members,
//! the inbox of `overseer send`, and the last message typed into it. The Agent kind
//! re-exports them, so they are named as its own.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How urgent an escalation is: `critical` goes to the webhook at once, the others
/// once they wait `loop.ackWithin` unacknowledged.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// Why an escalation was opened.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum EscalationKind {
    /// The agent asked (`overseer escalate`).
    Requested,
    /// The agent declared itself blocked (`overseer loop block`).
    Blocked,
    /// A permission or human prompt waited `loop.waitingEscalatesAfter`.
    Waiting,
    /// Its nudges ran out (the agent is Blocked).
    NudgesExhausted,
    /// Its pods stalled too often (the agent is Blocked).
    StallLimit,
    /// Its guards blocked `guards.escalateAfter` tool calls in one attempt.
    Guarded,
    /// Its memory reached `loop.memoryEscalatesAbove` percent of its limit.
    MemoryHigh,
    /// Its memory rose without falling for `loop.memoryGrowthEscalatesAfter`.
    MemoryGrowing,
}

impl EscalationKind {
    /// Its name in wake lines, metrics and Events.
    pub fn label(self) -> &'static str {
        match self {
            EscalationKind::Requested => "requested",
            EscalationKind::Blocked => "blocked",
            EscalationKind::Waiting => "waiting",
            EscalationKind::NudgesExhausted => "nudges-exhausted",
            EscalationKind::StallLimit => "stall-limit",
            EscalationKind::Guarded => "guarded",
            EscalationKind::MemoryHigh => "memory-high",
            EscalationKind::MemoryGrowing => "memory-growing",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum EscalationState {
    /// Waiting for the overseer (or a person).
    Open,
    /// Answered: `overseer ack`, or a `send`, `loop release` or `loop add` after it.
    Acknowledged,
    /// Its cause went away before anyone answered (the prompt was answered, the block
    /// taken back, the agent running again).
    Resolved,
}

/// One escalation of an agent to its overseer (written by the operator).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Escalation {
    /// Unique per agent, increasing.
    pub id: i64,
    pub kind: EscalationKind,
    pub severity: Severity,
    pub state: EscalationState,
    /// The attempt it was opened in.
    pub attempt: i64,
    /// The agent's own words (a request's or block's reason), or the operator's. Never
    /// typed into the overseer: it reads them with `overseer escalations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub reason: Option<String>,
    /// The request it came from (`Requested`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_seq: Option<i64>,
    pub opened_time: Time,
    /// When its line was typed into the overseer's wake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub told_time: Option<Time>,
    /// When the webhook was called about it (once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notified_time: Option<Time>,
    /// When it was acknowledged or resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_time: Option<Time>,
    /// Who acknowledged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub acknowledged_by: Option<String>,
}

/// `overseer escalate` in the agent's pod.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EscalationRequest {
    pub seq: i64,
    pub severity: Severity,
    #[schemars(length(max = 1024))]
    pub reason: String,
    pub time: Time,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EscalationCounts {
    /// The highest escalation id handed out.
    #[serde(default)]
    pub last_id: i64,
    /// Every request up to this seq was taken.
    #[serde(default)]
    pub taken_seq: i64,
}

/// Acknowledges every escalation up to `through` opened before `time`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EscalationAck {
    pub through: i64,
    /// The acknowledging agent, or `user`.
    #[schemars(length(max = 253))]
    pub by: String,
    pub time: Time,
}

/// Mail as its sender wrote it (`overseer mail send`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutgoingMail {
    /// Per sender, increasing: the order it is routed in.
    pub seq: i64,
    /// A member, `overseer`, `lead` (the sender's overseer), `@role` or `@all`.
    #[schemars(length(max = 253))]
    pub to: String,
    /// What kind of message, a word such as `finding`, `question` or `done` (shown in
    /// the recipient's notice, so a word and nothing else).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), regex(pattern = r"^[a-z][a-z0-9-]*$"))]
    pub type_: Option<String>,
    /// Noticed as soon as the recipient's screen has no prompt, even mid-turn.
    #[serde(default)]
    pub urgent: bool,
    #[schemars(length(max = 16384))]
    pub body: String,
    pub sent_time: Time,
}

/// Mail waiting to be read in the recipient's mailbox.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Mail {
    /// Per recipient, increasing.
    pub id: i64,
    /// The sending agent (its name, as the operator routed it).
    #[schemars(length(max = 253))]
    pub from: String,
    /// The sender's seq.
    pub seq: i64,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), regex(pattern = r"^[a-z][a-z0-9-]*$"))]
    pub type_: Option<String>,
    #[serde(default)]
    pub urgent: bool,
    #[schemars(length(max = 16384))]
    pub body: String,
    pub sent_time: Time,
    /// When a notice of it was typed into the recipient.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noticed_time: Option<Time>,
}

/// The operator's record of an agent's mail.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailStatus {
    /// Every outgoing message up to this seq was routed (or refused).
    #[serde(default)]
    pub routed_seq: i64,
    /// The highest mailbox id handed out.
    #[serde(default)]
    pub last_id: i64,
    /// Per sender, the highest seq taken into the mailbox: a message routed again
    /// after a stop is never taken twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 200))]
    pub received: Vec<Received>,
    /// What became of this agent's outgoing mail, per recipient (the latest 32).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub receipts: Vec<MailReceipt>,
    /// Messages sent and received, in all.
    #[serde(default)]
    pub sent: i64,
    #[serde(default)]
    pub received_count: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Received {
    #[schemars(length(max = 253))]
    pub from: String,
    pub seq: i64,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ReceiptState {
    /// In the recipient's mailbox; no notice yet.
    Queued,
    /// The recipient was told it has mail.
    Delivered,
    /// The recipient read it (`overseer mail read`).
    Read,
    /// Not read within the policy's expiry.
    Expired,
    /// The recipient is Done or gone.
    Undeliverable,
    /// Not sent: the reason says why (unknown recipient, policy, size, rate, full).
    Refused,
}

/// One outgoing message's fate at one recipient.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailReceipt {
    pub seq: i64,
    /// The recipient agent, or the address when it named nobody.
    #[schemars(length(max = 253))]
    pub to: String,
    pub state: ReceiptState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub reason: Option<String>,
    pub time: Time,
}

/// Longest message `overseer send` accepts (bytes).
pub const MAX_SEND_BYTES: usize = 16 * 1024;

/// One message for the agent, queued by `overseer send`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxMessage {
    /// Delivery order; greater than every seq handled before.
    pub seq: i64,
    /// Who sent it: an agent's name, or `user` for a person.
    #[schemars(length(max = 253))]
    pub from: String,
    #[schemars(length(max = 16384))]
    pub text: String,
    pub sent_time: Time,
}

/// What became of inbox messages.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendStatus {
    /// Every message up to this seq was handled (delivered or failed) or is in flight.
    #[serde(default)]
    pub handled_seq: i64,
    /// Claimed for delivery and not yet settled. After an operator restart it is
    /// delivered again under the same id, which the shim of the pod it was claimed for
    /// confirms without typing it twice; when that pod is gone it is reported failed,
    /// never delivered again.
    // Written as null when settled, never left out: a server-side apply that leaves a
    // field out does not remove it when another field manager also set it (a person's
    // patch), and a claim that outlives its settling would block the inbox.
    #[serde(default)]
    pub in_flight_seq: Option<i64>,
    /// The attempt whose pod the in-flight message was claimed for.
    #[serde(default)]
    pub in_flight_attempt: Option<i64>,
    /// Outcomes of the most recent messages, newest last (at most 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10))]
    pub results: Vec<SendResult>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum SendOutcome {
    Delivered,
    Failed,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendResult {
    pub seq: i64,
    pub from: String,
    pub outcome: SendOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub time: Time,
}

/// The last message delivered to an agent.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastMessage {
    /// `operator` (a nudge or wake), or the sender of an inbox message.
    pub from: String,
    /// The first line, at most 100 characters.
    pub excerpt: String,
    pub time: Time,
}
