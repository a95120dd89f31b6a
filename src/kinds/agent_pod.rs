//! An agent's pods as every kind sees them: their names, the container input is
//! typed into, and which pods are the agent's own (made by the operator for it).
//! Below the controllers, so that delivery, the commands and every kind's folder read
//! the same rule.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::api::label_value;
use crate::conditions;
use crate::kinds::agent::Agent;
use crate::labels;

/// The deterministic pod name of an attempt (at most 63 characters, the hostname limit).
pub fn pod_name(agent: &str, attempt: i64) -> String {
    let suffix = format!("-{attempt}");
    let agent = crate::api::fit_name(agent, 63 - suffix.len());
    format!("{agent}{suffix}")
}

/// The container the agent CLI (under the shim) runs in; exec targets it.
pub const CONTAINER: &str = "agent";

/// One of this agent's own pods: the operator made it for this Agent (its controller
/// owner reference carries the Agent's uid), it is not being deleted, and it is
/// labelled with its attempt.
pub fn own_pod(agent: &Agent, pod: &Pod) -> Option<AgentPod> {
    if !crate::api::controlled_by(pod, &agent.uid()?)
        || pod.metadata.deletion_timestamp.is_some()
        || pod.labels().get(labels::AGENT) != Some(&label_value(&agent.name_any()))
    {
        return None;
    }
    let attempt = pod.labels().get(labels::ATTEMPT)?.parse().ok()?;
    let status = pod.status.as_ref();
    let phase = match status.and_then(|s| s.phase.as_deref()) {
        Some("Running") => PodPhase::Running,
        Some("Succeeded" | "Failed") => PodPhase::Ended,
        _ => PodPhase::Pending,
    };
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == conditions::READY && c.status == "True")
        });
    let image_wait = image_wait_reason(pod).map(|reason| ImageWait {
        reason,
        since: pod
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(jiff::Timestamp::UNIX_EPOCH, |t| t.0),
    });
    Some(AgentPod {
        name: pod.name_any(),
        attempt,
        phase,
        ready,
        image_wait,
    })
}

/// The kubelet's reasons for a container that waits because its image cannot be had.
const IMAGE_WAIT_REASONS: [&str; 4] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// The reason a container of the pod waits on its image, if one does.
pub fn image_wait_reason(pod: &Pod) -> Option<String> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses
        .iter()
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone())
        .find(|reason| IMAGE_WAIT_REASONS.contains(&reason.as_str()))
}

/// The agent's pod as the plan sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPod {
    pub name: String,
    pub attempt: i64,
    pub phase: PodPhase,
    /// The pod's Ready condition is True.
    pub ready: bool,
    /// A container of the pod waits on its image (the kubelet cannot pull it).
    pub image_wait: Option<ImageWait>,
}

/// A pod whose container the kubelet cannot start for want of its image.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageWait {
    /// The kubelet's reason: ErrImagePull, ImagePullBackOff, InvalidImageName, ...
    pub reason: String,
    /// When the pod was created: the wait is counted from there.
    pub since: Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
    /// Succeeded or Failed: the shim is gone.
    Ended,
}
