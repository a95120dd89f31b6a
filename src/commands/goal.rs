//! `overseer goal pause|resume NAME`.

use kube::api::{Api, Patch, PatchParams};

use crate::goal::{Goal, plan};

async fn goals(namespace: Option<&str>) -> crate::Result<Api<Goal>> {
    let client =
        crate::kubernetes::timeouts::client(crate::kubernetes::timeouts::ANSWER_DEADLINE).await?;
    Ok(match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::default_namespaced(client),
    })
}

/// `overseer goal resume NAME`: clears `spec.paused` when a person set it, and sets the
/// resume annotation to a new value (the time), which resumes a goal paused on a
/// failure from its checkpoint.
pub async fn resume(name: &str, namespace: Option<&str>) -> crate::Result<String> {
    let goals = goals(namespace).await?;
    let goal = goals.get(name).await?;
    let token = jiff::Timestamp::now().to_string();
    let mut patch =
        serde_json::json!({"metadata": {"annotations": {plan::RESUME_ANNOTATION: token}}});
    if goal.spec.paused {
        patch["spec"] = serde_json::json!({"paused": false});
    }
    goals
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(format!("goal {name} resume requested ({token})"))
}

/// `overseer goal pause NAME`: sets `spec.paused`; no new step starts, a running step
/// finishes, and `resume` goes on from the checkpoint.
pub async fn pause(name: &str, namespace: Option<&str>) -> crate::Result<String> {
    let goals = goals(namespace).await?;
    let patch = serde_json::json!({"spec": {"paused": true}});
    goals
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(format!("goal {name} paused: no new step starts"))
}
