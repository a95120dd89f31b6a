//! The Swarm controller's side of the merge queue (the decisions are `merge.rs`, an
//! attempt is `land.rs`): the attempt's pod as a plain value, and the I/O in the order
//! that makes a stop harmless. The queue is written to the swarm's status first (an
//! entry Merging with its attempt), then the attempt's pod is created (one of that name
//! is ours from before a stop), pods of attempts that are over are deleted once their
//! outcome is in the status, and each member is answered in its own status, with its
//! mail and, when its attempts ran out, an escalation in its name, in one write.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use tracing::info;

use super::merge::{self, Attempt, Landing, MergeAnswer, MergePlan};
use crate::api::{MANAGED_BY, label_value};
use crate::controller::Context;
use crate::delivery::mail;
use crate::kinds::agent::{Agent, EscalationRequest, Severity};
use crate::kinds::merge::{MergePolicy, QueuedMerge};
use crate::kinds::swarm::Swarm;
use crate::{Error, Result, labels, pods, workspace};

/// The label of a merge attempt's pod: its queue entry's id.
pub const MERGE_LABEL: &str = "overseer.dev/merge";
/// Field manager of the answers in a member's status.
const MERGER_MANAGER: &str = "overseer-merger";
const ANSWER_TRIES: usize = 16;

/// The image a swarm's merges run in: the policy's, else the swarm's default runtime's.
pub fn image(swarm: &Swarm, policy: &MergePolicy) -> Option<String> {
    policy.image.clone().or_else(|| {
        swarm
            .spec
            .defaults
            .runtime
            .as_ref()
            .and_then(|r| r.image.clone())
    })
}

/// What an attempt's pod shows: running, or ended with its report.
pub fn attempt_of(pod: Option<&Pod>) -> Attempt {
    let Some(pod) = pod.filter(|p| p.meta().deletion_timestamp.is_none()) else {
        return Attempt::Missing;
    };
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if !matches!(phase, Some("Succeeded" | "Failed")) {
        return Attempt::Running;
    }
    let report = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.name == CONTAINER)
        .and_then(|c| c.state.as_ref()?.terminated.as_ref()?.message.clone())
        .and_then(|m| serde_json::from_str::<Landing>(&m).ok());
    Attempt::Ended(report)
}

const CONTAINER: &str = "merge";

/// The pod of attempt `attempt` of `entry`: a fresh clone in an emptyDir, the checks in
/// the merge image, no API access, the restricted profile, the policy's timeout, and
/// the swarm's default pod settings.
pub fn merge_pod(
    swarm: &Swarm,
    policy: &MergePolicy,
    entry: &QueuedMerge,
    attempt: i64,
    overseer_image: &str,
) -> Pod {
    let name = merge::pod_name(&swarm.name_any(), entry.id, attempt);
    let git = swarm.spec.workspace.clone().unwrap_or_default();
    // Always a fresh clone: the members' persistent storage is theirs, never the queue's.
    let fresh = workspace::Workspace {
        git: git.git.clone(),
        storage: Default::default(),
    };
    let url = fresh
        .git
        .as_ref()
        .map(|g| g.url.clone())
        .unwrap_or_default();
    let checks = serde_json::to_string(&policy.checks).unwrap_or_else(|_| "[]".into());
    let env = [
        ("OVERSEER_GIT_URL", url),
        ("OVERSEER_MERGE_TARGET", merge::target(swarm, policy)),
        ("OVERSEER_MERGE_BRANCH", entry.branch.clone()),
        ("OVERSEER_MERGE_SHA", entry.sha.clone()),
        ("OVERSEER_MERGE_CHECKS", checks),
        ("HOME", "/overseer".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| pods::env(k, v))
    .chain(workspace::git_env(&fresh))
    .collect();
    let mut mounts = pods::overseer_mounts().to_vec();
    mounts.extend(workspace::mounts(&fresh, false));
    let mut volumes = vec![pods::overseer_volume()];
    volumes.extend(workspace::volumes(&fresh, &name));
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: swarm.namespace(),
            labels: Some(BTreeMap::from([
                (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
                (labels::SWARM.to_string(), label_value(&swarm.name_any())),
                (MERGE_LABEL.to_string(), entry.id.to_string()),
            ])),
            owner_references: swarm.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            active_deadline_seconds: Some(policy.timeout.get().as_secs().max(1) as i64),
            automount_service_account_token: Some(false),
            security_context: Some(pods::restricted_pod()),
            init_containers: Some(vec![pods::install_container(overseer_image)]),
            containers: vec![Container {
                name: CONTAINER.into(),
                image: image(swarm, policy),
                command: Some(vec![
                    format!("{}/overseer", pods::BIN_DIR),
                    "merge".into(),
                    "land".into(),
                ]),
                working_dir: Some(workspace::DIR.into()),
                env: Some(env),
                volume_mounts: Some(mounts),
                security_context: Some(pods::restricted()),
                ..Default::default()
            }],
            volumes: Some(volumes),
            ..Default::default()
        }),
        status: None,
    };
    // The swarm's pod settings (a private CA for git, node placement, pull secrets) as
    // for its members and steps.
    crate::template::PodTemplate::layered([swarm.spec.defaults.pod_template.as_ref()])
        .dress(&mut pod);
    pod
}

/// Carries out `plan` for `swarm`, whose status holds the plan's queue already.
pub async fn carry_out(ctx: &Context, swarm: &Swarm, plan: &MergePlan) -> Result<()> {
    let namespace = swarm.namespace().unwrap_or_default();
    let pods_api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let policy = swarm
        .spec
        .coordination
        .as_ref()
        .and_then(|c| c.merge.as_ref());
    if let (Some((id, attempt)), Some(policy)) = (plan.start, policy)
        && let Some(entry) = plan.queue.iter().find(|e| e.id == id)
        && image(swarm, policy).is_some()
    {
        let pod = merge_pod(swarm, policy, entry, attempt, &ctx.overseer_image);
        match pods_api.create(&PostParams::default(), &pod).await {
            Ok(_) => info!(pod = %pod.name_any(), "merge attempt started"),
            // Ours from before a stop (the name is the entry's and the attempt's).
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error.into()),
        }
    }
    for name in &plan.delete {
        match pods_api.delete(name, &DeleteParams::background()).await {
            Ok(_) => count(ctx, swarm, plan, name),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    let agents: Api<Agent> = Api::namespaced(ctx.client.clone(), &namespace);
    for (member, answer) in &plan.answers {
        tell(&agents, member, answer).await?;
    }
    Ok(())
}

/// `overseer_swarm_merges{state}`: what the queue made of the ended attempt `pod`.
fn count(ctx: &Context, swarm: &Swarm, plan: &MergePlan, pod: &str) {
    use crate::kinds::merge::MergeState;
    let name = swarm.name_any();
    let Some(entry) = plan
        .queue
        .iter()
        .find(|e| (1..=e.attempts).any(|a| merge::pod_name(&name, e.id, a) == pod))
    else {
        return;
    };
    let state = match entry.state {
        MergeState::Queued => "queued",
        MergeState::Merging => "merging",
        MergeState::Merged => "merged",
        MergeState::Conflict => "conflict",
        MergeState::ChecksFailed => "checksfailed",
        MergeState::Failed => "failed",
        MergeState::Superseded => "superseded",
        MergeState::Refused => "refused",
    };
    ctx.metrics
        .merges
        .get_or_create(&crate::metrics::MailLabels { state })
        .inc();
}

/// Writes `answer` into `member`'s status onto the version read: the ledger, the mail
/// that goes with it, and the escalation when its attempts ran out.
async fn tell(agents: &Api<Agent>, member: &str, answer: &MergeAnswer) -> Result<()> {
    let params = PatchParams {
        field_manager: Some(MERGER_MANAGER.into()),
        ..Default::default()
    };
    for _ in 0..ANSWER_TRIES {
        let Some(fresh) = agents.get_opt(member).await? else {
            return Ok(());
        };
        let status = fresh.status.clone().unwrap_or_default();
        let Some((ledger, notices, escalate)) = merge::answered(status.merges.as_ref(), answer)
        else {
            return Ok(());
        };
        let now = jiff::Timestamp::now();
        let mut fields = json!({"merges": ledger});
        if let Some((mailbox, record)) =
            mail::from_operator(&status, "merge-queue", merge::MAIL_TYPE, &notices, now)
                .filter(|_| !notices.is_empty())
        {
            fields["mailbox"] = json!(mailbox);
            fields["mail"] = json!(record);
        }
        if let Some(reason) = answer.escalation.as_ref().filter(|_| escalate) {
            fields["escalationRequests"] = json!(escalation_requests(&status, reason, now));
        }
        let patch = json!({
            "metadata": {"resourceVersion": fresh.resource_version()},
            "status": fields,
        });
        match agents
            .patch_status(member, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(error) => return Err(error.into()),
        }
    }
    Err(Error::Busy(format!(
        "agent {member} changed {ANSWER_TRIES} times while its merge requests were answered"
    )))
}

/// The member's escalation requests with one more, in its name: the operator opens it
/// as any other and tells the member's overseer.
fn escalation_requests(
    status: &crate::kinds::agent::AgentStatus,
    reason: &str,
    now: jiff::Timestamp,
) -> Vec<EscalationRequest> {
    let taken = status.escalation_counts.as_ref().map_or(0, |c| c.taken_seq);
    let mut requests = status.escalation_requests.clone();
    let seq = requests.iter().map(|r| r.seq).fold(taken, i64::max) + 1;
    requests.retain(|r| r.seq > taken);
    requests.push(EscalationRequest {
        seq,
        severity: Severity::Warning,
        reason: reason.chars().take(1024).collect(),
        time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now),
    });
    requests
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempts_pod_has_no_token_the_restricted_profile_the_deadline_and_the_swarms_settings() {
        let swarm: Swarm = serde_json::from_value(json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
            "metadata": {"name": "team", "namespace": "ns", "uid": "u"},
            "spec": {
                "defaults": {
                    "runtime": {"name": "claude", "image": "agent:1"},
                    "podTemplate": {"env": [{"name": "GIT_SSL_CAINFO", "value": "/ca/ca.crt"}],
                                    "nodeSelector": {"pool": "agents"}}
                },
                "workspace": {"git": {"url": "https://git.example/r.git", "ref": "trunk",
                                      "credentialsSecretRef": {"name": "git"}}},
                "coordination": {"merge": {"timeout": "90s",
                    "checks": [{"name": "test", "command": ["make", "test"]}]}}
            }
        }))
        .unwrap();
        let policy = swarm.spec.coordination.clone().unwrap().merge.unwrap();
        let entry: QueuedMerge = serde_json::from_value(json!({"id": 7, "member": "team-a",
            "seq": 2, "branch": "overseer/team-a", "sha": "a".repeat(40), "state": "Merging",
            "attempts": 2, "requestedTime": "2026-12-01T00:00:00Z"}))
        .unwrap();
        let pod = merge_pod(&swarm, &policy, &entry, 2, "overseer:1");
        assert_eq!(pod.metadata.name.as_deref(), Some("team-merge-7-2"));
        let spec = pod.spec.unwrap();
        assert_eq!(spec.automount_service_account_token, Some(false));
        assert_eq!(spec.active_deadline_seconds, Some(90));
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.node_selector.unwrap()["pool"], "agents");
        let container = &spec.containers[0];
        assert_eq!(container.image.as_deref(), Some("agent:1"));
        assert_eq!(
            container
                .security_context
                .as_ref()
                .unwrap()
                .allow_privilege_escalation,
            Some(false)
        );
        let env: BTreeMap<String, String> = container
            .env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect();
        assert_eq!(env["OVERSEER_MERGE_TARGET"], "trunk");
        assert_eq!(env["OVERSEER_MERGE_SHA"], "a".repeat(40));
        assert_eq!(
            env["OVERSEER_MERGE_CHECKS"],
            r#"[{"name":"test","command":["make","test"]}]"#
        );
        assert_eq!(env["GIT_SSL_CAINFO"], "/ca/ca.crt");
        let volumes: Vec<String> = spec
            .volumes
            .iter()
            .flatten()
            .map(|v| v.name.clone())
            .collect();
        assert!(
            volumes.contains(&"git-credentials".to_string()),
            "{volumes:?}"
        );
        let workspace = spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == "workspace")
            .unwrap();
        assert!(workspace.empty_dir.is_some(), "always a fresh clone");
    }
}
