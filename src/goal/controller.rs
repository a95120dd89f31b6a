//! The Goal reconciler: a thin shell that observes (goal, step pods, other goals, all
//! from caches), asks `plan` what to do, writes status, then acts.

use std::sync::Arc;
use std::time::Instant;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use tracing::instrument;

use super::plan::{self, NotifyReason};
use super::progress::ProgressEvents;
use crate::Result;
use crate::api::MANAGED_BY;
use crate::controller::naming_swarm;
use crate::controller::{
    Context, Shutdown, deferred, listed, readable, related_trigger, run_controller,
};
use crate::kinds::goal::Goal;
use crate::kinds::swarm::Swarm;
use crate::kubernetes::caches::Subscription;
use crate::kubernetes::fresh::Creating;
use crate::kubernetes::guard::Guarded;
use crate::labels;
use crate::reasons;

mod act;
mod context;
mod observe;
mod tell;

use act::{apply, report_not_progressing};
use context::{CONTROLLER, GoalContext};
use observe::{Observed, observe};
use tell::notify;

/// Runs the Goal controller on its shares of the Goal and Swarm watches until `shutdown`.
pub async fn run(
    ctx: Arc<Context>,
    goals: Subscription<Guarded<Goal>>,
    swarms: Subscription<Guarded<Swarm>>,
    shutdown: Shutdown,
) {
    let pods = ctx.api::<Pod>();
    let selector = format!("{}={},{}", MANAGED_BY.0, MANAGED_BY.1, labels::GOAL);
    // Step pods are read from this cache, never listed in a reconcile.
    let (pod_store, pod_writer) = reflector::store();
    let creating = Arc::new(Creating::default());
    let shown = creating.clone();
    let pod_events = watcher(pods, watcher::Config::default().labels(&selector))
        .default_backoff()
        // Nothing reads who wrote which field: not kept, for the memory.
        .modify(|pod| pod.managed_fields_mut().clear())
        .reflect(pod_writer)
        .touched_objects()
        .inspect_ok(move |pod| shown.shown(pod));
    // Its share of the Goal watch serves two triggers: each change reconciles the goal,
    // and (through `dependent_changes`) the goals that depend on it, deletions
    // included: a goal that changes phase may release (or block) them.
    let store = goals.store.clone();
    let dependents_store = store.clone();
    let (notify_dependents, dependent_changes) =
        related_trigger(move |changed: &Goal| dependents(&dependents_store, changed));
    let versions = goals.versions.clone();
    let goal_events = goals.touched().inspect_ok(notify_dependents);
    // A goal of a swarm takes its steps' templates from the swarm's roles.
    let swarm_cache = swarms.store.clone();
    let swarm_events = swarms.touched();
    let swarm_goals = store.clone();
    let controller = Controller::for_stream(goal_events, store.clone())
        .owns_stream(pod_events)
        .reconcile_on(dependent_changes)
        .watches_stream(swarm_events, move |swarm: Guarded<Swarm>| {
            swarm
                .0
                .map(|swarm| naming_swarm(&swarm_goals, &swarm, |g: &Goal| g.spec.swarm.as_deref()))
                .unwrap_or_default()
        });
    let context = Arc::new(GoalContext {
        ctx,
        store,
        pods: pod_store,
        swarms: swarm_cache,
        versions,
        creating,
        applied: crate::kubernetes::fresh::Applied::default(),
        progress: ProgressEvents::default(),
    });
    run_controller(controller, CONTROLLER, context, shutdown, reconcile).await;
}

fn dependents(store: &Store<Guarded<Goal>>, changed: &Goal) -> Vec<ObjectRef<Guarded<Goal>>> {
    let name = changed.name_any();
    readable(&store.state())
        .filter(|g| g.namespace() == changed.namespace() && g.spec.depends_on.contains(&name))
        .map(|g| ObjectRef::new(&g.name_any()).within(&g.namespace().unwrap_or_default()))
        .collect()
}

#[instrument(skip_all, fields(goal = %cached.name_any(), namespace = cached.namespace().unwrap_or_default()))]
async fn reconcile(cached: Arc<Goal>, gc: Arc<GoalContext>) -> Result<Action> {
    let started = Instant::now();
    // Step pods and swarms are read from caches: never before their first full list.
    if !listed(&gc.pods) || !listed(&gc.swarms) {
        return Ok(deferred(&gc.ctx, CONTROLLER));
    }
    let Some(goal) = current_goal(&gc, cached).await? else {
        return Ok(Action::await_change());
    };
    // The steps it runs: its own, and a guardian's review after each risky one.
    let goal = super::review::with_reviews(&goal);
    let observed = observe(&gc, &goal).await?;
    let plan = decide(&gc.ctx, &goal, &observed).await;
    match apply(&gc, &goal, &plan, started).await {
        // The results ConfigMap's name is another owner's: said on the goal, looked at
        // again now and then (nothing watches that object going away).
        Err(taken @ crate::Error::NameTaken { .. }) => {
            let status = goal.status.clone().unwrap_or_default();
            report_not_progressing(
                &gc.ctx,
                &goal,
                &status,
                reasons::NAME_TAKEN,
                &taken.to_string(),
            )
            .await?;
            Ok(Action::requeue(NAME_TAKEN_RECHECK))
        }
        outcome => outcome,
    }
}

/// How often a goal blocked by another owner's object looks again.
const NAME_TAKEN_RECHECK: std::time::Duration = std::time::Duration::from_secs(60);

/// The goal to decide on: the cached one when it holds this operator's last write,
/// else read fresh; None when it is gone or being deleted.
async fn current_goal(gc: &GoalContext, cached: Arc<Goal>) -> Result<Option<Arc<Goal>>> {
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    // Status is the checkpoint: decide on a cached Goal only when it holds our last
    // write (src/kubernetes/fresh.rs); deciding on one that does not would repeat its Events and
    // notifications.
    let goal = if gc.versions.is_current(&*cached) {
        cached
    } else {
        let goals: Api<Goal> = Api::namespaced(gc.ctx.client.clone(), &namespace);
        let Some(fresh) = goals.get_opt(&name).await? else {
            gc.versions.forget(&namespace, &name);
            gc.creating.ended(&namespace, &name);
            return Ok(None);
        };
        gc.versions.saw(&fresh);
        Arc::new(fresh)
    };
    if goal.meta().deletion_timestamp.is_some() {
        gc.versions.forget(&namespace, &name);
        gc.creating.ended(&namespace, &name);
        return Ok(None);
    }
    Ok(Some(goal))
}

/// The plan for `goal`. A notify step is sent before it is recorded, then planned
/// again as sent: a crash in between sends it again (the payload's `delivery` id lets
/// a receiver see that), and never records as sent a notification that was not.
async fn decide(ctx: &Context, goal: &Goal, observed: &Observed) -> plan::Plan {
    let name = goal.name_any();
    let input = plan::Input {
        name: &name,
        generation: goal.metadata.generation,
        resume: goal
            .annotations()
            .get(plan::RESUME_ANNOTATION)
            .map(String::as_str),
        spec: &goal.spec,
        status: goal.status.as_ref(),
        pods: &observed.pods,
        goals: &observed.goals,
        swarm: observed.swarm.as_ref().map(|s| &s.spec),
        notified: None,
        pod_retention: ctx.pod_retention,
        now: jiff::Timestamp::now(),
    };
    let plan = plan::plan(&input);
    let Some((step, message)) = plan.actions.iter().find_map(|a| match a {
        plan::Action::Notify {
            step: Some(step),
            message,
            ..
        } => Some((*step, message.clone())),
        _ => None,
    }) else {
        return plan;
    };
    let delivery = format!("goal/{name}/{step}");
    notify(ctx, goal, NotifyReason::Step, &message, Some(&delivery)).await;
    plan::plan(&plan::Input {
        notified: Some(step),
        ..input
    })
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
