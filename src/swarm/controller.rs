//! The Swarm reconciler: applies the Agents a Swarm wants (its overseer and its
//! members), removes the members it no longer lists, keeps the optional
//! NetworkPolicy, and sums up its agents and goals in status. It only ever acts on
//! Agents that this Swarm controls.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use tracing::{info, instrument};

use super::compose;
use super::types::Swarm;
use crate::agent::Agent;
use crate::api::{CONTROLLER_MANAGER, apply_status, label_value};
use crate::conditions;
use crate::controller::{Context, Shutdown, log_outcome};
use crate::goal::Goal;
use crate::labels;
use crate::reasons;
use crate::{Error, Result};
use kube::core::DeserializeGuard as Guarded;

const CONTROLLER: &str = "swarm";

/// Runs the Swarm controller until `shutdown`.
pub async fn run(ctx: Arc<Context>, shutdown: Shutdown) {
    let swarms = ctx.api::<Guarded<Swarm>>();
    let controller = Controller::new(swarms, watcher::Config::default().any_semantic());
    let store = controller.store();
    let goal_store = store.clone();
    controller
        .owns(
            ctx.api::<Guarded<Agent>>(),
            watcher::Config::default().labels(labels::SWARM),
        )
        // A goal of the swarm changing phase changes its counts.
        .watches(
            ctx.api::<Guarded<Goal>>(),
            watcher::Config::default(),
            move |goal: Guarded<Goal>| goal.0.ok().and_then(|goal| swarm_of(&goal_store, &goal)),
        )
        .with_config(kube::runtime::controller::Config::default().concurrency(ctx.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(
            |object, ctx| {
                crate::controller::reconcile_guarded(
                    ctx.clone(),
                    CONTROLLER,
                    object,
                    move |object| reconcile(object, ctx),
                )
            },
            error_policy,
            ctx,
        )
        .for_each(|outcome| log_outcome(CONTROLLER, outcome))
        .await;
}

fn swarm_of(store: &Store<Guarded<Swarm>>, goal: &Goal) -> Option<ObjectRef<Guarded<Swarm>>> {
    let name = goal.spec.swarm.as_ref()?;
    let namespace = goal.namespace()?;
    let found = ObjectRef::new(name).within(&namespace);
    store.get(&found).map(|_| found)
}

fn error_policy(swarm: Arc<Guarded<Swarm>>, error: &Error, ctx: Arc<Context>) -> Action {
    crate::controller::retry_after_error(&ctx, CONTROLLER, &*swarm, error)
}

/// Whether `agent` is controlled by `swarm` (never act on anybody else's agents).
fn controlled_by(agent: &Agent, swarm: &Swarm) -> bool {
    let uid = swarm.uid();
    agent
        .owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())
}

/// The agent already has the wanted spec and labels (members' status changes bring
/// the swarm back often: nothing is written then).
#[instrument(skip_all, fields(swarm = %cached.name_any(), namespace = cached.namespace().unwrap_or_default()))]
async fn reconcile(cached: Arc<Swarm>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    let swarms: Api<Swarm> = Api::namespaced(ctx.client.clone(), &namespace);
    let Some(swarm) = swarms.get_opt(&name).await? else {
        return Ok(Action::await_change());
    };
    if swarm.meta().deletion_timestamp.is_some() {
        // Everything it made is owned by it: the garbage collector removes it.
        return Ok(Action::await_change());
    }
    let agents: Api<Agent> = Api::namespaced(ctx.client.clone(), &namespace);
    let selector = format!("{}={}", labels::SWARM, label_value(&name));
    let existing = agents
        .list(&ListParams::default().labels(&selector))
        .await?
        .items;
    let mut problems = compose::problems(&swarm);
    let desired = compose::desired_agents(&swarm);
    let params = PatchParams::apply(CONTROLLER_MANAGER).force();
    for wanted in &desired {
        let agent = &wanted.agent;
        let agent_name = agent.name_any();
        let current = match existing.iter().find(|a| a.name_any() == agent_name) {
            Some(found) => Some(found.clone()),
            // Not labelled for this swarm: it may still exist (a name taken by another).
            None => agents.get_opt(&agent_name).await?,
        };
        if let Some(other) = current.as_ref().filter(|a| !controlled_by(a, &swarm)) {
            let problem = format!(
                "agent {} already exists and does not belong to this swarm; it is left alone",
                other.name_any()
            );
            problems.push(problem);
            continue;
        }
        if current.as_ref().is_some_and(|c| wanted.is_met_by(c)) {
            continue;
        }
        let created = current.is_none();
        agents
            .patch(&agent_name, &params, &Patch::Apply(wanted.apply_body()))
            .await?;
        if !created {
            info!(agent = %agent_name, "updated swarm agent");
        }
        if created {
            info!(agent = %agent_name, "created swarm agent");
            let message = format!("agent {agent_name} (role {}) created", agent.spec.role);
            ctx.publish_about(&swarm, false, reasons::AGENT_CREATED, &message)
                .await;
        }
    }
    for agent in existing.iter().filter(|a| controlled_by(a, &swarm)) {
        let agent_name = agent.name_any();
        if desired.iter().any(|d| d.agent.name_any() == agent_name) {
            continue;
        }
        match agents.delete(&agent_name, &DeleteParams::default()).await {
            Ok(_) => {
                info!(agent = %agent_name, "removed swarm agent");
                let message = format!("agent {agent_name} is no longer listed: removed");
                ctx.publish_about(&swarm, false, reasons::AGENT_REMOVED, &message)
                    .await;
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    sync_network_policy(&ctx, &swarm).await?;

    let members: Vec<Agent> = agents
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .into_iter()
        .filter(|a| controlled_by(a, &swarm) && a.meta().deletion_timestamp.is_none())
        .collect();
    let goals: Vec<Goal> = Api::<Goal>::namespaced(ctx.client.clone(), &namespace)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|g| g.spec.swarm.as_deref() == Some(name.as_str()))
        .collect();
    let now = Time(jiff::Timestamp::now());
    let status = compose::status(&swarm, &members, &goals, &problems, &now);
    if swarm.status.as_ref() != Some(&status) {
        let was_valid = swarm.status.as_ref().is_none_or(|s| {
            !s.conditions
                .iter()
                .any(|c| c.type_ == conditions::SPEC_VALID && c.status == "False")
        });
        apply_status(&swarms, &name, CONTROLLER_MANAGER, &status).await?;
        if let Some(problem) = problems.first().filter(|_| was_valid) {
            ctx.publish_about(&swarm, true, reasons::INVALID_SPEC, problem)
                .await;
        }
    }
    Ok(Action::await_change())
}

/// Keeps the NetworkPolicy when `spec.networkPolicy` is on, removes it when off.
async fn sync_network_policy(ctx: &Context, swarm: &Swarm) -> Result<()> {
    let namespace = swarm.namespace().unwrap_or_default();
    let policies: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), &namespace);
    let name = compose::network_policy_name(&swarm.name_any());
    if swarm.spec.network_policy {
        policies
            .patch(
                &name,
                &PatchParams::apply(CONTROLLER_MANAGER).force(),
                &Patch::Apply(&compose::network_policy(swarm)),
            )
            .await?;
        return Ok(());
    }
    match policies.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error.into()),
    }
}
