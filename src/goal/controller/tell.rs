//! Telling others of a goal: its overseer (`effort: high`, through exec input, out of
//! the reconcile) and its webhook.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::Result;
use crate::agent::Agent;
use crate::controller::Context;
use crate::goal::message::StepOutcome;
use crate::goal::plan::NotifyReason;
use crate::kinds::goal::Goal;
use crate::reasons;

/// Tells the goal's overseer of a step's outcome out of the reconcile, on its
/// namespace's exec slots: an overseer whose exec hangs delays no goal, its own or
/// another namespace's.
pub(super) fn spawn_wake(ctx: &Arc<Context>, goal: &Goal, outcome: &StepOutcome) {
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

/// `effort: high`: types the step's outcome into the goal's overseer through exec
/// input. Told once per outcome: a failed delivery is a Warning Event (the outcome
/// stays in status), never retried into a later, confusing wake.
pub(super) async fn wake_overseer(ctx: &Context, goal: &Goal, outcome: &StepOutcome) -> Result<()> {
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
            let text = crate::goal::message::outcome_message(&namespace, &goal.name_any(), outcome);
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

/// Sends the webhook notification; any failure becomes a Warning Event and nothing else.
pub(super) async fn notify(
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
