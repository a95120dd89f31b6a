//! `overseer goal resume NAME`.

use kube::api::{Api, Patch, PatchParams};

use crate::goal::{Goal, plan};

/// `overseer goal resume NAME`: sets the resume annotation to a new value (the time),
/// which resumes a paused goal from its checkpoint.
pub async fn resume(name: &str, namespace: Option<&str>) -> crate::Result<()> {
    let client =
        crate::kubernetes::timeouts::client(crate::kubernetes::timeouts::ANSWER_DEADLINE).await?;
    let goals: Api<Goal> = match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::default_namespaced(client),
    };
    let token = jiff::Timestamp::now().to_string();
    let patch = serde_json::json!({"metadata": {"annotations": {plan::RESUME_ANNOTATION: token}}});
    goals
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    println!("goal {name} resume requested ({token})");
    Ok(())
}
