//! Tool-call guards: what an agent's CLI may not do inside its turn, set per agent or
//! per swarm role (docs/guards.md). The decision is made in the guard folder; these are the
//! fields a person sets and the counts the shim reports.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Guards on an agent's tool calls, checked by the CLI's own hook before each call runs
/// (mechanically where the runtime has one: docs/runtimes.md). On by default with the
/// built-in denials; these fields add to them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct Guards {
    /// Off: no tool call is checked.
    #[serde(default = "on")]
    pub enabled: bool,
    /// Absolute paths the agent may write, each with everything under it. Unset: the
    /// workspace and `/tmp`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(length(min = 1, max = 1024)))]
    #[x_kube(validation = Rule::new("self.all(p, p.startsWith('/'))").message("writablePaths must be absolute paths"))]
    #[x_kube(validation = Rule::new("self.all(p, !p.matches('(^|/)[.][.](/|$)'))").message("writablePaths may not contain '..'"))]
    pub writable_paths: Vec<String>,
    /// Shell commands refused besides the built-in ones (force pushes, pushes to the
    /// target branch, the ServiceAccount token): regular expressions (RE2 syntax)
    /// searched for anywhere in the command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 1024)))]
    #[x_kube(validation = Rule::new("self.all(p, ''.matches(p) || !''.matches(p))").message("deniedCommands must be valid regular expressions"))]
    pub denied_commands: Vec<String>,
    /// Tools the agent may not call, by the CLI's own name (claude: `WebFetch`,
    /// `NotebookEdit`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 64),
        inner(length(min = 1, max = 128), regex(pattern = r"^[A-Za-z0-9_.:-]+$"))
    )]
    pub denied_tools: Vec<String>,
    /// Blocked calls in one attempt that open an escalation to the agent's overseer
    /// (0: never).
    #[serde(default = "default_escalate_after")]
    #[schemars(range(min = 0, max = 1000))]
    pub escalate_after: i32,
}

fn on() -> bool {
    true
}

fn default_escalate_after() -> i32 {
    3
}

impl Default for Guards {
    fn default() -> Self {
        Guards {
            enabled: true,
            writable_paths: Vec::new(),
            denied_commands: Vec::new(),
            denied_tools: Vec::new(),
            escalate_after: default_escalate_after(),
        }
    }
}

/// The tool calls the guards blocked in this attempt (reported by the shim).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuardCounts {
    #[schemars(range(min = 0))]
    pub blocked: i64,
    /// The guard's reason for the last one (its own words, never the agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub last_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_time: Option<Time>,
}
