//! What a goal's plan reads besides the goal: its step pods (from the cache, and the one
//! just created that the cache has not shown), the namespace's goals and its swarm.

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use tracing::instrument;

use super::context::GoalContext;
use crate::Result;
use crate::api::label_value;
use crate::controller::readable;
use crate::goal::dependencies::GoalSummary;
use crate::goal::plan::{PodPhase, StepPod};
use crate::kinds::goal::Goal;
use crate::kinds::swarm::Swarm;
use crate::labels;

/// What the plan reads besides the goal: its step pods, the namespace's goals (for
/// `dependsOn`) and its swarm.
pub(super) struct Observed {
    pub(super) pods: Vec<StepPod>,
    pub(super) goals: Vec<GoalSummary>,
    pub(super) swarm: Option<Swarm>,
}

#[instrument(skip_all)]
pub(super) async fn observe(gc: &GoalContext, goal: &Goal) -> Result<Observed> {
    let namespace = goal.namespace().unwrap_or_default();
    let name = goal.name_any();
    // Observe the step pods from the cache, and those this operator just created
    // that the cache has not shown yet (src/kubernetes/fresh.rs `Creating`).
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
    // Pods just created and not yet in the cache are taken as Pending.
    for (created, pending) in gc.creating.awaited(&namespace, &name) {
        if !pods.iter().any(|p| p.name == created) {
            pods.push(pending);
        }
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

/// A step pod as the plan sees it; pods without our labels are ignored.
pub(super) fn step_pod(pod: &Pod) -> Option<StepPod> {
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
