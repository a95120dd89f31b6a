//! The Swarm reconciler: applies the Agents a Swarm wants (its overseer and its
//! members), removes the members it no longer lists, keeps the optional
//! NetworkPolicy, and sums up its agents and goals in status. It only ever acts on
//! Agents that this Swarm controls.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use tracing::{info, instrument};

use super::{claimer, claims, compose, merge, merger, spawn, spawner};
use crate::Result;
use crate::agent::Agent;
use crate::api::{CONTROLLER_MANAGER, MANAGED_BY, apply_status_returning};
use crate::conditions;
use crate::controller::{Context, Shutdown, deferred, listed, readable, run_controller};
use crate::goal::Goal;
use crate::kinds::swarm::Swarm;
use crate::kubernetes::caches::Subscription;
use crate::kubernetes::fresh::{Applied, Versions};
use crate::kubernetes::guard::Guarded;
use crate::reasons;

const CONTROLLER: &str = "swarm";
const NETWORK_POLICY: &str = "NetworkPolicy";

/// Runs the Swarm controller on its shares of the Swarm, Agent and Goal watches until
/// `shutdown`.
pub async fn run(
    ctx: Arc<Context>,
    swarms: Subscription<Guarded<Swarm>>,
    agents: Subscription<Guarded<Agent>>,
    goals: Subscription<Guarded<Goal>>,
    shutdown: Shutdown,
) {
    // Members and goals are read from these caches, never listed in a reconcile: a
    // member's every status change brings its swarm back.
    let members = agents.store.clone();
    let goal_cache = goals.store.clone();
    let store = swarms.store.clone();
    let versions = swarms.versions.clone();
    let _ = ctx
        .metrics
        .by_phase
        .swarms
        .set(crate::metrics::phase_count(store.clone(), |s: &Swarm| {
            s.status.as_ref().and_then(|s| s.state())
        }));
    // Merge attempts' pods are read from this cache, never listed in a reconcile; one
    // that ends brings its swarm back.
    let selector = format!("{}={},{}", MANAGED_BY.0, MANAGED_BY.1, merger::MERGE_LABEL);
    let (pods, pod_writer) = reflector::store();
    let pod_events = watcher(
        ctx.api::<Pod>(),
        watcher::Config::default().labels(&selector),
    )
    .default_backoff()
    .modify(|pod| pod.managed_fields_mut().clear())
    .reflect(pod_writer)
    .touched_objects();
    let controller = Controller::for_stream(swarms.touched(), store.clone())
        .owns_stream(agents.touched())
        .owns_stream(pod_events)
        // A goal of the swarm changing phase changes its counts.
        .watches_stream(goals.touched(), move |goal: Guarded<Goal>| {
            goal.0.ok().and_then(|goal| swarm_of(&store, &goal))
        });
    let context = Arc::new(SwarmContext {
        ctx,
        members,
        goals: goal_cache,
        pods,
        versions,
        applied: Applied::default(),
    });
    run_controller(controller, CONTROLLER, context, shutdown, reconcile).await;
}

struct SwarmContext {
    ctx: Arc<Context>,
    /// Every Agent (the shared cache); a swarm's members carry its label.
    members: Store<Guarded<Agent>>,
    goals: Store<Guarded<Goal>>,
    /// The pods of merge attempts.
    pods: Store<Pod>,
    /// Each Swarm's version as this operator last wrote or read it.
    versions: Arc<Versions>,
    /// Each swarm's NetworkPolicy as last applied (or known absent).
    applied: Applied,
}

fn swarm_of(store: &Store<Guarded<Swarm>>, goal: &Goal) -> Option<ObjectRef<Guarded<Swarm>>> {
    let name = goal.spec.swarm.as_ref()?;
    let namespace = goal.namespace()?;
    let found = ObjectRef::new(name).within(&namespace);
    store.get(&found).map(|_| found)
}

/// Whether `agent` is controlled by `swarm` (never act on anybody else's agents).
fn controlled_by(agent: &Agent, swarm: &Swarm) -> bool {
    crate::api::controlled_by(agent, &swarm.uid().unwrap_or_default())
}

/// The agent already has the wanted spec and labels (members' status changes bring
/// the swarm back often: nothing is written then).
#[instrument(skip_all, fields(swarm = %cached.name_any(), namespace = cached.namespace().unwrap_or_default()))]
async fn reconcile(cached: Arc<Swarm>, sc: Arc<SwarmContext>) -> Result<Action> {
    if !listed(&sc.members) || !listed(&sc.goals) || !listed(&sc.pods) {
        return Ok(deferred(&sc.ctx, CONTROLLER));
    }
    let ctx = &sc.ctx;
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    let swarms: Api<Swarm> = Api::namespaced(ctx.client.clone(), &namespace);
    // Its status is compared with what it should be: decide on a cached Swarm only when
    // it holds this operator's last write, or a write would repeat.
    let swarm = if sc.versions.is_current(&*cached) {
        cached
    } else {
        let Some(fresh) = swarms.get_opt(&name).await? else {
            forget(&sc, &namespace, &name);
            return Ok(Action::await_change());
        };
        sc.versions.saw(&fresh);
        Arc::new(fresh)
    };
    if swarm.meta().deletion_timestamp.is_some() {
        // Everything it made is owned by it: the garbage collector removes it.
        forget(&sc, &namespace, &name);
        return Ok(Action::await_change());
    }
    let now = Time(jiff::Timestamp::now());
    let (existing, others) = agents_of(&sc, &swarm);
    let spawning = spawn::plan(&swarm, &existing, &others, now.0);
    let merging = merge::plan(
        &swarm,
        &existing,
        |pod| attempt(&sc, &namespace, pod),
        now.0,
    );
    let claiming = claims::plan(&swarm, &existing, now.0);
    let swarm = write_intent(&sc, swarm, &spawning, &merging, &claiming).await?;
    let spawning = spawner::carry_out(ctx, &swarm, spawning).await?;
    merger::carry_out(ctx, &swarm, &merging).await?;
    let mut problems = compose::problems(&swarm);
    problems.extend(claimer::carry_out(ctx, &sc.applied, &swarm, &claiming).await?);
    let spawned: Vec<String> = spawning
        .spawned
        .iter()
        .map(|e| crate::roles::member_name(&name, &e.name))
        .collect();
    let (taken, members) = apply_members(ctx, &swarm, existing, &spawned).await?;
    problems.extend(taken);
    match sync_network_policy(&sc, &swarm).await {
        Err(taken @ crate::Error::NameTaken { .. }) => problems.push(taken.to_string()),
        outcome => outcome?,
    }
    let goals: Vec<Goal> = readable(&sc.goals.state())
        .filter(|g| g.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|g| g.spec.swarm.as_deref() == Some(name.as_str()))
        .cloned()
        .collect();
    let mut status = compose::status(&swarm, &members, &goals, &problems, &now);
    compose::with_spawned(&mut status, &name, spawning.spawned);
    status.merge_queue = merging.queue;
    status.last_merge_id = Some(merging.last_id).filter(|id| *id > 0);
    status.claims = claiming.claims;
    let timer = super::run::decide(&swarm, &members, &mut status, now.0);
    let before = swarm.status.as_ref().map_or(&[][..], |s| &s.conditions[..]);
    crate::health::settle_swarm(&mut status, before, swarm.metadata.generation, &now);
    if swarm.status.as_ref() != Some(&status) {
        let was_valid = swarm.status.as_ref().is_none_or(|s| {
            !s.conditions
                .iter()
                .any(|c| c.type_ == conditions::SPEC_VALID && c.status == "False")
        });
        let written = apply_status_returning(&swarms, &name, CONTROLLER_MANAGER, &status).await?;
        sc.versions.saw(&written);
        if let Some(problem) = problems.first().filter(|_| was_valid) {
            ctx.publish_about(&*swarm, true, reasons::INVALID_SPEC, problem);
        }
        publish_end(ctx, &swarm, &status);
    }
    Ok(timer.map_or_else(Action::await_change, Action::requeue))
}

/// Writes the swarm's lists of spawned members, merges and claims as the plans have them,
/// before anything they decide is made: a stop after this write repeats what follows,
/// never makes two. Returns the swarm as it is now.
async fn write_intent(
    sc: &SwarmContext,
    swarm: Arc<Swarm>,
    spawning: &spawn::SpawnPlan,
    merging: &merge::MergePlan,
    claiming: &claims::ClaimPlan,
) -> Result<Arc<Swarm>> {
    let mut status = swarm.status.clone().unwrap_or_default();
    status.spawned = spawning.spawned.clone();
    status.claims = claiming.claims.clone();
    status.merge_queue = merging.queue.clone();
    status.last_merge_id = Some(merging.last_id).filter(|id| *id > 0);
    if swarm.status.clone().unwrap_or_default() == status {
        return Ok(swarm);
    }
    let swarms: Api<Swarm> = Api::namespaced(
        sc.ctx.client.clone(),
        &swarm.namespace().unwrap_or_default(),
    );
    let written =
        apply_status_returning(&swarms, &swarm.name_any(), CONTROLLER_MANAGER, &status).await?;
    sc.versions.saw(&written);
    Ok(Arc::new(written))
}

/// The merge attempt `pod` of the namespace as the cache shows it.
fn attempt(sc: &SwarmContext, namespace: &str, pod: &str) -> merge::Attempt {
    let found = sc.pods.get(&ObjectRef::new(pod).within(namespace));
    merger::attempt_of(found.as_deref())
}

/// The Agents `swarm` controls, and the names of its namespace's other Agents, from
/// the cache.
fn agents_of(sc: &SwarmContext, swarm: &Swarm) -> (Vec<Agent>, Vec<String>) {
    let namespace = swarm.namespace();
    let (mine, others): (Vec<Agent>, Vec<Agent>) = readable(&sc.members.state())
        .filter(|a| a.namespace() == namespace)
        .cloned()
        .partition(|a| controlled_by(a, swarm));
    (mine, others.iter().map(ResourceExt::name_any).collect())
}

/// The Event of a run that has just ended.
fn publish_end(
    ctx: &crate::controller::Context,
    swarm: &Swarm,
    status: &crate::kinds::swarm::SwarmStatus,
) {
    let ended_before = swarm.status.as_ref().and_then(|s| s.end.as_ref());
    let Some(end) = status.end.as_ref().filter(|e| Some(*e) != ended_before) else {
        return;
    };
    let tokens: i64 = end.report.iter().map(|m| m.tokens).sum();
    let message = format!(
        "the run ended ({:?}): {} members, {tokens} tokens; kubectl get swarm {} -o yaml shows the report",
        end.reason,
        end.report.len(),
        swarm.name_any()
    );
    ctx.publish_about(swarm, false, reasons::SWARM_ENDED, &message);
}

/// Forgets what this operator knew of a swarm that is gone: one made again under its
/// name starts afresh (its NetworkPolicy went with the old one).
fn forget(sc: &SwarmContext, namespace: &str, name: &str) {
    sc.versions.forget(namespace, name);
    let policy = compose::network_policy_name(name);
    sc.applied.forget(NETWORK_POLICY, namespace, &policy);
    let claims = crate::kinds::claim::config_map_name(name);
    sc.applied.forget(claimer::CONFIG_MAP, namespace, &claims);
}

/// Applies the agents `swarm` wants and removes those it no longer lists (but the
/// members it `spawned`), starting from the agents it controls as the cache holds
/// them (`existing`); returns the problems met
/// (a wanted name taken by an agent of somebody else) and its members as they are now.
async fn apply_members(
    ctx: &Context,
    swarm: &Swarm,
    existing: Vec<Agent>,
    spawned: &[String],
) -> Result<(Vec<String>, Vec<Agent>)> {
    let namespace = swarm.namespace().unwrap_or_default();
    let agents: Api<Agent> = Api::namespaced(ctx.client.clone(), &namespace);
    let desired = compose::desired_agents(swarm);
    let params = PatchParams::apply(CONTROLLER_MANAGER).force();
    let mut problems = Vec::new();
    let mut members: Vec<Agent> = Vec::new();
    for wanted in &desired {
        let agent = &wanted.agent;
        let agent_name = agent.name_any();
        let current = match existing.iter().find(|a| a.name_any() == agent_name) {
            Some(found) => Some(found.clone()),
            // Not in the cache as labelled for this swarm: it may be just made (the
            // cache has not seen it yet), or a name taken by another.
            None => agents.get_opt(&agent_name).await?,
        };
        if let Some(other) = current.as_ref().filter(|a| !controlled_by(a, swarm)) {
            let problem = format!(
                "agent {} already exists and does not belong to this swarm; it is left alone",
                other.name_any()
            );
            problems.push(problem);
            continue;
        }
        if let Some(met) = current.as_ref().filter(|c| wanted.is_met_by(c)) {
            members.push(met.clone());
            continue;
        }
        let created = current.is_none();
        let applied = agents
            .patch(&agent_name, &params, &Patch::Apply(wanted.apply_body()))
            .await?;
        members.push(applied);
        if !created {
            info!(agent = %agent_name, "updated swarm agent");
        }
        if created {
            info!(agent = %agent_name, "created swarm agent");
            let message = format!("agent {agent_name} (role {}) created", agent.spec.role);
            ctx.publish_about(swarm, false, reasons::AGENT_CREATED, &message);
        }
    }
    for agent in existing.iter().filter(|a| controlled_by(a, swarm)) {
        let agent_name = agent.name_any();
        if desired.iter().any(|d| d.agent.name_any() == agent_name) {
            continue;
        }
        // Spawned members are the swarm's too, though its spec never lists them.
        if spawned.contains(&agent_name) {
            members.push(agent.clone());
            continue;
        }
        match agents.delete(&agent_name, &DeleteParams::default()).await {
            Ok(_) => {
                info!(agent = %agent_name, "removed swarm agent");
                let message = format!("agent {agent_name} is no longer listed: removed");
                ctx.publish_about(swarm, false, reasons::AGENT_REMOVED, &message);
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    members.retain(|a| a.meta().deletion_timestamp.is_none());
    Ok((problems, members))
}

/// Keeps the NetworkPolicy when `spec.networkPolicy` is on, removes it when off;
/// nothing is sent while it is as this operator last left it.
async fn sync_network_policy(sc: &SwarmContext, swarm: &Swarm) -> Result<()> {
    let namespace = swarm.namespace().unwrap_or_default();
    let name = compose::network_policy_name(&swarm.name_any());
    let wanted = swarm
        .spec
        .network_policy
        .then(|| compose::network_policy(swarm));
    if sc.applied.holds(NETWORK_POLICY, &namespace, &name, &wanted) {
        return Ok(());
    }
    let policies: Api<NetworkPolicy> = Api::namespaced(sc.ctx.client.clone(), &namespace);
    let uid = swarm.uid().unwrap_or_default();
    match &wanted {
        Some(policy) => {
            crate::api::apply_owned(&policies, &name, &uid, policy).await?;
        }
        // Only ours is removed, and only the one read (its uid a precondition).
        None => match policies.get_opt(&name).await? {
            Some(current) if crate::api::controlled_by(&current, &uid) => {
                let only_this = DeleteParams {
                    preconditions: Some(kube::api::Preconditions {
                        uid: current.uid(),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                match policies.delete(&name, &only_this).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if matches!(status.code, 404 | 409) => {}
                    Err(error) => return Err(error.into()),
                }
            }
            _ => {}
        },
    }
    sc.applied
        .record(NETWORK_POLICY, &namespace, &name, &wanted);
    Ok(())
}

impl crate::controller::ControllerContext for SwarmContext {
    fn shared(&self) -> &Arc<Context> {
        &self.ctx
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
