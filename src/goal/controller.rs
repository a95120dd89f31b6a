//! The Goal reconciler: a thin shell that observes (goal, step pods, other goals, all
//! from caches), asks `plan` what to do, writes status, then acts.

use std::sync::Arc;
use std::time::Instant;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Pod};
use kube::api::{DeleteParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use tracing::{info, instrument};

use super::dependencies::GoalSummary;
use super::message::StepOutcome;
use super::plan::{self, NotifyReason, PodPhase, StepPod};
use super::pod::{self, StepPodParams};
use super::progress::{self, ProgressEvents, Verdict};
use crate::agent::Agent;
use crate::api::{
    CONTROLLER_MANAGER, MANAGED_BY, apply_status, apply_status_returning, label_value,
};
use crate::caches::Subscription;
use crate::conditions;
use crate::controller::naming_swarm;
use crate::controller::{
    Context, Shutdown, deferred, listed, readable, related_trigger, run_controller,
};
use crate::fresh::{Creating, Versions};
use crate::kinds::goal::{Goal, GoalStatus};
use crate::kinds::swarm::Swarm;
use crate::labels;
use crate::reasons;
use crate::{Result, duration};
use kube::core::DeserializeGuard as Guarded;

const CONTROLLER: &str = "goal";

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
        versions: Versions::default(),
        creating,
        applied: crate::fresh::Applied::default(),
        progress: ProgressEvents::default(),
    });
    run_controller(controller, CONTROLLER, context, shutdown, reconcile).await;
}

struct GoalContext {
    ctx: Arc<Context>,
    store: Store<Guarded<Goal>>,
    /// Every step pod of the goals watched.
    pods: Store<Pod>,
    swarms: Store<Guarded<Swarm>>,
    /// Each Goal's version as this operator last wrote or read it (src/fresh.rs).
    versions: Versions,
    /// Each Goal's step pod created and not yet in `pods` (src/fresh.rs).
    creating: Arc<Creating<StepPod>>,
    /// Each Goal's sandbox as this operator last applied it.
    applied: crate::fresh::Applied,
    /// Each Goal's last step progress Event, for folding the next (src/goal/progress.rs).
    progress: ProgressEvents,
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
    // write (src/fresh.rs); deciding on one that does not would repeat its Events and
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

/// What the plan reads besides the goal: its step pods, the namespace's goals (for
/// `dependsOn`) and its swarm.
struct Observed {
    pods: Vec<StepPod>,
    goals: Vec<GoalSummary>,
    swarm: Option<Swarm>,
}

#[instrument(skip_all)]
async fn observe(gc: &GoalContext, goal: &Goal) -> Result<Observed> {
    let namespace = goal.namespace().unwrap_or_default();
    let name = goal.name_any();
    // Observe the step pods from the cache, and the one this operator just created
    // that the cache has not shown yet (src/fresh.rs `Creating`).
    let label = label_value(&name);
    let uid = goal.uid();
    let mut pods: Vec<StepPod> = gc
        .pods
        .state()
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|p| p.labels().get(labels::GOAL) == Some(&label))
        .filter(|p| {
            p.owner_references()
                .iter()
                .any(|o| Some(&o.uid) == uid.as_ref() && o.controller == Some(true))
        })
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| step_pod(&p))
        .collect();
    // A pod just created and not yet in the cache is taken as Pending.
    if let Some((created, pending)) = gc.creating.awaited(&namespace, &name)
        && !pods.iter().any(|p| p.name == created)
    {
        pods.push(pending);
    }
    let goals: Vec<GoalSummary> = readable(&gc.store.state())
        .filter(|g| g.namespace().as_deref() == Some(namespace.as_str()))
        .map(|g| GoalSummary {
            name: g.name_any(),
            phase: g.status.as_ref().and_then(|s| s.phase),
            depends_on: g.spec.depends_on.clone(),
        })
        .collect();
    // A goal of a swarm takes its steps' templates from the swarm's roles.
    // From the cache; read fresh only when the cache lacks it (a swarm made just
    // before its goal), so a goal never runs a step without its swarm's templates.
    let swarm = match &goal.spec.swarm {
        Some(swarm) => {
            let cached = gc
                .swarms
                .get(&ObjectRef::new(swarm).within(&namespace))
                .and_then(|s| s.0.as_ref().ok().cloned());
            match cached {
                Some(cached) => Some(cached),
                None => {
                    Api::<Swarm>::namespaced(gc.ctx.client.clone(), &namespace)
                        .get_opt(swarm)
                        .await?
                }
            }
        }
        None => None,
    };
    Ok(Observed { pods, goals, swarm })
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

/// Acts on the plan: status first (the commit point), then pods, then Events,
/// notifications and the overseer's wake, which must not delay the next step.
#[instrument(skip_all)]
async fn apply(
    gc: &GoalContext,
    goal: &Goal,
    plan: &plan::Plan,
    started: Instant,
) -> Result<Action> {
    let ctx = &gc.ctx;
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &goal.namespace().unwrap_or_default());
    // Built only for a pod to carry: most reconciles create none.
    let results = plan
        .actions
        .iter()
        .any(|a| matches!(a, plan::Action::CreatePod { .. }))
        .then(|| pod::results(goal, &plan.status));
    write_status_and_results(gc, goal, plan, results.as_ref()).await?;
    let recorded_success =
        plan.status.completed_steps > goal.status.as_ref().map_or(0, |s| s.completed_steps);
    // Pods first: Events and notifications must not delay the next step.
    let (pod_actions, other_actions): (Vec<&plan::Action>, Vec<&plan::Action>) =
        plan.actions.iter().partition(|a| {
            matches!(
                a,
                plan::Action::CreatePod { .. } | plan::Action::DeletePod { .. }
            )
        });
    for action in pod_actions.into_iter().chain(other_actions) {
        match action {
            plan::Action::CreatePod { .. } => {
                let Some(params) = step_pod_params(ctx, goal, action, results.as_ref()) else {
                    continue;
                };
                match create_step_pod(gc, goal, &plan.status, &params).await? {
                    StepPodCreated::Yes => {}
                    // The refused pod would be refused again: the goal waits for a change.
                    StepPodCreated::Refused => return Ok(Action::await_change()),
                    // Looked at again with the plan's backoff, or at the step's timeout.
                    StepPodCreated::NameTaken => return Ok(duration::requeue(plan.requeue_after)),
                }
                if recorded_success {
                    ctx.metrics
                        .step_advance
                        .observe(started.elapsed().as_secs_f64());
                }
            }
            plan::Action::DeletePod { name } => {
                match pods.delete(name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if status.code == 404 => {}
                    Err(error) => return Err(error.into()),
                }
            }
            plan::Action::Event {
                warning,
                reason,
                message,
                pod,
                progress,
            } => publish_event(
                gc,
                goal,
                *warning,
                reason,
                message,
                pod.as_deref(),
                *progress,
            ),
            plan::Action::Notify {
                reason, message, ..
            } => notify(ctx, goal, *reason, message, None).await,
            plan::Action::WakeOverseer(outcome) => spawn_wake(ctx, goal, outcome),
        }
    }
    Ok(duration::requeue(plan.requeue_after))
}

/// What the step pod of a planned `CreatePod` is built from, with the results it
/// carries; None for any other action.
fn step_pod_params<'a>(
    ctx: &'a Context,
    goal: &'a Goal,
    create: &'a plan::Action,
    results: Option<&'a pod::Results>,
) -> Option<StepPodParams<'a>> {
    let (
        plan::Action::CreatePod {
            step,
            attempt,
            role,
            runtime,
            timeout,
            read_only,
            instructions,
            template,
        },
        Some(results),
    ) = (create, results)
    else {
        return None;
    };
    Some(StepPodParams {
        goal,
        step: *step,
        attempt: *attempt,
        role,
        runtime,
        timeout: *timeout,
        template: template.as_ref().clone(),
        read_only: *read_only,
        instructions,
        results,
        overseer_image: &ctx.overseer_image,
    })
}

/// Tells the goal's overseer of a step's outcome out of the reconcile, on its
/// namespace's exec slots: an overseer whose exec hangs delays no goal, its own or
/// another namespace's.
fn spawn_wake(ctx: &Arc<Context>, goal: &Goal, outcome: &StepOutcome) {
    let namespace = goal.namespace().unwrap_or_default();
    let telling = {
        let (ctx, goal, outcome) = (ctx.clone(), goal.clone(), outcome.clone());
        async move {
            if let Err(error) = wake_overseer(&ctx, &goal, &outcome).await {
                tracing::warn!(%error, goal = %goal.name_any(), "telling the overseer failed");
            }
        }
    };
    if !ctx.deliveries.spawn(&namespace, telling) {
        let message = "the overseer was not told of a step outcome: too many deliveries wait in this namespace";
        ctx.publish_about(goal, true, reasons::WAKE_FAILED, message);
    }
}

/// Writes the planned status and, when a step pod is to be created (`results` are
/// given) and its results are too large to travel in the pod, their ConfigMap,
/// together, before the pod: the
/// results derive from the planned status, and writing them again after a status
/// write that failed is harmless.
#[instrument(skip_all)]
async fn write_status_and_results(
    gc: &GoalContext,
    goal: &Goal,
    plan: &plan::Plan,
    results: Option<&pod::Results>,
) -> Result<()> {
    let goals: Api<Goal> =
        Api::namespaced(gc.ctx.client.clone(), &goal.namespace().unwrap_or_default());
    let status = async {
        if goal.status.as_ref() != Some(&plan.status) {
            let written =
                apply_status_returning(&goals, &goal.name_any(), CONTROLLER_MANAGER, &plan.status)
                    .await?;
            gc.versions.saw(&written);
        }
        Ok::<_, crate::Error>(())
    };
    let results = async {
        match results {
            Some(pod::Results::ConfigMap(cm)) => apply_results(&gc.ctx, goal, cm).await,
            _ => Ok(()),
        }
    };
    futures::try_join!(status, results)?;
    Ok(())
}

/// Counts step results, and queues an Event about the goal (related to a step pod, if
/// named) unless it is step progress folded into the goal's next Event.
fn publish_event(
    gc: &GoalContext,
    goal: &Goal,
    warning: bool,
    reason: &str,
    message: &str,
    pod: Option<&str>,
    progress: bool,
) {
    let ctx = &gc.ctx;
    // Label values in the snake case of every other label (`rate_limited`, `delivered`).
    let result = match reason {
        reasons::STEP_SUCCEEDED => Some("succeeded"),
        reasons::STEP_FAILED => Some("failed"),
        _ => None,
    };
    if let Some(result) = result {
        ctx.metrics
            .step_results
            .get_or_create(&crate::metrics::StepResultLabels { result })
            .inc();
    }
    let key = format!(
        "{}/{}",
        goal.namespace().unwrap_or_default(),
        goal.name_any()
    );
    let folded = match gc.progress.judge(&key, progress, std::time::Instant::now()) {
        Verdict::Publish { folded } => folded,
        Verdict::Fold => {
            ctx.metrics.step_events_folded.inc();
            return;
        }
    };
    let related = pod.map(|name| ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name.to_string()),
        namespace: goal.namespace(),
        ..Default::default()
    });
    let message = progress::with_folded(message, folded);
    ctx.publish(&goal.object_ref(&()), warning, reason, &message, related);
}

/// Applies the ConfigMap of results too large for the step pod's annotation.
async fn apply_results(ctx: &Context, goal: &Goal, cm: &ConfigMap) -> Result<()> {
    let cms: Api<ConfigMap> =
        Api::namespaced(ctx.client.clone(), &goal.namespace().unwrap_or_default());
    let name = cm.metadata.name.clone().unwrap_or_default();
    crate::api::apply_owned(&cms, &name, &goal.uid().unwrap_or_default(), cm).await?;
    Ok(())
}

/// `Progressing` False for `reason` (and a Warning when that is new): the goal cannot
/// go on as it stands, and waits for its next change.
async fn report_not_progressing(
    ctx: &Context,
    goal: &Goal,
    status: &GoalStatus,
    reason: &str,
    message: &str,
) -> Result<()> {
    let mut stuck = status.clone();
    let changed = conditions::set(
        &mut stuck.conditions,
        conditions::PROGRESSING,
        false,
        reason,
        message,
        goal.metadata.generation,
        &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()),
    );
    if changed {
        let goals: Api<Goal> =
            Api::namespaced(ctx.client.clone(), &goal.namespace().unwrap_or_default());
        apply_status(&goals, &goal.name_any(), CONTROLLER_MANAGER, &stuck).await?;
        ctx.publish_about(goal, true, reason, message);
    }
    Ok(())
}

/// What became of a step pod's create.
enum StepPodCreated {
    Yes,
    /// The API server refused the pod as built from the user's template.
    Refused,
    /// A pod of its name is another owner's, and never counts as the step's.
    NameTaken,
}

/// Creates a step pod (its results ConfigMap, if any, is applied already). A refusal or a
/// name taken is a condition and a Warning, written once while it lasts.
#[instrument(skip_all)]
async fn create_step_pod(
    gc: &GoalContext,
    goal: &Goal,
    status: &GoalStatus,
    params: &StepPodParams<'_>,
) -> Result<StepPodCreated> {
    let ctx = &gc.ctx;
    let namespace = goal.namespace().unwrap_or_default();
    let pod = pod::step_pod(params);
    if let Some(pending) = step_pod(&pod) {
        gc.creating
            .started(&namespace, &goal.name_any(), &pod.name_any(), pending);
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    if let Err(error) = ensure_sandbox(gc, goal).await {
        gc.creating.ended(&namespace, &goal.name_any());
        return Err(error);
    }
    let claim = goal.spec.workspace.as_ref().and_then(|w| {
        let owner = kube::api::ObjectMeta {
            namespace: Some(namespace.clone()),
            owner_references: goal.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        };
        let labels = std::collections::BTreeMap::from([(
            crate::labels::GOAL.to_string(),
            crate::api::label_value(&goal.name_any()),
        )]);
        crate::workspace::claim(w, owner, &goal.name_any(), labels)
    });
    let uid = goal.uid().unwrap_or_default();
    let created = match crate::workspace::apply_claim(&ctx.client, claim, &uid).await {
        Ok(()) => match pods.create(&PostParams::default(), &pod).await {
            Ok(_) => Ok(()),
            // A pod of that name: ours from before (a crash between create and
            // record), or another owner's, which is never taken for the step's.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let name = pod.name_any();
                crate::api::ours_or_absent(pods.get_opt(&name).await?.as_ref(), &name, &uid)
            }
            Err(error) => Err(error.into()),
        },
        Err(error) => Err(error),
    };
    match created {
        Ok(()) => {
            info!(pod = pod.metadata.name.as_deref(), "created step pod");
            if params.attempt > 1 {
                ctx.metrics.step_retries.inc();
            }
            Ok(StepPodCreated::Yes)
        }
        Err(error) => {
            gc.creating.ended(&namespace, &goal.name_any());
            let message = match &error {
                crate::Error::Kube(error) => crate::pods::refusal(error),
                crate::Error::NameTaken { .. } => Some(error.to_string()),
                _ => None,
            };
            let Some(message) = message else {
                return Err(error);
            };
            let (reason, created) = match error {
                crate::Error::NameTaken { .. } => (reasons::NAME_TAKEN, StepPodCreated::NameTaken),
                _ => (reasons::POD_REFUSED, StepPodCreated::Refused),
            };
            report_not_progressing(ctx, goal, status, reason, &message).await?;
            Ok(created)
        }
    }
}

/// Applies the goal's egress sandbox (src/egress.rs) for its step pods.
async fn ensure_sandbox(gc: &GoalContext, goal: &Goal) -> Result<()> {
    let namespace = goal.namespace().unwrap_or_default();
    let swarm = goal
        .spec
        .swarm
        .as_ref()
        .and_then(|swarm| gc.swarms.get(&ObjectRef::new(swarm).within(&namespace)));
    let swarm = swarm.as_deref().and_then(|s| s.0.as_ref().ok());
    crate::egress::ensure(
        &gc.ctx.client,
        &gc.ctx.sandbox,
        &gc.applied,
        goal,
        crate::egress::SandboxOf::Goal,
        swarm.map(|s| &s.spec),
        &[],
    )
    .await
}

/// `effort: high`: types the step's outcome into the goal's overseer through exec
/// input. Told once per outcome: a failed delivery is a Warning Event (the outcome
/// stays in status), never retried into a later, confusing wake.
async fn wake_overseer(ctx: &Context, goal: &Goal, outcome: &StepOutcome) -> Result<()> {
    let Some(overseer) = &goal.spec.overseer else {
        return Ok(());
    };
    let namespace = goal.namespace().unwrap_or_default();
    let agents: Api<Agent> = Api::namespaced(ctx.client.clone(), &namespace);
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let found = agents.get_opt(overseer).await?;
    let target = match &found {
        Some(agent) if !crate::agent::oversight::accepts_goal(agent, goal) => Err(format!(
            "overseer {overseer} has not agreed to oversee this goal (its spec.oversees does not list it)"
        )),
        Some(agent) => Ok(crate::delivery::input::target(&pods, agent).await?),
        None => Ok(None),
    };
    let delivered = match target {
        Err(refused) => Err(refused),
        Ok(None) => Err(format!("overseer {overseer} has no ready pod")),
        Ok(Some(pod)) => {
            let text = super::message::outcome_message(&namespace, &goal.name_any(), outcome);
            // One outcome per attempt of a step.
            let ids = [format!(
                "goal/{}/{}/{}",
                goal.name_any(),
                outcome.step,
                outcome.attempt
            )];
            crate::delivery::input::deliver(&ctx.input_command, &pods, &pod, &text, &ids).await
        }
    };
    ctx.metrics.count_delivery("goal", &delivered);
    match delivered {
        Ok(()) => {
            let message = format!(
                "overseer {overseer} told: step {} {}",
                outcome.step, outcome.outcome
            );
            ctx.publish_about(goal, false, reasons::OVERSEER_WOKEN, &message);
        }
        Err(error) => {
            let message = format!(
                "overseer {overseer} not told of step {} {}: {error}",
                outcome.step, outcome.outcome
            );
            ctx.publish_about(goal, true, reasons::WAKE_FAILED, &message);
        }
    }
    Ok(())
}

/// A step pod as the plan sees it; pods without our labels are ignored.
fn step_pod(pod: &Pod) -> Option<StepPod> {
    let labels = pod.labels();
    let step = labels.get(labels::STEP_INDEX)?.parse().ok()?;
    let step_name = labels.get(labels::STEP)?.clone();
    let attempt = labels.get(labels::ATTEMPT)?.parse().ok()?;
    let status = pod.status.as_ref();
    let phase = match status.and_then(|s| s.phase.as_deref()) {
        Some("Running") => PodPhase::Running,
        Some("Succeeded") => PodPhase::Succeeded,
        Some("Failed") => PodPhase::Failed,
        _ => PodPhase::Pending,
    };
    let terminated = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == "agent"))
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref());
    Some(StepPod {
        name: pod.name_any(),
        step,
        step_name,
        attempt,
        phase,
        finished_at: terminated.and_then(|t| t.finished_at.as_ref()).map(|t| t.0),
        message: terminated.and_then(|t| t.message.clone()),
        exit_code: terminated.map(|t| t.exit_code),
        reason: terminated
            .and_then(|t| t.reason.clone())
            .or_else(|| status.and_then(|s| s.reason.clone())),
    })
}

/// Sends the webhook notification; any failure becomes a Warning Event and nothing else.
async fn notify(
    ctx: &Context,
    goal: &Goal,
    reason: NotifyReason,
    message: &str,
    delivery: Option<&str>,
) {
    let Some(notify) = &goal.spec.notify else {
        return;
    };
    let mut payload = json!({
        "kind": "Goal",
        "namespace": goal.namespace().unwrap_or_default(),
        "name": goal.name_any(),
        "event": format!("{reason:?}"),
        "message": message,
    });
    if let Some(delivery) = delivery {
        payload["delivery"] = json!(delivery);
    }
    crate::notify::send(ctx, goal, notify, &payload).await;
}

impl crate::controller::ControllerContext for GoalContext {
    fn shared(&self) -> &Arc<Context> {
        &self.ctx
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
