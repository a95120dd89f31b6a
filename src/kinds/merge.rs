//! The merge queue, as fields of the Swarm and Agent kinds: the swarm's policy
//! (`spec.coordination.merge`), a member's requests (`overseer merge request`, in its
//! own status), the operator's answers, and the queue itself in the swarm's status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where members' branches land, and what must pass first.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergePolicy {
    /// The branch the work lands on (default: the workspace's `git.ref`, else `main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 255),
        regex(pattern = r"^[^-~^:?*\[\\ ][^~^:?*\[\\ ]*$")
    )]
    pub target: Option<String>,
    /// Commands run in order in the merged tree before the push; each must exit 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub checks: Vec<MergeCheck>,
    /// How long one attempt may take: clone, merge, checks and push.
    #[serde(default = "default_timeout")]
    #[schemars(schema_with = "crate::api::duration_schema")]
    pub timeout: crate::duration::SpecDuration,
    /// Attempts per request: a target that moved meanwhile, or an attempt that did not
    /// finish, is tried again until they run out (then the author's overseer hears).
    #[serde(default = "default_attempts")]
    #[schemars(range(min = 1, max = 10))]
    pub attempts: i64,
    /// The image the merge runs in (it needs git, and what the checks run); default:
    /// the swarm's default runtime image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    pub image: Option<String>,
}

impl MergePolicy {
    /// The branch the queue lands work on: `target`, else `start` (the branch the
    /// workspace starts from), else `main`. The guards refuse pushes to it too.
    pub fn landing_branch(&self, start: Option<&str>) -> String {
        self.target
            .as_deref()
            .or(start)
            .unwrap_or("main")
            .to_string()
    }
}

fn default_timeout() -> crate::duration::SpecDuration {
    crate::duration::default_of("10m")
}
fn default_attempts() -> i64 {
    3
}

pub use crate::workspace::land::MergeCheck;

/// A member's request to land its branch (`overseer merge request`, field manager
/// `overseer-merge`), kept in its own status until answered.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeRequest {
    /// Per member, increasing.
    pub seq: i64,
    /// The branch the commit was pushed to.
    #[schemars(length(min = 1, max = 255))]
    pub branch: String,
    /// The exact commit to land.
    #[schemars(regex(pattern = r"^[0-9a-f]{40}$"))]
    pub sha: String,
    pub time: Time,
}

/// The operator's answers to a member's merge requests (field manager
/// `overseer-merger`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeLedger {
    /// The highest request seq answered.
    #[serde(default)]
    pub answered: i64,
    /// The latest requests' states (every pending one kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub records: Vec<MergeRecord>,
}

/// What became of one merge request.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeRecord {
    pub seq: i64,
    #[schemars(regex(pattern = r"^[0-9a-f]{40}$"))]
    pub sha: String,
    pub state: MergeState,
    /// Why it was refused or failed, or where it landed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub reason: Option<String>,
    pub time: Time,
}

/// Where a merge request is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum MergeState {
    /// Waiting its turn.
    Queued,
    /// Its attempt runs (a pod).
    Merging,
    /// On the target branch.
    Merged,
    /// The target and the commit change the same lines; the author was mailed the paths.
    Conflict,
    /// A check failed; the author was mailed its output's tail. The target is unchanged.
    ChecksFailed,
    /// Its attempts ran out; the author's overseer was told.
    Failed,
    /// The author asked again before its turn came: the newer request stands.
    Superseded,
    /// Not taken: no merge policy, or a commit that is not on the branch.
    Refused,
}

impl MergeState {
    /// Whether nothing more happens to it.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Queued | Self::Merging)
    }
}

/// One entry of the swarm's merge queue.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuedMerge {
    /// Swarm-wide, increasing: the queue's order and its pods' names.
    pub id: i64,
    /// The Agent that asked.
    #[schemars(length(max = 253))]
    pub member: String,
    /// The seq of its request.
    pub seq: i64,
    #[schemars(length(min = 1, max = 255))]
    pub branch: String,
    #[schemars(regex(pattern = r"^[0-9a-f]{40}$"))]
    pub sha: String,
    pub state: MergeState,
    /// Attempts made (the current one's pod is `<swarm>-merge-<id>-<attempts>`).
    #[serde(default)]
    pub attempts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub reason: Option<String>,
    /// The target's commit after the merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9a-f]{40}$"))]
    pub merged_sha: Option<String>,
    pub requested_time: Time,
}
