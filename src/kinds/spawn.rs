//! Spawning, as fields of the Swarm and Agent kinds: the swarm's policy
//! (`spec.coordination.spawn`), a member's requests (`overseer spawn`, in its own
//! status), the operator's answers to them, and the swarm's record of every member it
//! spawned (its queue and tree).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::role_schema;

/// Who may spawn members, which roles, and how many.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnPolicy {
    /// Which roles may spawn which roles; a role listed nowhere may not spawn.
    #[schemars(length(min = 1, max = 32))]
    pub allow: Vec<SpawnRule>,
    /// Members of the swarm at once (its overseer, `spec.agents` and spawned members,
    /// ended ones included); a spawn past it is refused.
    #[serde(default = "default_max_members")]
    #[schemars(range(min = 1, max = 100))]
    pub max_members: i64,
    /// Spawned members running at once; the rest wait, Queued, first come first served.
    #[serde(default = "default_max_running")]
    #[schemars(range(min = 1, max = 100))]
    pub max_running: i64,
    /// Members one member may spawn over the run's life.
    #[serde(default = "default_per_parent")]
    #[schemars(range(min = 1, max = 100))]
    pub per_parent: i64,
    /// How deep the tree may grow: a member of `spec.agents` (or the overseer) is at
    /// depth 0, what it spawns at 1.
    #[serde(default = "default_max_depth")]
    #[schemars(range(min = 1, max = 8))]
    pub max_depth: i64,
    /// Members spawned over the run's life, in all.
    #[serde(default = "default_max_total")]
    #[schemars(range(min = 1, max = 100))]
    pub max_total: i64,
    /// Tokens the swarm's members may have used (as their CLIs report them) for a new
    /// spawn to be taken; none: no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub token_budget: Option<i64>,
}

fn default_max_members() -> i64 {
    20
}
fn default_max_running() -> i64 {
    4
}
fn default_per_parent() -> i64 {
    8
}
fn default_max_depth() -> i64 {
    2
}
fn default_max_total() -> i64 {
    32
}

/// One rule of `coordination.spawn.allow`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnRule {
    /// The role that may spawn.
    #[schemars(schema_with = "role_schema")]
    pub from: String,
    /// The roles it may spawn. A read-only role's children must be read-only too.
    #[schemars(
        length(min = 1, max = 16),
        inner(length(max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))
    )]
    pub roles: Vec<String>,
}

/// A member's request (`overseer spawn`, field manager `overseer-spawn`), kept in its
/// own status until the operator answers it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnRequest {
    /// Per member, increasing: the order its requests are answered in.
    pub seq: i64,
    /// The new member's name in the swarm (its Agent is `<swarm>-<name>`).
    #[schemars(schema_with = "role_schema")]
    pub name: String,
    /// Its role (ignored by a cancel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "optional_role_schema")]
    pub role: Option<String>,
    /// Its task: the prompt of its Agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16384))]
    pub task: Option<String>,
    /// Cancel the member of this name that this member spawned (queued or running).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel: bool,
    pub time: Time,
}

fn optional_role_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    role_schema(generator)
}

/// The operator's answers to a member's spawn requests (field manager
/// `overseer-spawner`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnLedger {
    /// The highest request seq answered.
    #[serde(default)]
    pub answered: i64,
    /// The answer to each request: every one still queued or running, and the latest
    /// others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub records: Vec<SpawnRecord>,
}

/// What became of one spawn request.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnRecord {
    pub seq: i64,
    #[schemars(schema_with = "role_schema")]
    pub name: String,
    pub state: SpawnState,
    /// Why it was refused, or how it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub reason: Option<String>,
    pub time: Time,
}

/// A spawn request's state, as its spawner sees it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum SpawnState {
    /// Taken, waiting for a running slot.
    Queued,
    /// Its Agent was created.
    Running,
    /// Its Agent's loop ended (Done, Blocked or Failed), or the Agent is gone.
    Ended,
    /// Refused, with the reason; nothing was created.
    Refused,
    /// Cancelled by its spawner: dropped from the queue, or its Agent deleted.
    Cancelled,
}

impl SpawnState {
    /// Whether nothing more happens to it.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Ended | Self::Refused | Self::Cancelled)
    }
}

/// A member the swarm spawned, in its status: the queue, the tree and the count.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnedMember {
    /// Its name in the swarm; its Agent is `<swarm>-<name>`.
    #[schemars(schema_with = "role_schema")]
    pub name: String,
    #[schemars(schema_with = "role_schema")]
    pub role: String,
    /// The Agent that spawned it (its overseer).
    #[schemars(length(max = 253))]
    pub parent: String,
    /// The seq of its parent's request.
    pub seq: i64,
    /// 1 for a child of a member of `spec.agents` (or of the overseer).
    pub depth: i64,
    pub state: SpawnedState,
    /// When it was requested: the queue's order.
    pub requested_time: Time,
}

/// Where a spawned member is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum SpawnedState {
    /// Waiting for a running slot.
    Queued,
    /// Its Agent is being created (the operator's intent, kept before the create).
    Starting,
    /// Its Agent exists and its loop has not ended.
    Running,
    /// Its loop ended, or its Agent is gone.
    Ended,
    /// Its spawner cancelled it.
    Cancelled,
}
