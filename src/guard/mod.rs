//! Tool-call guards: the policy an agent's pod carries (built by the operator from
//! `spec.guards`), and the pure judgement of one tool call against it, which
//! `overseer guard` runs as the CLI's own pre-tool hook (docs/guards.md).

pub mod claude;
pub mod codex;
pub mod copilot;
pub mod hook;
pub mod pi;
pub mod pod;
mod shell;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::kinds::guard::Guards;

/// Where the policy is mounted in the agent's pod (a downward API file, read-only).
pub const POLICY_DIR: &str = "/etc/overseer/guard";
pub const POLICY_FILE: &str = "policy.json";
/// `POLICY_DIR/POLICY_FILE`, where `overseer guard` reads it by default.
pub const POLICY_PATH: &str = "/etc/overseer/guard/policy.json";

/// Where the ServiceAccount token and its siblings are mounted: never for the agent
/// to read through its tools (the shim and `overseer` commands use it themselves).
const TOKEN_DIRS: [&str; 2] = [
    "/var/run/secrets/kubernetes.io",
    "/run/secrets/kubernetes.io",
];

/// Scratch space writable besides the workspace when `writablePaths` is unset: every
/// build tool writes there, and it is the pod's own.
const SCRATCH: &str = "/tmp";

/// The guards as the pod carries them: everything the hook needs, nothing it must look
/// up.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub writable_paths: Vec<String>,
    /// Built-in patterns first, then the spec's; each with the rule's name.
    pub denied_commands: Vec<DeniedCommand>,
    pub denied_tools: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DeniedCommand {
    /// What the pattern stands for, in the reason the CLI is given.
    pub rule: String,
    pub pattern: String,
}

/// The policy of an agent with `guards` (its own, else its role's or its swarm's, else
/// the defaults), working in `workspace`, whose work lands on `targets` (branches no
/// push may name). `None` when the guards are off.
pub fn policy(guards: &Guards, workspace: &str, targets: &[String]) -> Option<Policy> {
    if !guards.enabled {
        return None;
    }
    let writable_paths = match guards.writable_paths.is_empty() {
        true => vec![workspace.to_string(), SCRATCH.to_string()],
        false => guards.writable_paths.clone(),
    };
    let mut denied_commands = vec![
        DeniedCommand {
            rule: "a force push".into(),
            pattern: r"\bgit\b.*\bpush\b.*(\s--force(-with-lease|-if-includes)?\b|\s-[a-zA-Z]*f[a-zA-Z]*\b|\s\+\S)".into(),
        },
        DeniedCommand {
            rule: "reading the ServiceAccount token".into(),
            pattern: TOKEN_DIRS.map(regex::escape).join("|"),
        },
    ];
    for target in targets {
        denied_commands.push(DeniedCommand {
            rule: format!("a push to the target branch {target}"),
            pattern: format!(
                r"\bgit\b.*\bpush\b.*[\s:](refs/heads/)?{}(\s|$)",
                regex::escape(target)
            ),
        });
    }
    denied_commands.extend(guards.denied_commands.iter().map(|pattern| DeniedCommand {
        rule: format!("a command matching {pattern:?}"),
        pattern: pattern.clone(),
    }));
    Some(Policy {
        writable_paths,
        denied_commands,
        denied_tools: guards.denied_tools.clone(),
    })
}

/// The policy of the agent of effective spec `spec` in the swarm `swarm`, working in
/// `workspace` (None: guards off).
pub fn of_agent(
    spec: &crate::kinds::agent::AgentSpec,
    swarm: Option<&crate::kinds::swarm::SwarmSpec>,
    workspace: &str,
) -> Option<Policy> {
    let merge = swarm
        .and_then(|s| s.coordination.as_ref())
        .and_then(|c| c.merge.as_ref());
    policy(
        &spec.guards.clone().unwrap_or_default(),
        workspace,
        &targets(merge, spec.workspace.as_deref()),
    )
}

/// What the agent's instructions say of its guards: every runtime is told, and for the
/// runtimes without a hook (docs/runtimes.md) this is all that holds them.
pub fn instructions(policy: &Policy) -> String {
    let mut out = format!(
        "Your tool calls are checked before they run; a call that breaks these rules is \
         blocked and you are told why, and repeated blocks are escalated to your overseer.\n\
         - Write only under: {}.\n",
        policy.writable_paths.join(", ")
    );
    for denied in &policy.denied_commands {
        out.push_str(&format!("- Not allowed: {}.\n", denied.rule));
    }
    if !policy.denied_tools.is_empty() {
        out.push_str(&format!(
            "- Not allowed: the tools {}.\n",
            policy.denied_tools.join(", ")
        ));
    }
    out
}

/// The branches no push of an agent may name: where its swarm's merge queue lands work
/// (the queue's own rule), else the branch its workspace starts from, else `main` and
/// `master`.
pub fn targets(
    merge: Option<&crate::kinds::merge::MergePolicy>,
    workspace: Option<&crate::workspace::Workspace>,
) -> Vec<String> {
    let start = workspace
        .and_then(|w| w.git.as_ref())
        .and_then(|git| git.r#ref.as_deref());
    match (merge, start) {
        (Some(queue), _) => vec![queue.landing_branch(start)],
        (None, Some(branch)) => vec![branch.to_string()],
        (None, None) => vec!["main".into(), "master".into()],
    }
}

/// One tool call, as every runtime's hook input reduces to it.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    /// A shell command, run in `cwd`.
    Shell { command: String, cwd: String },
    /// A file written or edited by the CLI's own tool.
    Write { path: String, cwd: String },
    /// A file or folder read or searched by the CLI's own tool.
    Read { path: String, cwd: String },
    /// Any other tool: only its name is judged.
    Other,
}

/// The judgement of one call.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Allow,
    /// Blocked, and why: the text the CLI gives the model.
    Block(String),
}

/// Judges `call` of the tool `tool` against `policy`. A pattern that does not compile
/// blocks every shell command: a guard that cannot check fails closed.
pub fn judge(policy: &Policy, tool: &str, call: &Call) -> Verdict {
    if policy.denied_tools.iter().any(|t| t == tool) {
        return block(format!("the tool {tool} is not allowed for this agent"));
    }
    match call {
        Call::Shell { command, cwd } => judge_shell(policy, command, cwd),
        Call::Write { path, cwd } => judge_write(policy, &shell::absolute(path, cwd)),
        Call::Read { path, cwd } => judge_read(&shell::absolute(path, cwd)),
        Call::Other => Verdict::Allow,
    }
}

fn judge_shell(policy: &Policy, command: &str, cwd: &str) -> Verdict {
    for denied in &policy.denied_commands {
        match Regex::new(&denied.pattern) {
            Ok(pattern) if pattern.is_match(command) => {
                return block(format!("{} is not allowed for this agent", denied.rule));
            }
            Ok(_) => {}
            Err(_) => {
                return block(format!(
                    "the guard's {} does not compile, so no command can be checked",
                    denied.rule
                ));
            }
        }
    }
    for path in shell::written_paths(command, cwd) {
        if let Verdict::Block(reason) = judge_write(policy, &path) {
            return Verdict::Block(reason);
        }
    }
    Verdict::Allow
}

fn judge_write(policy: &Policy, path: &str) -> Verdict {
    if let Verdict::Block(reason) = judge_read(path) {
        return Verdict::Block(reason);
    }
    let inside = policy
        .writable_paths
        .iter()
        .any(|allowed| shell::under(path, allowed));
    match inside {
        true => Verdict::Allow,
        false => block(format!(
            "writing {path} is not allowed: this agent may write only under {}",
            policy.writable_paths.join(", ")
        )),
    }
}

fn judge_read(path: &str) -> Verdict {
    match TOKEN_DIRS.iter().any(|dir| shell::under(path, dir)) {
        true => block("reading the ServiceAccount token is not allowed for this agent".into()),
        false => Verdict::Allow,
    }
}

fn block(reason: String) -> Verdict {
    Verdict::Block(format!("overseer guard: {reason}"))
}

#[cfg(test)]
mod tests;
