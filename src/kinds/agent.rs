//! The `Agent` kind: one long-running agent pod, optionally in the loop.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{
    GitHubAccess, Notify, PR_URL_RULE, RuntimeName, RuntimeSpec, duration_or_off_schema,
    duration_schema, object_name_schema, role_schema,
};
use crate::conditions;
use crate::duration::{self, DurationOrOff, SpecDuration};
use crate::template::PodTemplate;

// What reaches an agent and what it raises, kept beside its status.
pub use crate::kinds::messages::*;

/// An agent CLI running in a pod; in the loop it must keep working until it
/// declares itself done or blocked.
/// What an agent's sandbox lets it reach besides its defaults.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentEgress {
    /// Destinations as CIDRs (IPv4 or IPv6).
    #[serde(rename = "allowCIDRs", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 32),
        inner(regex(pattern = r"^[0-9a-fA-F:.]+/[0-9]{1,3}$"))
    )]
    pub allow_cidrs: Vec<String>,
}

#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "overseer.dev",
    version = "v1alpha1",
    kind = "Agent",
    namespaced,
    status = "AgentStatus",
    shortname = "ag",
    category = "overseer",
    cel,
    printcolumn(name = "Role", type_ = "string", json_path = ".spec.role"),
    printcolumn(name = "Runtime", type_ = "string", json_path = ".status.runtime"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Activity",
        type_ = "string",
        json_path = ".status.activity.state"
    ),
    printcolumn(name = "Nudges", type_ = "integer", json_path = ".status.loop.nudges"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Summary",
        type_ = "string",
        json_path = ".status.activity.summary",
        priority = "1"
    ),
    printcolumn(
        name = "Tokens",
        type_ = "integer",
        json_path = ".status.activity.usage.totalTokens",
        priority = "1"
    )
)]
#[x_kube(
    validation = Rule::new("has(self.swarm) || (has(self.runtime.name) && has(self.runtime.image))")
        .message("runtime.name and runtime.image are required unless the agent belongs to a swarm")
)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    /// The agent's role (builder, scout, guardian, reviewer, overseer, ...).
    #[serde(default = "default_role")]
    #[schemars(schema_with = "role_schema")]
    pub role: String,
    /// Swarm this agent belongs to; unset fields default from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "object_name_schema")]
    pub swarm: Option<String>,
    /// The agent CLI to run.
    #[serde(default)]
    pub runtime: RuntimeSpec,
    /// The agent's task and instructions overlay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub prompt: Option<String>,
    /// Settings merged into the generated pod (over its swarm's defaults and role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<Box<PodTemplate>>,
    /// The loop: keep the agent working until it declares done or blocked.
    #[serde(default, rename = "loop")]
    pub loop_: LoopSpec,
    /// Name of the Agent that acts as this agent's overseer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "object_name_schema")]
    pub overseer: Option<String>,
    /// The agents outside its swarm that this agent agrees to oversee, by name (`*`:
    /// any agent of its namespace). An agent naming it in `spec.overseer` without this
    /// (or a shared swarm) gets no wakes from it and gives it no rights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "oversees_schema")]
    pub oversees: Vec<String>,
    /// Stop the pod and keep the record.
    #[serde(default)]
    pub suspend: bool,
    /// GitHub access for the pull request watches the agent opens itself (`overseer
    /// watch-pr URL`); without it, those requests are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_requests: Option<Box<PullRequestAccess>>,
    /// More destinations the agent's pod may connect to, besides DNS, the API server
    /// and the public internet that its sandbox allows (docs/security.md): an internal
    /// git host, a model proxy inside the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<AgentEgress>,
    /// Where the agent works: a git source cloned into `/workspace`, and what holds it
    /// (its swarm's when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<Box<crate::workspace::Workspace>>,
    /// Webhook told when the agent ends Done, Blocked or Released (its swarm's when
    /// unset); a failed send is an Event only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<Notify>,
    /// Guards on the agent's tool calls (docs/guards.md); unset: its swarm role's, else
    /// its swarm's defaults, else on with the built-in denials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<Box<crate::kinds::guard::Guards>>,
    /// Values for `{{vars.NAME}}` in prompts, instructions layers and step actions
    /// (docs/variables.md): quality gates, the tracker's command.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 64), inner(length(max = 4096)))]
    #[x_kube(validation = Rule::new("self.all(k, k.matches('^[A-Za-z][A-Za-z0-9_]*$'))").message("vars names must be a letter then letters, digits or _"))]
    pub vars: std::collections::BTreeMap<String, String>,
}

fn oversees_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "maxItems": 256,
        "items": {
            "type": "string",
            "pattern": r"^(\*|[a-z0-9]([-a-z0-9.]*[a-z0-9])?)$",
            "maxLength": 253,
        },
    })
}

pub fn default_role() -> String {
    "builder".into()
}

/// How an agent's own pull request watches reach GitHub: set by whoever may edit the
/// Agent, never by the agent.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestAccess {
    pub github: GitHubAccess,
}

/// A pull request the agent asked to have watched for it (`overseer watch-pr URL`), or
/// to stop watching (`--stop`). The operator makes the PRWatch, always for this agent.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct WatchRequest {
    #[x_kube(validation = Rule::new(PR_URL_RULE).message("url must be a pull request URL: https://HOST/OWNER/REPO/pull/N"))]
    #[schemars(length(max = 300))]
    pub url: String,
    #[serde(default)]
    pub stop: bool,
}

/// Loop settings: when an agent counts as stopped too early and what is done about it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoopSpec {
    /// Keep the agent in the loop.
    #[serde(default)]
    pub enabled: bool,
    /// Heartbeat of the time-based checks (shorter than 1s reads as 1s); `off` disables them.
    #[serde(default = "default_interval")]
    #[schemars(schema_with = "duration_or_off_schema")]
    pub interval: DurationOrOff,
    /// How long an agent must be idle or exited before it counts as stopped.
    #[serde(default = "default_idle_after")]
    #[schemars(schema_with = "duration_schema")]
    pub idle_after: SpecDuration,
    /// Minimum time between two nudges or wakes for the same agent.
    #[serde(default = "default_cooldown")]
    #[schemars(schema_with = "duration_schema")]
    pub cooldown: SpecDuration,
    /// Nudges and wakes before the agent is marked Blocked.
    #[serde(default = "default_max_nudges")]
    #[schemars(range(min = 1, max = 10000))]
    pub max_nudges: i32,
    /// Without an (online) overseer, nudge the agent directly instead of only observing.
    #[serde(default)]
    pub auto_nudge_without_overseer: bool,
    /// Working with no activity change this long counts as stalled.
    #[serde(default = "default_stall_after")]
    #[schemars(schema_with = "duration_schema")]
    pub stall_after: SpecDuration,
    /// Stop the agent gracefully, keeping its state, after this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "duration_schema")]
    pub session_timeout: Option<SpecDuration>,
    /// An agent in the loop must report progress (`overseer loop progress`) at least
    /// this often; one that has not is `Unresponsive` and its overseer is woken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "duration_schema")]
    pub report_every: Option<SpecDuration>,
    /// A permission or human prompt that waits this long opens an escalation to the
    /// agent's overseer (and, unacknowledged, to the webhook).
    #[serde(default = "default_waiting_escalates_after")]
    #[schemars(schema_with = "duration_schema")]
    pub waiting_escalates_after: SpecDuration,
    /// An escalation not acknowledged within this time goes to the webhook
    /// (`spec.notify`, else the swarm's), once; a critical one goes at once.
    #[serde(default = "default_ack_within")]
    #[schemars(schema_with = "duration_schema")]
    pub ack_within: SpecDuration,
    /// The agent container's memory at or above this percentage of its limit opens an
    /// escalation (0: never; no limit: never).
    #[serde(default = "default_memory_escalates_above")]
    #[schemars(range(min = 0, max = 100))]
    pub memory_escalates_above: i32,
    /// Memory that has not fallen between the shim's reports for this long opens an
    /// escalation (unset: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "duration_schema")]
    pub memory_growth_escalates_after: Option<SpecDuration>,
    /// A swarm's `monitor` is woken this often, between its turns, with a summary of
    /// its fleet (unset: every 10m; under a minute: every minute). Other roles ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "duration_schema")]
    pub monitor_every: Option<SpecDuration>,
}

fn default_waiting_escalates_after() -> SpecDuration {
    duration::default_of("10m")
}
fn default_ack_within() -> SpecDuration {
    duration::default_of("15m")
}
fn default_memory_escalates_above() -> i32 {
    90
}
fn default_interval() -> DurationOrOff {
    duration::default_of("15s")
}
fn default_idle_after() -> SpecDuration {
    duration::default_of("60s")
}
fn default_cooldown() -> SpecDuration {
    duration::default_of("2m")
}
fn default_max_nudges() -> i32 {
    20
}
fn default_stall_after() -> SpecDuration {
    duration::default_of("30m")
}

impl Default for LoopSpec {
    fn default() -> Self {
        LoopSpec {
            enabled: false,
            interval: default_interval(),
            idle_after: default_idle_after(),
            cooldown: default_cooldown(),
            max_nudges: default_max_nudges(),
            auto_nudge_without_overseer: false,
            stall_after: default_stall_after(),
            session_timeout: None,
            report_every: None,
            waiting_escalates_after: default_waiting_escalates_after(),
            ack_within: default_ack_within(),
            memory_escalates_above: default_memory_escalates_above(),
            memory_growth_escalates_after: None,
            monitor_every: None,
        }
    }
}

/// Lifecycle phase of an Agent.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum AgentPhase {
    Pending,
    Running,
    Done,
    Blocked,
    Failed,
    Suspended,
}

/// What the agent pod reports about itself (field manager `overseer-shim`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ActivityState {
    Starting,
    Working,
    Idle,
    Waiting,
    Exited,
}

/// Observed state of an Agent.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<AgentPhase>,
    /// Spawn id: +1 for every new pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// The runtime the current pod runs: the agent's own, or its swarm's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeName>,
    /// When the first pod of this agent was created; `loop.sessionTimeout` counts from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// Written by the agent pod itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<Activity>,
    /// Written by the agent through `overseer loop done|block`, or by its overseer
    /// through `overseer loop release`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<Box<AgentExit>>,
    /// Messages waiting for delivery, written by senders (`overseer send`); the
    /// operator delivers them in `seq` order, each at most once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub inbox: Vec<InboxMessage>,
    /// The operator's record of inbox deliveries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sends: Option<SendStatus>,
    /// Pull requests the agent asked to have watched (`overseer watch-pr`, field manager
    /// `overseer-watch-pr`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub watch_requests: Vec<WatchRequest>,
    /// Escalations the agent asked for (`overseer escalate`, field manager
    /// `overseer-escalate`); the operator opens each once, in `seq` order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub escalation_requests: Vec<EscalationRequest>,
    /// The operator's record of this agent's escalations: every open one, and the
    /// latest settled ones (at most 16 in all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub escalations: Vec<Escalation>,
    /// The highest escalation id handed out and request seq taken, so neither is used
    /// twice once the list drops old entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_counts: Option<EscalationCounts>,
    /// The last acknowledgement of this agent's escalations: its overseer's or a
    /// person's `overseer ack`, `send`, `loop release` or `loop add` (field manager
    /// `overseer-ack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_ack: Option<Box<EscalationAck>>,
    /// Mail this agent sent (`overseer mail send`, field manager `overseer-mail`),
    /// waiting for the operator to route it, in `seq` order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub outbox: Vec<OutgoingMail>,
    /// Mail routed to this agent and not read yet (written by the operator).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub mailbox: Vec<Mail>,
    /// The operator's record of this agent's mail: routed, received, noticed, receipts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail: Option<MailStatus>,
    /// Mail read through this id (`overseer mail read`, field manager `overseer-mail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail_read: Option<i64>,
    /// Members this agent asked its swarm to spawn or cancel (`overseer spawn`, field
    /// manager `overseer-spawn`), kept until answered (a queued one until it starts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub spawn_requests: Vec<crate::kinds::spawn::SpawnRequest>,
    /// The operator's answers to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawns: Option<crate::kinds::spawn::SpawnLedger>,
    /// Commits this agent asked to land through its swarm's merge queue (`overseer
    /// merge request`, field manager `overseer-merge`), kept until answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub merge_requests: Vec<crate::kinds::merge::MergeRequest>,
    /// The operator's answers to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merges: Option<crate::kinds::merge::MergeLedger>,
    /// A monitor's patrols: the fleet summaries it was woken with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patrol: Option<PatrolStatus>,
    /// Files this agent asked to claim or release in its swarm (`overseer claim`,
    /// field manager `overseer-claim`), kept until answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub claim_requests: Vec<crate::kinds::claim::ClaimRequest>,
    /// The operator's answers to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims: Option<crate::kinds::claim::ClaimLedger>,
    /// The sha256 of the instructions the operator last wrote to the agent's ConfigMap
    /// (`sha256:<hex>`): after a restart it knows them written without reading them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 71))]
    pub instructions_digest: Option<String>,
    /// The last message delivered to this agent (a send, nudge or wake), for `overseer ps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message: Option<Box<LastMessage>>,
    /// The operator's record of the loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "loop")]
    pub loop_: Option<LoopStatus>,
    /// Ready, InLoop, StoppedEarly, Stalled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}

impl AgentStatus {
    /// Whether the agent is Running and its pod Ready.
    pub fn is_ready(&self) -> bool {
        self.phase == Some(AgentPhase::Running)
            && conditions::is_true(&self.conditions, conditions::READY)
    }

    /// The pod that can take input now, as the status says (`is_ready`).
    pub fn ready_pod(&self) -> Option<&str> {
        self.pod_name.as_deref().filter(|_| self.is_ready())
    }

    /// The activity of the current attempt (a report about an earlier pod is ignored).
    pub fn current_activity(&self) -> Option<&Activity> {
        let attempt = self.attempt?;
        self.activity
            .as_ref()
            .filter(|a| a.attempt == Some(attempt))
    }

    /// Whether the current attempt's CLI is between turns (idle, or its process
    /// exited): what is typed then starts a turn instead of landing inside one.
    pub fn between_turns(&self) -> bool {
        self.current_activity()
            .is_some_and(|a| matches!(a.state, ActivityState::Idle | ActivityState::Exited))
    }

    /// The escalations waiting for an answer.
    pub fn open_escalations(&self) -> impl Iterator<Item = &Escalation> {
        self.escalations
            .iter()
            .filter(|e| e.state == EscalationState::Open)
    }

    /// The mail in the mailbox not marked read (`overseer mail read`).
    pub fn unread_mail(&self) -> impl Iterator<Item = &Mail> {
        let read = self.mail_read.unwrap_or(0);
        self.mailbox.iter().filter(move |m| m.id > read)
    }

    /// The exit of the current attempt; an exit of an earlier attempt is stale.
    pub fn current_exit(&self) -> Option<&AgentExit> {
        let attempt = self.attempt?;
        self.exit.as_deref().filter(|e| e.attempt == attempt)
    }
}

/// The agent pod's own report of what it is doing.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Activity {
    pub state: ActivityState,
    /// When the current state began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Time>,
    /// Last time the agent's output or process changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_activity_time: Option<Time>,
    /// Last periodic report of the shim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_time: Option<Time>,
    /// The attempt (spawn) this report is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Short self-reported summary of the current work (`overseer loop progress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub summary: Option<String>,
    /// When the agent last reported progress (`overseer loop progress`), this attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_time: Option<Time>,
    /// Tokens used by this attempt's headless runs, as the CLI reported them in its JSON
    /// output (claude, codex, pi; docs/runtimes.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// The tool calls the agent's guards blocked in this attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<crate::kinds::guard::GuardCounts>,
    /// The agent container's memory and CPU at this report (its cgroup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceUse>,
}

/// The agent container's use of memory and CPU, as its cgroup says.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUse {
    #[schemars(range(min = 0))]
    pub memory_bytes: i64,
    /// Unset: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub memory_limit_bytes: Option<i64>,
    /// Average since the shim's report before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub cpu_millicores: Option<i64>,
    /// Since when memory has risen without falling between reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_growing_since: Option<Time>,
}

/// Token usage summed over the runs of one attempt.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Runs whose usage was reported.
    #[schemars(range(min = 0, max = 1_000_000_000_000_000i64))]
    pub runs: i64,
    /// Input tokens, cached ones included.
    #[schemars(range(min = 0, max = 1_000_000_000_000_000i64))]
    pub input_tokens: i64,
    /// The part of the input read from the provider's prompt cache.
    #[schemars(range(min = 0, max = 1_000_000_000_000_000i64))]
    pub cached_input_tokens: i64,
    /// Output tokens, reasoning included.
    #[schemars(range(min = 0, max = 1_000_000_000_000_000i64))]
    pub output_tokens: i64,
    /// Input plus output.
    #[schemars(range(min = 0, max = 1_000_000_000_000_000i64))]
    pub total_tokens: i64,
    /// What the CLI said the runs cost, in US dollars (claude and pi report it).
    #[serde(rename = "costUSD", default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub cost_usd: Option<String>,
}

/// How an agent ended its loop.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExitOutcome {
    Done,
    Blocked,
    /// Its overseer stopped driving it (`overseer loop release`).
    Released,
}

/// The agent's self-declared end of its loop; stale when `attempt` is not the current one.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentExit {
    pub outcome: ExitOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Time>,
    pub attempt: i64,
}

/// A monitor's record of its patrols (field manager `overseer-controller`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatrolStatus {
    /// Fleet summaries typed into it.
    #[serde(default)]
    pub patrols: i64,
    /// When the last was (recorded before it is typed: a stop in between skips one,
    /// never types one twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_time: Option<Time>,
}

/// The operator's record of nudges and wakes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoopStatus {
    #[serde(default)]
    pub active: bool,
    #[serde(default)]
    pub nudges: i32,
    #[serde(default)]
    pub wakes: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_nudge_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_wake_time: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reason: Option<String>,
    /// Pods replaced because the agent stalled.
    #[serde(default)]
    pub stalls: i32,
    /// A nudge or wake claimed before it was typed and not recorded yet: an operator
    /// that stopped in between asks the target's shim whether it was delivered.
    // Written as null when settled, as `SendStatus::in_flight_seq`.
    #[serde(default)]
    pub in_flight: Option<InFlightDelivery>,
}

/// What the operator brings an agent that stopped early.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// Wake the overseer about this agent (and the other candidates it oversees).
    Wake,
    /// Send the agent the canned nudge.
    Nudge,
}

/// A nudge or wake about to be typed (`LoopStatus.inFlight`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InFlightDelivery {
    pub kind: Delivery,
    /// Its delivery id (`<kind>/<agent>/<count>`), which the target's shim remembers.
    #[schemars(length(max = 320))]
    pub id: String,
    /// The agent whose pod it is typed into: this one (a nudge) or its overseer (a wake).
    #[schemars(length(max = 253))]
    pub target: String,
    /// Why it was sent, recorded as `lastReason` once delivered.
    #[schemars(length(max = 256))]
    pub reason: String,
}
