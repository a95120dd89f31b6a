//! The `Swarm` kind: a run of agents with roles, an overseer, prompt layers and isolation.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{RuntimeSpec, object_name_schema, role_schema};
use crate::kinds::agent::LoopSpec;
use crate::kinds::guard::Guards;
use crate::template::PodTemplate;

/// A group of agents with roles and an overseer, isolated from other swarms.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "overseer.dev",
    version = "v1alpha1",
    kind = "Swarm",
    namespaced,
    status = "SwarmStatus",
    shortname = "sw",
    category = "overseer",
    cel,
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Agents", type_ = "integer", json_path = ".status.agents.total"),
    printcolumn(
        name = "Working",
        type_ = "integer",
        json_path = ".status.agents.working"
    ),
    printcolumn(
        name = "Overseer-Ready",
        type_ = "boolean",
        json_path = ".status.overseer.ready"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.egress) || self.networkPolicy").message("egress needs networkPolicy: true (the egress rules are part of the swarm's NetworkPolicy)"))]
#[x_kube(validation = Rule::new("!has(self.coordination) || !has(self.coordination.merge) || (has(self.workspace) && has(self.workspace.git))").message("coordination.merge needs workspace.git: the repository the queue lands the members' branches on").field_path(".coordination.merge"))]
pub struct SwarmSpec {
    /// Id of this run, carried by everything of the swarm; defaults to the Swarm's uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "role_schema")]
    pub run_id: Option<String>,
    /// Defaults for every member.
    #[serde(default)]
    pub defaults: SwarmDefaults,
    /// Per-role settings, keyed by role name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 32))]
    #[x_kube(validation = Rule::new("self.all(r, r.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(r) <= 63)").message("role names must be DNS labels"))]
    pub roles: BTreeMap<String, SwarmRole>,
    /// Prompt layers: base, then the role's profile, then the agent's own prompt.
    #[serde(default)]
    pub prompts: Prompts,
    /// The swarm's overseer agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overseer: Option<SwarmOverseer>,
    /// Create a NetworkPolicy that lets the swarm's pods take traffic only from each
    /// other (it takes effect only with a network plugin that enforces policies).
    #[serde(default)]
    pub network_policy: bool,
    /// Where the swarm's pods may connect, with `networkPolicy` on (without this,
    /// anywhere): DNS, each other, and what is listed here. The shim reports through the
    /// API server, so its address belongs in `allowCIDRs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<SwarmEgress>,
    /// The workspace of every member (and agent of the swarm) that sets none: each gets
    /// its own, on its own branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<crate::workspace::Workspace>,
    /// Webhook told when a member (or any agent of the swarm without its own) ends
    /// Done, Blocked or Released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<crate::api::Notify>,
    /// Stop every member's pod and keep their state; false again continues where
    /// they were.
    #[serde(default)]
    pub suspend: bool,
    /// End the run this long after it started: members are stopped (their state kept),
    /// the swarm's phase is `Ended` with reason `TimedOut`, and a report is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::api::duration_schema")]
    pub timeout: Option<crate::duration::SpecDuration>,
    /// How members work together: the mail they may send each other, and who may spawn
    /// new members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordination: Option<Coordination>,
    /// Values for `{{vars.NAME}}` of every member (its own `vars` win) in prompts, instructions layers and step actions
    /// (docs/variables.md): quality gates, the tracker's command.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 64), inner(length(max = 4096)))]
    #[x_kube(validation = Rule::new("self.all(k, k.matches('^[A-Za-z][A-Za-z0-9_]*$'))").message("vars names must be a letter then letters, digits or _"))]
    pub vars: std::collections::BTreeMap<String, String>,
    /// Member agents to create.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    #[x_kube(validation = Rule::new("self.all(a, self.exists_one(b, b.name == a.name))").message("agent names must be unique"))]
    #[x_kube(validation = Rule::new("self.all(a, a.name != 'overseer')").message("the member name overseer is reserved for the swarm's overseer"))]
    pub agents: Vec<SwarmMember>,
}

/// How the members of a swarm work together.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Coordination {
    /// Mail between members (`overseer mail send`); without it, every member may write
    /// to every other, with the defaults below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail: Option<MailPolicy>,
    /// Members that spawn members (`overseer spawn`): who may, which roles, how many.
    /// Without it, no member may spawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn: Option<crate::kinds::spawn::SpawnPolicy>,
    /// The merge queue members land their branches through (`overseer merge request`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<crate::kinds::merge::MergePolicy>,
}

/// Who may mail whom, and how much.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailPolicy {
    /// Who may write to whom; empty: everyone to everyone. A sender may write to a
    /// recipient when a rule's `from` names its role (or `*`) and its `to` names the
    /// recipient's role, `overseer` (the swarm's overseer) or `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub allow: Vec<MailRule>,
    /// Largest body, in bytes.
    #[serde(default = "default_max_bytes")]
    #[schemars(range(min = 1, max = 16384))]
    pub max_bytes: i64,
    /// Messages one member may send per minute (each recipient of `@all` counts once).
    #[serde(default = "default_per_minute")]
    #[schemars(range(min = 1, max = 600))]
    pub per_minute: i64,
    /// A message not read within this time expires (its sender is told).
    #[serde(default = "default_mail_expiry")]
    #[schemars(schema_with = "crate::api::duration_schema")]
    pub expiry: crate::duration::SpecDuration,
}

fn default_max_bytes() -> i64 {
    4096
}
fn default_per_minute() -> i64 {
    20
}
fn default_mail_expiry() -> crate::duration::SpecDuration {
    crate::duration::default_of("1h")
}

impl Default for MailPolicy {
    fn default() -> Self {
        MailPolicy {
            allow: Vec::new(),
            max_bytes: default_max_bytes(),
            per_minute: default_per_minute(),
            expiry: default_mail_expiry(),
        }
    }
}

/// One rule of `coordination.mail.allow`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailRule {
    /// A role, a member's name, `overseer`, or `*`.
    #[schemars(
        length(max = 63),
        regex(pattern = r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$")
    )]
    pub from: String,
    /// Roles, members' names, `overseer`, or `*`.
    #[schemars(
        length(min = 1, max = 16),
        inner(
            length(max = 63),
            regex(pattern = r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$")
        )
    )]
    pub to: Vec<String>,
}

/// Defaults for every member of a swarm.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwarmDefaults {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSpec>,
    /// Loop settings of members that set none.
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub loop_: Option<LoopSpec>,
    /// Pod settings of every member and of the steps of the swarm's goals; roles and
    /// members layer over them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
    /// Tool-call guards of members whose role and own spec set none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<Guards>,
}

/// Settings of one role.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwarmRole {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSpec>,
    /// The workspace is mounted read-only and the role gets no write permissions.
    #[serde(default)]
    pub read_only: bool,
    /// Name of the prompt profile (in `prompts.profiles`) for this role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Pod settings of the role's agents and steps, over the swarm's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
    /// Tool-call guards of the role's agents that set none of their own (over the
    /// swarm's defaults, which they replace whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<Guards>,
}

/// Prompt layers of a swarm.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Prompts {
    /// Instructions every member gets first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub base: Option<String>,
    /// Named profiles, layered after the base for the roles that name them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 32), inner(length(max = 65536)))]
    pub profiles: BTreeMap<String, String>,
}

/// The swarm's overseer agent.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwarmOverseer {
    #[serde(default = "default_overseer_role")]
    #[schemars(schema_with = "role_schema")]
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub prompt: Option<String>,
}

fn default_overseer_role() -> String {
    "overseer".into()
}

/// A member agent of the swarm.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwarmMember {
    /// Name of the member; the Agent is named `<swarm>-<name>`.
    #[schemars(schema_with = "role_schema")]
    pub name: String,
    #[serde(default = "crate::kinds::agent::default_role")]
    #[schemars(schema_with = "role_schema")]
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub prompt: Option<String>,
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub loop_: Option<LoopSpec>,
    /// Pod settings of this member, over its role's and the swarm's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
}

/// Observed state of a Swarm.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwarmStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overseer: Option<OverseerStatus>,
    #[serde(default)]
    pub agents: AgentCounts,
    /// The members (bounded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub members: Vec<MemberStatus>,
    /// Every member spawned over the run (`overseer spawn`): queued, running, ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub spawned: Vec<crate::kinds::spawn::SpawnedMember>,
    /// The merge queue: every request pending, and the latest landed or refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub merge_queue: Vec<crate::kinds::merge::QueuedMerge>,
    /// The files its members hold (`overseer claim`), each until its holder is Done,
    /// its attempt ends or the run ends; copied into the ConfigMap `<swarm>-claims`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 512))]
    pub claims: Vec<crate::kinds::claim::Claim>,
    /// The highest merge queue id handed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_merge_id: Option<i64>,
    #[serde(default)]
    pub goals: GoalCounts,
    /// `Running`, `Suspended` (`spec.suspend`) or `Ended` (see `end`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<SwarmPhase>,
    /// When the run started (its first status): `spec.timeout` counts from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// How and when the run ended, with its report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<SwarmEnd>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum SwarmPhase {
    Running,
    Suspended,
    Ended,
}

/// Why a run ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum EndReason {
    /// `spec.timeout` passed.
    TimedOut,
    /// Every member ended its loop (Done, released, Blocked or Failed).
    Completed,
}

/// The end of a run and its final report.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwarmEnd {
    pub reason: EndReason,
    pub time: Time,
    /// Per member (the overseer included), as it stood when the run ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 101))]
    pub report: Vec<MemberReport>,
}

/// One member in the final report.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberReport {
    pub name: String,
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Pods it ran.
    #[serde(default)]
    pub attempts: i64,
    /// Tokens its current attempt's runs used (as its CLI reported them).
    #[serde(default)]
    pub tokens: i64,
    #[serde(default)]
    pub escalations: i64,
    #[serde(default)]
    pub mail_sent: i64,
    #[serde(default)]
    pub mail_received: i64,
    /// From its first pod to its exit, or to the end of the run.
    #[serde(default)]
    pub seconds: i64,
}

/// A swarm's state as one word, from its conditions (a Swarm has no phase): what
/// `overseer_swarms{phase}` counts and Argo CD's Swarm.lua reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwarmState {
    /// Every member exists and the overseer is ready.
    Ready,
    /// Members missing or the overseer not ready yet.
    NotReady,
    /// Its spec cannot be composed (`SpecValid=False`).
    SpecInvalid,
}

impl Swarm {
    /// Whether the swarm stops its members' pods (keeping their state): suspended,
    /// or its run ended.
    pub fn halts_members(&self) -> bool {
        self.spec.suspend
            || self
                .status
                .as_ref()
                .is_some_and(|s| s.phase == Some(SwarmPhase::Ended))
    }
}

impl SwarmStatus {
    /// None before the operator's first status.
    pub fn state(&self) -> Option<SwarmState> {
        let is = |type_: &str, status: &str| {
            self.conditions
                .iter()
                .any(|c| c.type_ == type_ && c.status == status)
        };
        if is(crate::conditions::SPEC_VALID, "False") {
            Some(SwarmState::SpecInvalid)
        } else if is(crate::conditions::READY, "True") {
            Some(SwarmState::Ready)
        } else if is(crate::conditions::READY, "False") {
            Some(SwarmState::NotReady)
        } else {
            None
        }
    }
}

/// The overseer agent of a swarm.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverseerStatus {
    #[schemars(schema_with = "object_name_schema")]
    pub name: String,
    #[serde(default)]
    pub ready: bool,
}

/// Agents of a swarm by phase.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCounts {
    pub total: i32,
    /// Agents whose activity is `working`.
    pub working: i32,
    pub pending: i32,
    pub running: i32,
    pub done: i32,
    pub blocked: i32,
    pub failed: i32,
    pub suspended: i32,
    /// Open escalations of the members, in all.
    #[serde(default)]
    pub escalations: i32,
    /// Mail waiting unread in the members' mailboxes, in all.
    #[serde(default)]
    pub unread_mail: i32,
    /// Spawned members waiting for a running slot.
    #[serde(default)]
    pub queued: i32,
}

/// Goals of a swarm by phase.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalCounts {
    pub total: i32,
    pub pending: i32,
    pub waiting: i32,
    pub running: i32,
    pub paused: i32,
    pub succeeded: i32,
    pub failed: i32,
}

/// One member as `overseer ps` shows it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberStatus {
    pub name: String,
    pub role: String,
    /// The member that spawned it (none: listed in `spec.agents`, or the overseer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Its open escalations.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub escalations: i32,
    /// Its unread mail.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unread_mail: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// The egress a swarm's NetworkPolicy allows besides DNS and the swarm's own pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SwarmEgress {
    /// Every public address (IPv4 and IPv6 but the private, shared, link-local and
    /// unique-local ranges): model APIs and git hosts, and nothing inside the cluster.
    #[serde(default)]
    pub public_internet: bool,
    /// More destinations, as CIDRs: the API server's address, an internal git host.
    #[serde(rename = "allowCIDRs", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 32),
        inner(regex(pattern = r"^[0-9a-fA-F:.]+/[0-9]{1,3}$"))
    )]
    pub allow_cidrs: Vec<String>,
}
