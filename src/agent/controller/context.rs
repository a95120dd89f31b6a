//! What the Agent reconciler's parts share: the controller's context (caches,
//! indexes, what this operator last wrote), an agent's effective spec, and the status
//! write. The reconcile (controller.rs), its delivery (delivery.rs) and its children
//! (children.rs) read these; nothing here reads them back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, ResourceExt};
use tracing::instrument;

use crate::Result;
use crate::agent::candidate::OverseerState;
use crate::agent::{decide, oversight};
use crate::api::{self, CONTROLLER_MANAGER};
use crate::controller::Context;
use crate::kinds::agent::{Agent, AgentSpec, AgentStatus};
use crate::kinds::agent_pod::PodSummary;
use crate::kinds::swarm::Swarm;
use crate::kubernetes::fresh::{Applied, Deleting, Versions};
use crate::kubernetes::guard::Guarded;
use crate::kubernetes::index::Index;
use crate::reasons;

/// Per (namespace, overseer): held while a wake is built and delivered.
pub(super) type WakeLocks = Mutex<HashMap<(String, String), Arc<tokio::sync::Mutex<()>>>>;

pub(super) struct AgentContext {
    pub(super) ctx: Arc<Context>,
    /// The controller's cache of Agents: who oversees whom, and each overseer's state.
    pub(super) store: Store<Guarded<Agent>>,
    /// The agents seen naming each overseer.
    pub(super) overseen: Index,
    /// The agents seen controlled by each swarm.
    pub(super) members: Index,
    /// Every agent pod of the agents watched.
    pub(super) pods: Store<PodSummary>,
    /// The agents' Roles as the first list after the start found them, until compared.
    pub(super) roles: Arc<super::roles_at_start::RolesAtStart>,
    /// The pods seen of each agent.
    pub(super) pods_of: Index,
    pub(super) swarms: Store<Guarded<Swarm>>,
    /// Each Agent's version as this operator last wrote or read it (src/kubernetes/fresh.rs).
    pub(super) versions: Arc<Versions>,
    /// The Roles and instruction ConfigMaps as this operator last applied or read them.
    pub(super) applied: Applied,
    /// Pods this operator deleted that the pod cache may not show as deleting yet.
    pub(super) deleting: Deleting,
    /// One wake at a time per overseer, so a batch is never sent twice.
    pub(super) wake_locks: WakeLocks,
    /// The agents whose deliveries run out of the reconcile now
    /// (src/agent/controller/dispatch.rs).
    pub(super) dispatch: Arc<crate::delivery::slots::Running<Guarded<Agent>>>,
}

impl AgentContext {
    pub(super) fn wake_lock(&self, namespace: &str, overseer: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.wake_locks.lock().unwrap_or_else(|e| e.into_inner());
        locks
            .entry((namespace.to_string(), overseer.to_string()))
            .or_default()
            .clone()
    }
}

/// The Swarm `agent`'s controller owner reference names, as cached.
pub(super) fn owning_swarm(swarms: &Store<Guarded<Swarm>>, agent: &Agent) -> Option<Box<Swarm>> {
    let owner = oversight::swarm_owner(agent)?;
    let reference = ObjectRef::new(&owner.name).within(&agent.namespace().unwrap_or_default());
    let cached = swarms.get(&reference)?;
    cached.0.as_ref().ok().map(|swarm| Box::new(swarm.clone()))
}

/// What an agent runs with, kept beside the Agent as the API server has it (whose spec
/// stays the user's): its effective spec, and the swarm it belongs to, if any.
pub(super) struct Effective {
    pub(super) spec: AgentSpec,
    pub(super) swarm: Option<Box<Swarm>>,
}

/// Why an agent cannot run: the reason and message its `Ready` condition gets.
pub(super) struct Unusable {
    pub(super) reason: &'static str,
    pub(super) message: String,
}

/// The agent's effective spec: what it leaves unset comes from its swarm (as cached:
/// a change of it brings its agents back), and a person's loop switch wins. A missing
/// swarm or image makes it unusable.
/// The agent's prompt with its variables replaced, once; an unknown variable there or in
/// the swarm's layers it reads makes the agent unusable, naming the field.
fn expand_variables(
    spec: &mut AgentSpec,
    agent: &str,
    swarm: Option<&Swarm>,
) -> std::result::Result<(), Unusable> {
    let variables = crate::agent::instructions::variables(agent, spec);
    let unusable = |field: String| {
        move |unknown: crate::variables::Unknown| Unusable {
            reason: reasons::INVALID_SPEC,
            message: unknown.describe(&field),
        }
    };
    if let Some(prompt) = &spec.prompt {
        spec.prompt = Some(
            crate::variables::expand(prompt, &variables).map_err(unusable("spec.prompt".into()))?,
        );
    }
    let Some(swarm) = swarm else { return Ok(()) };
    let name = swarm.name_any();
    if let Some(base) = &swarm.spec.prompts.base {
        crate::variables::expand(base, &variables)
            .map_err(unusable(format!("swarm {name}: spec.prompts.base")))?;
    }
    let profile = swarm
        .spec
        .roles
        .get(&spec.role)
        .and_then(|r| r.profile.as_ref());
    if let Some((profile, text)) =
        profile.and_then(|p| swarm.spec.prompts.profiles.get(p).map(|t| (p, t)))
    {
        crate::variables::expand(text, &variables).map_err(unusable(format!(
            "swarm {name}: spec.prompts.profiles.{profile}"
        )))?;
    }
    Ok(())
}

pub(super) fn resolve(
    swarms: &Store<Guarded<Swarm>>,
    agent: &Agent,
) -> std::result::Result<Effective, Unusable> {
    let namespace = agent.namespace().unwrap_or_default();
    let swarm = match &agent.spec.swarm {
        Some(name) => {
            let cached = swarms.get(&ObjectRef::new(name).within(&namespace));
            match cached.as_deref().and_then(|s| s.0.as_ref().ok()) {
                Some(swarm) => Some(Box::new(swarm.clone())),
                None => {
                    return Err(Unusable {
                        reason: reasons::SWARM_NOT_FOUND,
                        message: format!("spec.swarm: there is no swarm {name} in this namespace"),
                    });
                }
            }
        }
        None => None,
    };
    let member = agent
        .owner_references()
        .iter()
        .any(|o| o.kind == "Swarm" && o.controller == Some(true));
    let mut spec = crate::roles::effective_spec(&agent.spec, swarm.as_deref(), member);
    expand_variables(&mut spec, &agent.name_any(), swarm.as_deref())?;
    // A suspended or ended swarm stops its members' pods and keeps their state; a
    // member that has ended its loop stays as it ended.
    let ended = matches!(
        agent.status.as_ref().and_then(|s| s.phase),
        Some(
            crate::kinds::agent::AgentPhase::Done
                | crate::kinds::agent::AgentPhase::Blocked
                | crate::kinds::agent::AgentPhase::Failed
        )
    );
    if member && !ended && swarm.as_deref().is_some_and(Swarm::halts_members) {
        spec.suspend = true;
    }
    spec.loop_.enabled = decide::loop_enabled(
        agent
            .annotations()
            .get(decide::LOOP_ANNOTATION)
            .map(String::as_str),
        spec.loop_.enabled,
    );
    if spec.runtime.image.is_none() {
        return Err(Unusable {
            reason: reasons::NO_IMAGE,
            message: "no image: set spec.runtime.image, or the swarm's defaults.runtime or roles.<role>.runtime".into(),
        });
    }
    // The schema takes CIDR-shaped text; its sandbox needs CIDRs the API server takes.
    let allowed = agent.spec.egress.iter().flat_map(|e| &e.allow_cidrs);
    if let Some(bad) = allowed
        .into_iter()
        .find(|c| c.parse::<ipnet::IpNet>().is_err())
    {
        return Err(Unusable {
            reason: reasons::INVALID_SPEC,
            message: format!("spec.egress.allowCIDRs: {bad:?} is not a CIDR"),
        });
    }
    Ok(Effective { spec, swarm })
}

/// Whether `overseer` can take a wake: a ready pod, whose CLI asks no person anything.
pub(super) fn overseer_state(overseer: &Agent) -> OverseerState {
    match &overseer.status {
        Some(status) if status.ready_pod().is_some() => {
            if crate::delivery::inbox::waits_on_a_person(status) {
                OverseerState::WaitingOnPerson
            } else {
                OverseerState::Ready
            }
        }
        _ => OverseerState::Offline,
    }
}

/// Writes the operator's part of the status: `activity` and `exit` belong to the
/// pod (or the overseer), `inbox` to senders, `lastMessage` to `apply_last_message`,
/// `mailbox` and `mail` to the mailroom (src/agent/controller/mailroom.rs).
/// Written onto the version of `agent` it was decided on: false when someone wrote
/// the agent since (a courier, the shim, another agent's delivery), whose watch event
/// brings the agent back to be decided again; applying over that write would roll it
/// back. Remembers the version written (src/kubernetes/fresh.rs).
#[instrument(skip_all)]
pub(super) async fn apply_status(
    versions: &Versions,
    agents: &Api<Agent>,
    agent: &Agent,
    status: &AgentStatus,
) -> Result<bool> {
    let fields = operator_fields(status)?;
    let (name, version) = (
        agent.name_any(),
        agent.resource_version().unwrap_or_default(),
    );
    match api::apply_status_at::<Agent>(agents, &name, CONTROLLER_MANAGER, &version, &fields).await
    {
        Ok(written) => {
            versions.saw(&written);
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// The status fields the operator's reconciles write: the others belong to the shim,
/// the CLI and the mailroom.
pub(super) fn operator_fields(status: &AgentStatus) -> Result<serde_json::Value> {
    let mut status = serde_json::to_value(status)?;
    if let Some(fields) = status.as_object_mut() {
        for owned_elsewhere in [
            "activity",
            "exit",
            "inbox",
            "lastMessage",
            "escalationRequests",
            "escalationAck",
            "outbox",
            "mailRead",
            "mailbox",
            "mail",
            "spawnRequests",
            "spawns",
            "mergeRequests",
            "merges",
            "claimRequests",
            "claims",
        ] {
            fields.remove(owned_elsewhere);
        }
    }
    Ok(status)
}

impl crate::controller::ControllerContext for AgentContext {
    fn shared(&self) -> &Arc<Context> {
        &self.ctx
    }
}
