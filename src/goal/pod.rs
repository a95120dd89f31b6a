//! The step pod and the results it carries, built as plain values (no I/O).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, DownwardAPIVolumeFile, DownwardAPIVolumeSource,
    EnvVar, ObjectFieldSelector, Pod, PodSpec, Volume, VolumeMount,
};
use kube::Resource;
use kube::api::ObjectMeta;

use super::land;
use super::plan::StepRun;
use crate::api::{MANAGED_BY, label_value, pod_env};
use crate::kinds::goal::{Goal, GoalStatus, StepPhase};
use crate::labels;
use crate::workspace::Workspace;
use crate::workspace::sync::START_FALLBACK_ENV;
use crate::{pods, runtimes, workspace};

/// Where the init container puts the `overseer` binary.
pub use crate::pods::BIN_DIR;
pub use crate::step::RESULTS_FILE;

/// The pod annotation that carries the earlier steps' results, read through the
/// downward API as `RESULTS_FILE`.
pub const RESULTS_ANNOTATION: &str = "overseer.dev/results";
/// Results up to this size travel in the step pod's own annotation, so that starting a
/// step costs no write besides the pod (the API server allows 256 KiB of annotations in
/// all; the rest is left to the user's template). Beyond it, a ConfigMap carries them.
pub const INLINE_RESULTS_BYTES: usize = 128 * 1024;

/// Where a step pod finds the results of the goal's completed steps.
#[derive(Clone, Debug, PartialEq)]
pub enum Results {
    /// `results.json` itself, as the pod's annotation `RESULTS_ANNOTATION`.
    Inline(String),
    /// Too large for an annotation: the ConfigMap `<goal>-results`, applied before the pod.
    ConfigMap(Box<ConfigMap>),
}

/// The results of `status`'s completed steps, and where they travel.
pub fn results(goal: &Goal, status: &GoalStatus) -> Results {
    let results: Vec<serde_json::Value> = status
        .steps
        .iter()
        .filter(|s| s.phase == StepPhase::Succeeded)
        .map(|s| match &s.item {
            Some(item) => serde_json::json!({"step": s.name, "item": item, "result": s.result}),
            None => serde_json::json!({"step": s.name, "result": s.result}),
        })
        .collect();
    let json = serde_json::Value::from(results).to_string();
    if json.len() <= INLINE_RESULTS_BYTES {
        Results::Inline(json)
    } else {
        Results::ConfigMap(Box::new(results_config_map(goal, json)))
    }
}

pub struct StepPodParams<'a> {
    pub goal: &'a Goal,
    /// The attempt the plan decided on.
    pub run: &'a StepRun,
    /// The earlier steps' results.
    pub results: &'a Results,
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
    let workspace = run_workspace(p);
    let mut command = vec![format!("{BIN_DIR}/overseer"), "step".into(), "--".into()];
    command.extend(runtimes::headless_command(&p.run.runtime, &p.run.action));
    // Every step works in the goal's workspace: with persistent storage, on the files
    // the step before left.
    let mut mounts = pods::overseer_mounts().to_vec();
    mounts.extend(workspace::mounts(&workspace, p.run.read_only));
    mounts.push(VolumeMount {
        name: "results".into(),
        mount_path: "/overseer/results".into(),
        read_only: Some(true),
        ..Default::default()
    });
    let mut volumes = vec![pods::overseer_volume()];
    volumes.extend(workspace::volumes(&workspace, &goal_name));
    volumes.push(results_volume(p.results, &goal_name));
    let mut sync = workspace::sync_container(
        &workspace,
        p.run.runtime.image.as_deref(),
        &workspace::default_branch(&goal_name),
    );
    if let Some(sync) = sync.as_mut().filter(|_| p.run.lands.is_some()) {
        // The goal's branch is made by the first run that lands; until then, its start.
        let start = p
            .goal
            .spec
            .workspace
            .as_ref()
            .and_then(|w| w.git.as_ref()?.r#ref.clone());
        let fallback = pods::env(START_FALLBACK_ENV, start.unwrap_or_else(|| "HEAD".into()));
        sync.env.get_or_insert_default().push(fallback);
    }
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(super::plan::pod_name(&goal_name, p.run.step, p.run.attempt)),
            namespace: p.goal.metadata.namespace.clone(),
            labels: Some(step_labels(p, &goal_name)),
            owner_references: p.goal.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            active_deadline_seconds: Some(p.run.timeout.as_secs().max(1) as i64),
            automount_service_account_token: Some(false),
            security_context: Some(pods::restricted_pod()),
            init_containers: Some(
                std::iter::once(pods::install_container(p.overseer_image))
                    .chain(sync)
                    .collect(),
            ),
            containers: vec![Container {
                name: "agent".into(),
                image: p.run.runtime.image.clone(),
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
    p.run.template.clone().dress(&mut pod);
    // After the template's annotations: theirs never stand for the results.
    let annotations = pod.metadata.annotations.get_or_insert_default();
    match p.results {
        Results::Inline(json) => annotations.insert(RESULTS_ANNOTATION.into(), json.clone()),
        Results::ConfigMap(_) => annotations.remove(RESULTS_ANNOTATION),
    };
    if p.run.read_only {
        pods::read_only_mounts(&mut pod);
    }
    pod
}

/// The goal's workspace; for a run that lands, a fresh clone (never the goal's claim)
/// of the goal's branch on the run's own branch.
fn run_workspace(p: &StepPodParams) -> Workspace {
    let mut workspace = p.goal.spec.workspace.clone().unwrap_or_default();
    if let (Some(lands), Some(git)) = (&p.run.lands, workspace.git.as_mut()) {
        git.branch = Some(lands.branch.clone());
        git.r#ref = Some(lands.onto.clone());
        workspace.storage = workspace::Storage::default();
    }
    workspace
}

/// What `overseer step` reads to land a run's work (src/goal/land.rs).
fn landing_env(p: &StepPodParams, workspace: &Workspace) -> Vec<(&'static str, String)> {
    let (Some(lands), Some(git)) = (&p.run.lands, &workspace.git) else {
        return Vec::new();
    };
    vec![
        (land::ONTO_ENV, lands.onto.clone()),
        (land::BRANCH_ENV, lands.branch.clone()),
        ("OVERSEER_GIT_URL", git.url.clone()),
        (
            "OVERSEER_MERGE_CHECKS",
            serde_json::to_string(&lands.checks).unwrap_or_else(|_| "[]".into()),
        ),
    ]
}

/// The volume that holds `results.json`: the pod's own annotation through the downward
/// API, or the results ConfigMap.
fn results_volume(results: &Results, goal_name: &str) -> Volume {
    match results {
        Results::Inline(_) => Volume {
            name: "results".into(),
            downward_api: Some(DownwardAPIVolumeSource {
                items: Some(vec![DownwardAPIVolumeFile {
                    path: results_file_name().into(),
                    field_ref: Some(ObjectFieldSelector {
                        field_path: format!("metadata.annotations['{RESULTS_ANNOTATION}']"),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        },
        Results::ConfigMap(_) => Volume {
            name: "results".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: results_name(goal_name),
                ..Default::default()
            }),
            ..Default::default()
        },
    }
}

/// The step pod's labels: the operator's, the goal's, the step's and its attempt's.
fn step_labels(p: &StepPodParams, goal_name: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (labels::GOAL.into(), label_value(goal_name)),
        (labels::STEP.into(), label_value(&p.run.name)),
        (labels::STEP_INDEX.into(), p.run.step.to_string()),
        (labels::ATTEMPT.into(), p.run.attempt.to_string()),
        (labels::ROLE.into(), p.run.role.clone()),
    ]);
    if let Some(swarm) = &p.goal.spec.swarm {
        labels.insert(labels::SWARM.into(), label_value(swarm));
    }
    labels
}

/// What the step's command reads from its environment: the goal, step and attempt,
/// the action, where the results and instructions are, and the workspace's git source.
fn step_env(p: &StepPodParams, goal_name: &str, workspace: &Workspace) -> Vec<EnvVar> {
    let instruction_file = runtimes::lookup(p.run.runtime.effective_name()).instruction_file;
    let item = p.run.item.clone().map(|item| ("OVERSEER_ITEM", item));
    [
        ("OVERSEER_GOAL", goal_name.to_string()),
        ("OVERSEER_STEP", p.run.name.clone()),
        ("OVERSEER_STEP_INDEX", p.run.step.to_string()),
        (pod_env::ATTEMPT, p.run.attempt.to_string()),
        ("OVERSEER_ACTION", p.run.action.clone()),
        ("OVERSEER_RESULTS_FILE", RESULTS_FILE.to_string()),
        ("OVERSEER_STEP_INSTRUCTIONS", p.run.instructions.clone()),
        (
            pod_env::INSTRUCTIONS,
            format!("{}/{instruction_file}", super::instructions::DIR),
        ),
    ]
    .into_iter()
    .chain(item)
    .chain(landing_env(p, workspace))
    .map(|(name, value)| pods::env(name, value))
    .chain(workspace::git_env(workspace))
    .collect()
}

/// `results.json`: the name of `RESULTS_FILE` in its volume.
fn results_file_name() -> &'static str {
    RESULTS_FILE.rsplit('/').next().unwrap_or(RESULTS_FILE)
}

/// The ConfigMap that carries `json`, the results too large for the pod's annotation.
fn results_config_map(goal: &Goal, json: String) -> ConfigMap {
    let goal_name = goal.metadata.name.clone().unwrap_or_default();
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
        data: Some(BTreeMap::from([(results_file_name().to_string(), json)])),
        ..Default::default()
    }
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;
