//! Role resolution, shared by the Agent, Goal and Swarm controllers: the built-in
//! roles under a swarm's own settings, the spec an agent runs with (what it inherits
//! from its swarm), and the names a swarm gives its members.

use crate::api::RuntimeSpec;
use crate::kinds::agent::{AgentSpec, LoopSpec};
use crate::kinds::swarm::{Swarm, SwarmRole, SwarmSpec};
use crate::template::PodTemplate;

/// Name of a swarm's overseer Agent: `<swarm>-overseer`.
pub const OVERSEER_MEMBER: &str = "overseer";

/// A built-in role: whether it only reads, and its default profile.
pub struct BuiltinRole {
    pub name: &'static str,
    pub read_only: bool,
    pub profile: &'static str,
}

/// Roles in the style of the usual hierarchy, usable without any settings.
pub const BUILTIN_ROLES: &[BuiltinRole] = &[
    BuiltinRole {
        name: "overseer",
        read_only: false,
        profile: "You lead this swarm: keep every member working until its part is genuinely done, give direction when one stops early, and release a member only when it is finished or beyond repair.",
    },
    BuiltinRole {
        name: "coordinator",
        read_only: false,
        profile: "You coordinate this swarm: split the work, hand each member a clear task, keep them moving, and integrate what they finish.",
    },
    BuiltinRole {
        name: "lead",
        read_only: false,
        profile: "You lead this swarm: decide the approach, review what members produce, and keep them working until the goal is met.",
    },
    BuiltinRole {
        name: "builder",
        read_only: false,
        profile: "You build: implement your task in small, tested steps, commit as you go, and run `overseer loop done` only when it works.",
    },
    BuiltinRole {
        name: "scout",
        read_only: true,
        profile: "You scout: explore the code and report findings with file paths and line numbers. Your workspace is read-only; change nothing.",
    },
    BuiltinRole {
        name: "reviewer",
        read_only: true,
        profile: "You review: read the changes critically and report problems as path:line with the reason. Your workspace is read-only; change nothing.",
    },
    BuiltinRole {
        name: "guardian",
        read_only: false,
        profile: "You guard: check that the work before you is correct, tested and safe to keep. Run what verifies it, report each problem with its evidence, and fail when it must not stand.",
    },
    BuiltinRole {
        name: "merger",
        read_only: false,
        profile: "You merge: integrate finished work, resolve conflicts, and keep the main branch green.",
    },
    BuiltinRole {
        name: "monitor",
        read_only: true,
        profile: "You monitor: watch CI, logs and the members' progress and report what goes wrong. Your workspace is read-only; change nothing.",
    },
];

/// A role as it applies: built-in defaults under the swarm's own settings.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResolvedRole {
    pub runtime: Option<RuntimeSpec>,
    pub read_only: bool,
    /// The profile text (a named profile of the swarm, else the built-in one).
    pub profile: Option<String>,
    pub pod_template: Option<PodTemplate>,
    pub guards: Option<crate::kinds::guard::Guards>,
}

/// The role `name` of the swarm `spec` (None: outside any swarm).
pub fn role(swarm: Option<&SwarmSpec>, name: &str) -> ResolvedRole {
    let builtin = BUILTIN_ROLES.iter().find(|r| r.name == name);
    let own: Option<&SwarmRole> = swarm.and_then(|s| s.roles.get(name));
    let named_profile = own
        .and_then(|r| r.profile.as_ref())
        .and_then(|p| swarm.and_then(|s| s.prompts.profiles.get(p)))
        .cloned();
    ResolvedRole {
        runtime: own.and_then(|r| r.runtime.clone()),
        read_only: own.map_or(builtin.is_some_and(|b| b.read_only), |r| {
            r.read_only || builtin.is_some_and(|b| b.read_only)
        }),
        profile: named_profile.or_else(|| builtin.map(|b| b.profile.to_string())),
        pod_template: own.and_then(|r| r.pod_template.clone()),
        guards: own.and_then(|r| r.guards.clone()),
    }
}

/// The spec an agent runs with: its own settings first, then its swarm's role,
/// then the swarm's defaults. A member's loop is set by its Swarm; an agent that
/// only names the swarm and leaves its loop entirely at the defaults takes the swarm's.
pub fn effective_spec(spec: &AgentSpec, swarm: Option<&Swarm>, member: bool) -> AgentSpec {
    let Some(swarm) = swarm else {
        return spec.clone();
    };
    let role = role(Some(&swarm.spec), &spec.role);
    let defaults = &swarm.spec.defaults;
    let mut effective = spec.clone();
    let mut runtime = spec.runtime.clone();
    if let Some(role_runtime) = &role.runtime {
        runtime = runtime.or(role_runtime);
    }
    if let Some(default_runtime) = &defaults.runtime {
        runtime = runtime.or(default_runtime);
    }
    effective.runtime = runtime;
    if !member
        && spec.loop_ == LoopSpec::default()
        && let Some(swarm_loop) = &defaults.loop_
    {
        effective.loop_ = swarm_loop.clone();
    }
    let template = PodTemplate::layered([
        defaults.pod_template.as_ref(),
        role.pod_template.as_ref(),
        spec.pod_template.as_deref(),
    ]);
    effective.pod_template = (!template.is_empty()).then(|| Box::new(template));
    if effective.notify.is_none() {
        effective.notify = swarm.spec.notify.clone();
    }
    if effective.workspace.is_none() {
        effective.workspace = swarm.spec.workspace.clone().map(Box::new);
    }
    if effective.guards.is_none() {
        effective.guards = role
            .guards
            .or_else(|| defaults.guards.clone())
            .map(Box::new);
    }
    for (name, value) in &swarm.spec.vars {
        effective
            .vars
            .entry(name.clone())
            .or_insert_with(|| value.clone());
    }
    effective
}

/// The Agent name of a member (`<swarm>-<member>`).
pub fn member_name(swarm: &str, member: &str) -> String {
    format!("{swarm}-{member}")
}
