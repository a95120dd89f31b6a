//! The `PRWatch` kind: wake an agent when CI settles on a PR's head commit or
//! review feedback arrives.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::api::GitHubAccess;
use crate::api::{PR_URL_RULE, duration_schema, object_name_schema};
use crate::duration::{self, SpecDuration};

/// Watches one GitHub pull request and wakes an agent when CI settles or feedback arrives.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "overseer.dev",
    version = "v1alpha1",
    kind = "PRWatch",
    plural = "prwatches",
    namespaced,
    status = "PRWatchStatus",
    shortname = "prw",
    category = "overseer",
    cel,
    printcolumn(name = "PR", type_ = "string", json_path = ".spec.url"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Head", type_ = "string", json_path = ".status.headSha"),
    printcolumn(name = "Wakes", type_ = "integer", json_path = ".status.wakes"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PRWatchSpec {
    /// The pull request: https://github.com/OWNER/REPO/pull/N, or on a GitHub
    /// Enterprise server (whose API is `github.apiURL`).
    #[x_kube(validation = Rule::new(PR_URL_RULE).message("url must be a pull request URL: https://HOST/OWNER/REPO/pull/N"))]
    #[schemars(length(max = 300))]
    pub url: String,
    /// The Agent to wake.
    #[schemars(schema_with = "object_name_schema")]
    pub agent: String,
    /// Time between two polls (at least 10s).
    #[serde(default = "default_poll_interval")]
    #[schemars(schema_with = "duration_schema")]
    #[x_kube(validation = Rule::new("duration(self) >= duration('10s')").message("pollInterval must be at least 10s"))]
    pub poll_interval: SpecDuration,
    /// New feedback is batched until this long passes with nothing new.
    #[serde(default = "default_quiet_period")]
    #[schemars(schema_with = "duration_schema")]
    pub quiet_period: SpecDuration,
    /// Wakes before the watch ends as Exhausted.
    #[serde(default = "default_max_wakes")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_wakes: i32,
    /// Failed polls in a row before the watch ends as Failing (the agent is told).
    #[serde(default = "default_max_failed_polls")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_failed_polls: i32,
    /// End the watch.
    #[serde(default)]
    pub stop: bool,
    /// Where and how to reach GitHub.
    pub github: GitHubAccess,
}

fn default_poll_interval() -> SpecDuration {
    duration::default_of("60s")
}
fn default_quiet_period() -> SpecDuration {
    duration::default_of("90s")
}
fn default_max_wakes() -> i32 {
    20
}
fn default_max_failed_polls() -> i32 {
    30
}

/// Lifecycle phase of a PRWatch.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PRWatchPhase {
    Watching,
    Merged,
    Closed,
    Stopped,
    Exhausted,
    Failing,
}

/// Observed state of a PRWatch; all of the watch's memory, so a restart loses nothing.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct PRWatchStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PRWatchPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<ChecksStatus>,
    /// `sha:result` pairs already reported (bounded, newest last).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub reported: Vec<String>,
    /// Ids of feedback already seen (bounded, newest last).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 500))]
    pub seen_feedback: Vec<String>,
    /// Feedback waiting out the quiet period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingFeedback>,
    #[serde(default)]
    pub wakes: i32,
    /// The wake counted in `wakes` and not yet confirmed delivered: written before it
    /// is typed, so an operator that stops in between delivers it again under its id
    /// (the agent's shim confirms one it has without typing it twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_in_flight: Option<WakeInFlight>,
    #[serde(default)]
    pub failed_polls: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_poll_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_wake_time: Option<Time>,
    /// Feedback up to this time is reported (or was there when the watch began);
    /// `seenFeedback` holds the ids at exactly this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_until: Option<Time>,
    /// When the next poll is due (the interval, or GitHub's rate limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_poll_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}

/// A wake claimed before its delivery (`PRWatchStatus.wakeInFlight`). Its message is
/// built from counts, states and sanitised check names, never third-party text.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WakeInFlight {
    /// `pr/<watch>/<wake number>`.
    #[schemars(length(max = 300))]
    pub id: String,
    #[schemars(length(max = 16384))]
    pub message: String,
}

/// CI state of the head commit.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChecksStatus {
    /// The status check rollup state (SUCCESS, FAILURE, PENDING, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    /// Names of the failed checks: plain names only (others replaced by a fixed note), at most 10, then a count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// Feedback seen but not yet reported.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingFeedback {
    pub count: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_time: Option<Time>,
}
