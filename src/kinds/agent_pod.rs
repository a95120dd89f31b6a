//! An agent's pods as every kind sees them: their names, the container input is
//! typed into, and which pods are the agent's own (made by the operator for it).
//! Below the controllers, so that delivery, the commands and every kind's folder read
//! the same rule.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::ResourceExt;
use kube::api::ObjectMeta;
use serde::Deserialize;

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
pub fn own_pod(agent: &Agent, pod: &PodSummary) -> Option<AgentPod> {
    if !crate::api::controlled_by(pod, &agent.uid()?)
        || pod.metadata.deletion_timestamp.is_some()
        || pod.agent.as_deref() != Some(&label_value(&agent.name_any()))
    {
        return None;
    }
    let attempt = pod.attempt?;
    let state = pod.status.as_ref();
    let image_wait = state
        .and_then(|s| s.image_wait.clone())
        .map(|reason| ImageWait {
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
        phase: state.map_or(PodPhase::Pending, |s| s.phase),
        ready: state.is_some_and(|s| s.ready),
        image_wait,
    })
}

/// What the operator keeps of an agent's pod: its metadata without labels, annotations
/// or managed fields, the two labels `own_pod` reads, and what it reads of the pod's
/// status, deserialized from the API server's answer with nothing else held (the spec,
/// container statuses and the like are dropped as they are read). At 10,000 agents
/// whole pods were most of the operator's memory, and a `Pod` with its spec taken out
/// still holds the spec's room; a pod's labels alone took 0.8 KB of it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "PodAsSent")]
pub struct PodSummary {
    pub metadata: ObjectMeta,
    /// Its `labels::AGENT` label.
    pub agent: Option<String>,
    /// Its `labels::ATTEMPT` label, when that is a number.
    pub attempt: Option<i64>,
    pub status: Option<PodState>,
}

/// The part of a pod's JSON a `PodSummary` is made from.
#[derive(Deserialize)]
struct PodAsSent {
    metadata: ObjectMeta,
    #[serde(default)]
    status: Option<PodState>,
}

impl From<PodAsSent> for PodSummary {
    fn from(
        PodAsSent {
            mut metadata,
            status,
        }: PodAsSent,
    ) -> Self {
        let mut labels = metadata.labels.take().unwrap_or_default();
        crate::kubernetes::summary::drop_unread_metadata(&mut metadata);
        PodSummary {
            metadata,
            agent: labels.remove(labels::AGENT),
            attempt: labels.get(labels::ATTEMPT).and_then(|a| a.parse().ok()),
            status,
        }
    }
}

/// What a decision reads of a pod's status.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "PodStatus")]
pub struct PodState {
    pub phase: PodPhase,
    /// Its Ready condition is True.
    pub ready: bool,
    /// The kubelet's reason when a container waits on its image.
    pub image_wait: Option<String>,
}

impl From<PodStatus> for PodState {
    fn from(status: PodStatus) -> Self {
        let phase = match status.phase.as_deref() {
            Some("Running") => PodPhase::Running,
            Some("Succeeded" | "Failed") => PodPhase::Ended,
            _ => PodPhase::Pending,
        };
        let ready = status.conditions.as_ref().is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == conditions::READY && c.status == "True")
        });
        PodState {
            phase,
            ready,
            image_wait: image_wait_reason(&status),
        }
    }
}

impl From<&Pod> for PodSummary {
    fn from(pod: &Pod) -> Self {
        PodSummary::from(PodAsSent {
            metadata: pod.metadata.clone(),
            status: pod.status.clone().map(PodState::from),
        })
    }
}

crate::kubernetes::summary::summary_of!(PodSummary, Pod);

/// The kubelet's reasons for a container that waits because its image cannot be had.
const IMAGE_WAIT_REASONS: [&str; 4] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// The reason a container of the pod waits on its image, if one does.
fn image_wait_reason(status: &PodStatus) -> Option<String> {
    status
        .container_statuses
        .as_ref()?
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
