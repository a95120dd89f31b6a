//! Typing into an agent, for every kind that does (nudges, wakes, sends, PR wakes,
//! step outcomes): the one pod that may take it, and exec into that pod's agent
//! container with the operator's `overseer input`.

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, ResourceExt};

use crate::Result;
use crate::kinds::agent::Agent;
use crate::kinds::agent_pod::{CONTAINER, PodPhase, own_pod, pod_name};

/// The only pod input is ever typed into for `agent`: the one the operator made for
/// its current attempt, Running and Ready. Never `status.podName`, which the agent
/// itself can write (it would aim the operator's exec at any pod).
pub async fn target(pods: &Api<Pod>, agent: &Agent) -> Result<Option<String>> {
    let Some(attempt) = agent.status.as_ref().and_then(|s| s.attempt) else {
        return Ok(None);
    };
    let Some(found) = pods.get_opt(&pod_name(&agent.name_any(), attempt)).await? else {
        return Ok(None);
    };
    Ok(own_pod(agent, &(&found).into())
        .filter(|p| p.attempt == attempt && p.phase == PodPhase::Running && p.ready)
        .map(|p| p.name))
}

/// As `target`, for the Agent `name` (none when there is no such Agent).
pub async fn target_named(
    agents: &Api<Agent>,
    pods: &Api<Pod>,
    name: &str,
) -> Result<Option<String>> {
    match agents.get_opt(name).await? {
        Some(agent) => target(pods, &agent).await,
        None => Ok(None),
    }
}

/// Types `text` into `pod`'s agent container, delivering `ids`; Err says why not.
pub async fn deliver(
    command: &str,
    pods: &Api<Pod>,
    pod: &str,
    text: &str,
    ids: &[String],
) -> std::result::Result<(), String> {
    crate::delivery::exec::deliver(pods, pod, CONTAINER, command, text, ids).await
}

/// Asks `pod`'s shim whether it delivered every one of `ids`, typing nothing.
pub async fn confirm(
    command: &str,
    pods: &Api<Pod>,
    pod: &str,
    ids: &[String],
) -> std::result::Result<(), String> {
    crate::delivery::exec::confirm(pods, pod, CONTAINER, command, ids).await
}
