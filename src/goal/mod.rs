pub mod controller;
pub mod dependencies;
pub mod instructions;
pub mod message;
pub mod plan;
#[cfg(test)]
mod plan_tests;
pub mod pod;
pub mod review;
pub mod roles;
pub mod types;

pub use types::*;

use kube::api::{Api, Patch, PatchParams};

/// `overseer goal resume NAME`: sets the resume annotation to a new value (the time),
/// which resumes a paused goal from its checkpoint.
pub async fn resume(name: &str, namespace: Option<&str>) -> crate::Result<()> {
    let client = crate::timeouts::client(crate::timeouts::ANSWER_DEADLINE).await?;
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
