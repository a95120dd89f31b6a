//! The step pod and the results ConfigMap, built as plain values (no I/O).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, EnvVar, Pod, PodSpec, Volume, VolumeMount,
};
use kube::Resource;
use kube::api::ObjectMeta;

use crate::api::{MANAGED_BY, RuntimeSpec, label_value};
use crate::kinds::goal::{Goal, GoalStatus, StepPhase};
use crate::labels;
use crate::template::PodTemplate;
use crate::workspace::Workspace;
use crate::{pods, runtimes, workspace};

/// Where the init container puts the `overseer` binary.
pub use crate::pods::BIN_DIR;
/// Where the step pod finds the results of the earlier steps.
pub const RESULTS_FILE: &str = "/overseer/results/results.json";

pub struct StepPodParams<'a> {
    pub goal: &'a Goal,
    pub step: usize,
    pub attempt: i32,
    pub role: &'a str,
    pub runtime: &'a RuntimeSpec,
    pub timeout: Duration,
    /// The step's pod settings, merged.
    pub template: PodTemplate,
    /// The step's role only reads: its workspace is mounted read-only.
    pub read_only: bool,
    /// What the step's agent is told besides its action, placed by `overseer step`.
    pub instructions: &'a str,
    /// Image holding the `overseer` binary (the operator's own).
    pub overseer_image: &'a str,
}

/// Name of the ConfigMap holding the results of a goal's completed steps.
pub fn results_name(goal: &str) -> String {
    format!(
        "{}-results",
        crate::api::fit_name(goal, 253 - "-results".len())
    )
}

pub fn step_pod(p: &StepPodParams) -> Pod {
    let goal_name = p.goal.metadata.name.clone().unwrap_or_default();
    let step = &p.goal.spec.steps[p.step];
    let workspace = p.goal.spec.workspace.clone().unwrap_or_default();
    let mut command = vec![format!("{BIN_DIR}/overseer"), "step".into(), "--".into()];
    command.extend(runtimes::headless_command(p.runtime, &step.action));
    // Every step works in the goal's workspace: with persistent storage, on the files
    // the step before left.
    let mut mounts = pods::overseer_mounts().to_vec();
    mounts.extend(workspace::mounts(&workspace, p.read_only));
    mounts.push(VolumeMount {
        name: "results".into(),
        mount_path: "/overseer/results".into(),
        read_only: Some(true),
        ..Default::default()
    });
    let mut volumes = vec![pods::overseer_volume()];
    volumes.extend(workspace::volumes(&workspace, &goal_name));
    volumes.push(Volume {
        name: "results".into(),
        config_map: Some(ConfigMapVolumeSource {
            name: results_name(&goal_name),
            ..Default::default()
        }),
        ..Default::default()
    });
    let sync = workspace::sync_container(
        &workspace,
        p.runtime.image.as_deref(),
        &workspace::default_branch(&goal_name),
    );
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(super::plan::pod_name(&goal_name, p.step, p.attempt)),
            namespace: p.goal.metadata.namespace.clone(),
            labels: Some(step_labels(p, &goal_name)),
            owner_references: p.goal.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            active_deadline_seconds: Some(p.timeout.as_secs().max(1) as i64),
            automount_service_account_token: Some(false),
            security_context: Some(pods::restricted_pod()),
            init_containers: Some(
                std::iter::once(pods::install_container(p.overseer_image))
                    .chain(sync)
                    .collect(),
            ),
            containers: vec![Container {
                name: "agent".into(),
                image: p.runtime.image.clone(),
                command: Some(command),
                working_dir: Some(workspace::DIR.into()),
                env: Some(step_env(p, &goal_name, &workspace)),
                volume_mounts: Some(mounts),
                security_context: Some(pods::restricted()),
                termination_message_policy: Some("File".into()),
                ..Default::default()
            }],
            volumes: Some(volumes),
            ..Default::default()
        }),
        status: None,
    };
    p.template.clone().dress(&mut pod);
    if p.read_only {
        pods::read_only_mounts(&mut pod);
    }
    pod
}

/// The step pod's labels: the operator's, the goal's, the step's and its attempt's.
fn step_labels(p: &StepPodParams, goal_name: &str) -> BTreeMap<String, String> {
    let step = &p.goal.spec.steps[p.step];
    let mut labels = BTreeMap::from([
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (labels::GOAL.into(), label_value(goal_name)),
        (labels::STEP.into(), step.name.clone()),
        (labels::STEP_INDEX.into(), p.step.to_string()),
        (labels::ATTEMPT.into(), p.attempt.to_string()),
        (labels::ROLE.into(), p.role.to_string()),
    ]);
    if let Some(swarm) = &p.goal.spec.swarm {
        labels.insert(labels::SWARM.into(), label_value(swarm));
    }
    labels
}

/// What the step's command reads from its environment: the goal, step and attempt,
/// the action, where the results and instructions are, and the workspace's git source.
fn step_env(p: &StepPodParams, goal_name: &str, workspace: &Workspace) -> Vec<EnvVar> {
    let step = &p.goal.spec.steps[p.step];
    let instruction_file =
        runtimes::lookup(p.runtime.name.unwrap_or(crate::api::RuntimeName::Claude))
            .instruction_file;
    [
        ("OVERSEER_GOAL", goal_name.to_string()),
        ("OVERSEER_STEP", step.name.clone()),
        ("OVERSEER_STEP_INDEX", p.step.to_string()),
        ("OVERSEER_ATTEMPT", p.attempt.to_string()),
        ("OVERSEER_ACTION", step.action.clone()),
        ("OVERSEER_RESULTS_FILE", RESULTS_FILE.to_string()),
        ("OVERSEER_STEP_INSTRUCTIONS", p.instructions.to_string()),
        (
            "OVERSEER_INSTRUCTIONS",
            format!("{}/{instruction_file}", super::instructions::DIR),
        ),
    ]
    .into_iter()
    .map(|(name, value)| pods::env(name, value))
    .chain(workspace::git_env(workspace))
    .collect()
}

/// The results of the completed steps, as the file a step pod reads.
pub fn results_config_map(goal: &Goal, status: &GoalStatus) -> ConfigMap {
    let goal_name = goal.metadata.name.clone().unwrap_or_default();
    let results: Vec<serde_json::Value> = status
        .steps
        .iter()
        .take(status.completed_steps as usize)
        .filter(|s| s.phase == StepPhase::Succeeded)
        .map(|s| serde_json::json!({"step": s.name, "result": s.result}))
        .collect();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(results_name(&goal_name)),
            namespace: goal.metadata.namespace.clone(),
            labels: Some(BTreeMap::from([
                (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
                (labels::GOAL.into(), label_value(&goal_name)),
            ])),
            owner_references: goal.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "results.json".to_string(),
            serde_json::to_string_pretty(&results).unwrap_or_else(|_| "[]".into()),
        )])),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_steps_template_mounts_are_read_only_and_the_binary_always() {
        let goal: Goal = serde_json::from_value(serde_json::json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
            "metadata": {"name": "audit", "namespace": "team", "uid": "goal-uid"},
            "spec": {"steps": [{"name": "look", "action": "Read the code"}]}
        }))
        .unwrap();
        let template: PodTemplate = serde_json::from_value(serde_json::json!({
            "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": "shared-cache"}}],
            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]
        }))
        .unwrap();
        for read_only in [false, true] {
            let pod = step_pod(&StepPodParams {
                goal: &goal,
                step: 0,
                attempt: 1,
                role: "reviewer",
                runtime: &RuntimeSpec::default(),
                timeout: Duration::from_secs(60),
                template: template.clone(),
                read_only,
                instructions: "",
                overseer_image: "overseer:1",
            });
            let mounts = pod.spec.unwrap().containers[0]
                .volume_mounts
                .clone()
                .unwrap();
            let mount = |path: &str| mounts.iter().find(|m| m.mount_path == path).unwrap();
            assert_eq!(
                mount("/cache").read_only == Some(true),
                read_only,
                "{mounts:?}"
            );
            assert_eq!(mount(BIN_DIR).read_only, Some(true), "{mounts:?}");
            assert_ne!(mount("/overseer").read_only, Some(true), "{mounts:?}");
        }
    }
}
