//! The `Goal` kind: steps run as pods, in order or as a graph (`after`, `forEach`),
//! with a checkpoint per step in status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{Notify, RuntimeSpec, duration_schema, object_name_schema, role_schema};
use crate::duration::{self, SpecDuration};
use crate::template::PodTemplate;

/// Steps, each run as a pod and checkpointed in status: one after the other, or as a
/// graph where a step names the steps it waits for (`after`) and may fan out over a
/// list (`forEach`), at most `maxParallel` pods at once.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "overseer.dev",
    version = "v1alpha1",
    kind = "Goal",
    namespaced,
    status = "GoalStatus",
    shortname = "gl",
    category = "overseer",
    cel,
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Progress", type_ = "string", json_path = ".status.progress"),
    printcolumn(name = "Current", type_ = "string", json_path = ".status.currentStep"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.workspace) || !has(self.workspace.storage) || !has(self.workspace.storage.persistent) || self.steps.all(s, !has(s.after) && !has(s.forEach))").message("workspace.storage.persistent is for steps that run one after the other: with after or forEach, steps run side by side, each in a fresh clone, and land their work on the goal's branch").field_path(".workspace.storage.persistent"))]
pub struct GoalSpec {
    /// The steps (1 to 100, unique names), each after the one listed before it unless
    /// it names its own predecessors (`after`).
    #[schemars(length(min = 1, max = 100))]
    #[x_kube(validation = Rule::new("self.all(a, self.exists_one(b, b.name == a.name))").message("step names must be unique"))]
    #[x_kube(validation = Rule::new("self.all(s, !has(s.after) || s.after.all(a, self.exists(t, t.name == a)))").message("steps[].after names a step that does not exist"))]
    #[x_kube(validation = Rule::new(AFTER_EARLIER_RULE).message("steps[].after may name only steps listed before it (so the step graph has no cycle)"))]
    #[x_kube(validation = Rule::new("self.all(s, !has(s.forEach) || s.action.contains('{{item}}'))").message("steps[].forEach needs {{item}} in the step's action: each item's pod is told its item there"))]
    #[x_kube(validation = Rule::new("self.all(s, !has(s.maxParallel) || has(s.forEach))").message("steps[].maxParallel limits a forEach step's items: set forEach, or use spec.maxParallel"))]
    pub steps: Vec<Step>,
    /// At most this many step pods run at once (steps whose predecessors are done start
    /// together up to it).
    #[serde(default = "default_max_parallel")]
    #[schemars(range(min = 1, max = 100))]
    pub max_parallel: i32,
    /// Defaults for every step.
    #[serde(default)]
    pub defaults: GoalDefaults,
    /// No new step starts while true; a running step finishes.
    #[serde(default)]
    pub paused: bool,
    /// What happens when a step runs out of retries.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// high: the overseer is woken with each step outcome.
    #[serde(default)]
    pub effort: Effort,
    /// Name of the Agent that oversees this goal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "object_name_schema")]
    pub overseer: Option<String>,
    /// Swarm whose role templates and defaults apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "object_name_schema")]
    pub swarm: Option<String>,
    /// Goals (by name, same namespace) that must succeed before this one starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub depends_on: Vec<String>,
    /// Webhook told about completion and pauses; a failed send is an Event only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<Notify>,
    /// Where the steps work, one after the other: a git source cloned into
    /// `/workspace`, and what holds it (persistent: each step continues from the files
    /// of the step before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<crate::workspace::Workspace>,
    /// A step whose action deploys, pushes or releases is followed by a guardian's
    /// review step (`<step>-review`) unless this is false.
    #[serde(default = "default_guardian_review")]
    pub guardian_review: bool,
    /// Pod settings of every step, over its swarm's defaults and role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
    /// Values for `{{vars.NAME}}` in prompts, instructions layers and step actions
    /// (docs/variables.md).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 64), inner(length(max = 4096)))]
    #[x_kube(validation = Rule::new("self.all(k, k.matches('^[A-Za-z][A-Za-z0-9_]*$'))").message("vars names must be a letter then letters, digits or _"))]
    pub vars: std::collections::BTreeMap<String, String>,
}

/// One step of a goal.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Unique name of the step (a DNS label).
    #[schemars(schema_with = "role_schema")]
    pub name: String,
    /// What to do, in words; the agent's prompt.
    #[schemars(length(min = 1, max = 16384))]
    pub action: String,
    /// Role of the step's agent; inferred from the action when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "role_schema")]
    pub role: Option<String>,
    /// Runtime of the step; unset fields come from the goal's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSpec>,
    /// Deadline of one attempt; defaults to the goal's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "duration_schema")]
    pub timeout: Option<SpecDuration>,
    /// Retries after the first attempt; defaults to the goal's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub max_retries: Option<i32>,
    /// Pod settings of this step, over the goal's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
    /// Steps (by name, listed before this one) that must succeed before it starts.
    /// Unset: the step listed just before (none for the first); `[]`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "step_names_schema")]
    pub after: Option<Vec<String>>,
    /// Runs the step once per item, each with `{{item}}` in its action replaced by the
    /// item; the steps after it wait for every item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "items_schema")]
    pub for_each: Option<Vec<String>>,
    /// At most this many of the step's items run at once (within spec.maxParallel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub max_parallel: Option<i32>,
}

/// Each name in a step's `after` is one listed before the step: no step waits for
/// itself or for one after it, so the graph has no cycle. The names are listed once
/// (bound by a one-element list, as CEL here has no `cel.bind`): the API server's cost
/// estimate refuses the rule that lists them for every name.
const AFTER_EARLIER_RULE: &str = "[self.map(t, t.name)].all(names, self.all(s, !has(s.after) || \
     s.after.all(a, names.indexOf(a) < names.indexOf(s.name))))";

fn step_names_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "maxItems": 20,
        "items": {"type": "string", "maxLength": 63},
    })
}

fn items_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "minItems": 1,
        "maxItems": 100,
        "items": {"type": "string", "minLength": 1, "maxLength": 1024},
    })
}

fn default_max_parallel() -> i32 {
    10
}

/// Defaults for the steps of a goal.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalDefaults {
    /// Role of steps that name none and whose action infers none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "role_schema")]
    pub role: Option<String>,
    /// Runtime of steps that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSpec>,
    /// Deadline of one attempt of a step.
    #[serde(default = "default_timeout")]
    #[schemars(schema_with = "duration_schema")]
    pub timeout: SpecDuration,
    /// Retries after the first attempt of a step.
    #[serde(default = "default_max_retries")]
    #[schemars(range(min = 0, max = 100))]
    pub max_retries: i32,
    /// Wait between attempts.
    #[serde(default)]
    pub backoff: Backoff,
}

fn default_guardian_review() -> bool {
    true
}

fn default_timeout() -> SpecDuration {
    duration::default_of("1h")
}
fn default_max_retries() -> i32 {
    2
}

impl Default for GoalDefaults {
    fn default() -> Self {
        GoalDefaults {
            role: None,
            runtime: None,
            timeout: default_timeout(),
            max_retries: default_max_retries(),
            backoff: Backoff::default(),
        }
    }
}

/// Exponential backoff between attempts: initial × factor^(attempt-1), at most max.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Backoff {
    #[serde(default = "default_backoff_initial")]
    #[schemars(schema_with = "duration_schema")]
    pub initial: SpecDuration,
    #[serde(default = "default_backoff_factor")]
    #[schemars(range(min = 1, max = 10))]
    pub factor: i32,
    #[serde(default = "default_backoff_max")]
    #[schemars(schema_with = "duration_schema")]
    pub max: SpecDuration,
}

fn default_backoff_initial() -> SpecDuration {
    duration::default_of("10s")
}
fn default_backoff_factor() -> i32 {
    2
}
fn default_backoff_max() -> SpecDuration {
    duration::default_of("5m")
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: default_backoff_initial(),
            factor: default_backoff_factor(),
            max: default_backoff_max(),
        }
    }
}

/// What a step that runs out of retries does to its goal.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    #[default]
    Pause,
    Fail,
}

/// How closely the overseer follows the goal.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    #[default]
    Standard,
    High,
}

/// Lifecycle phase of a Goal.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum GoalPhase {
    Pending,
    Waiting,
    Running,
    Paused,
    Succeeded,
    Failed,
}

/// Phase of one step.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum StepPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    TimedOut,
}

/// Observed state of a Goal.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<GoalPhase>,
    /// How many steps are done (a `forEach` step counts once per item); each step's
    /// entry in `steps` is its checkpoint: one that succeeded never runs again.
    #[serde(default)]
    pub completed_steps: i32,
    /// Names of the steps running, or of the next to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_step: Option<String>,
    /// completed/total, for people reading `kubectl get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepStatus>,
    /// Last `overseer.dev/resume` annotation value acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Progressing, Paused, Blocked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}

/// Observed state of one step.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepStatus {
    /// The step's name; for an item of a `forEach` step, `<step>.<n>` (from 1).
    pub name: String,
    /// The item of a `forEach` step this entry runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub phase: StepPhase,
    #[serde(default)]
    pub attempts: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// The step's output (the container's termination message), at most 4 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_time: Option<Time>,
    /// Attempts made before the last resume; they do not count against maxRetries.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt_base: i32,
    /// Hash of the step's spec when it ran: a completed step whose spec changes is a SpecConflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}
