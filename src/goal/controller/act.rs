//! Acting on a goal's plan: status first (the commit point), then the step pod, then
//! Events, notifications and the overseer's wake.

use std::time::Instant;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Pod};
use kube::api::DeleteParams;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use tracing::{info, instrument};

use super::context::GoalContext;
use super::observe::step_pod;
use super::tell::{notify, spawn_wake};
use crate::api::{CONTROLLER_MANAGER, apply_status, apply_status_returning};
use crate::conditions;
use crate::controller::Context;
use crate::goal::plan;
use crate::goal::pod::{self, StepPodParams};
use crate::goal::progress::{self, Verdict};
use crate::kinds::goal::{Goal, GoalStatus};
use crate::reasons;
use crate::{Result, duration};

/// Acts on the plan: status first (the commit point), then pods, then Events,
/// notifications and the overseer's wake, which must not delay the next step.
#[instrument(skip_all)]
pub(super) async fn apply(
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
        .any(|a| matches!(a, plan::Action::CreatePod(_)))
        .then(|| pod::results(goal, &plan.status));
    write_status_and_results(gc, goal, plan, results.as_ref()).await?;
    let recorded_success =
        plan.status.completed_steps > goal.status.as_ref().map_or(0, |s| s.completed_steps);
    // Pods first: Events and notifications must not delay the next step.
    let (pod_actions, other_actions): (Vec<&plan::Action>, Vec<&plan::Action>) =
        plan.actions.iter().partition(|a| {
            matches!(
                a,
                plan::Action::CreatePod(_) | plan::Action::DeletePod { .. }
            )
        });
    for action in pod_actions.into_iter().chain(other_actions) {
        match action {
            plan::Action::CreatePod(run) => {
                let Some(results) = &results else { continue };
                let params = StepPodParams {
                    goal,
                    run,
                    results,
                    overseer_image: &ctx.overseer_image,
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
            other => tell(gc, goal, other).await,
        }
    }
    Ok(duration::requeue(plan.requeue_after))
}

/// Tells what the plan says besides its pods: Events, notifications, the overseer.
async fn tell(gc: &GoalContext, goal: &Goal, action: &plan::Action) {
    match action {
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
        // A notify step is sent by `decide` and recorded by its second plan; one
        // planned after it waits for the next reconcile, so none goes unrecorded.
        plan::Action::Notify {
            reason,
            message,
            step: None,
        } => notify(&gc.ctx, goal, *reason, message, None).await,
        plan::Action::WakeOverseer(outcome) => spawn_wake(&gc.ctx, goal, outcome),
        plan::Action::Notify { .. }
        | plan::Action::CreatePod(_)
        | plan::Action::DeletePod { .. } => {}
    }
}

/// Writes the planned status and, when a step pod is to be created (`results` are
/// given) and its results are too large to travel in the pod, their ConfigMap,
/// together, before the pod: the
/// results derive from the planned status, and writing them again after a status
/// write that failed is harmless.
#[instrument(skip_all)]
pub(super) async fn write_status_and_results(
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
pub(super) fn publish_event(
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
pub(super) async fn apply_results(ctx: &Context, goal: &Goal, cm: &ConfigMap) -> Result<()> {
    let cms: Api<ConfigMap> =
        Api::namespaced(ctx.client.clone(), &goal.namespace().unwrap_or_default());
    let name = cm.metadata.name.clone().unwrap_or_default();
    crate::api::apply_owned(&cms, &name, &goal.uid().unwrap_or_default(), cm).await?;
    Ok(())
}

/// `Progressing` False for `reason` (and a Warning when that is new): the goal cannot
/// go on as it stands, and waits for its next change.
pub(super) async fn report_not_progressing(
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
pub(super) enum StepPodCreated {
    Yes,
    /// The API server refused the pod as built from the user's template.
    Refused,
    /// A pod of its name is another owner's, and never counts as the step's.
    NameTaken,
}

/// Creates a step pod (its results ConfigMap, if any, is applied already). A refusal or a
/// name taken is a condition and a Warning, written once while it lasts.
#[instrument(skip_all)]
pub(super) async fn create_step_pod(
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
        gc.creating
            .forget(&namespace, &goal.name_any(), &pod.name_any());
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
    let created = crate::kubernetes::pods::create(&pods, claim, &pod, &uid).await;
    match created {
        Ok(()) => {
            info!(pod = pod.metadata.name.as_deref(), "created step pod");
            if params.run.attempt > 1 {
                ctx.metrics.step_retries.inc();
            }
            Ok(StepPodCreated::Yes)
        }
        Err(error) => {
            gc.creating
                .forget(&namespace, &goal.name_any(), &pod.name_any());
            let (reason, created, message) = match &error {
                crate::Error::NameTaken { .. } => (
                    reasons::NAME_TAKEN,
                    StepPodCreated::NameTaken,
                    error.to_string(),
                ),
                other => match crate::kubernetes::pods::refusal(other) {
                    Some(message) => (reasons::POD_REFUSED, StepPodCreated::Refused, message),
                    None => return Err(error),
                },
            };
            report_not_progressing(ctx, goal, status, reason, &message).await?;
            Ok(created)
        }
    }
}

/// Applies the goal's egress sandbox (src/egress.rs) for its step pods.
pub(super) async fn ensure_sandbox(gc: &GoalContext, goal: &Goal) -> Result<()> {
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
