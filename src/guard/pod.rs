//! How an agent's pod carries its guards: the policy and its CLI's hook settings (Claude
//! Code's managed settings, codex's managed requirements) in the pod's own annotations,
//! mounted read-only through the downward API; they are set after the pod template's,
//! so a template cannot put its own in their place.
//! No ConfigMap and no write of its own: the pod is created anyway, and the files
//! cannot be changed by the agent, which runs as a user that owns neither.

use k8s_openapi::api::core::v1::{
    DownwardAPIVolumeFile, DownwardAPIVolumeSource, ObjectFieldSelector, Pod, Volume, VolumeMount,
};

use super::{POLICY_DIR, POLICY_FILE, Policy, claude, codex};
use crate::api::RuntimeName;

pub const POLICY_ANNOTATION: &str = "overseer.dev/guard-policy";
pub const CLAUDE_SETTINGS_ANNOTATION: &str = "overseer.dev/claude-managed-settings";
pub const CODEX_REQUIREMENTS_ANNOTATION: &str = "overseer.dev/codex-requirements";
const VOLUME: &str = "overseer-guard";

/// The runtime's own hook settings: the annotation and file that carry them, where the
/// CLI reads them, and their text.
fn hook_settings(
    runtime: RuntimeName,
) -> Option<(&'static str, &'static str, &'static str, String)> {
    match runtime {
        RuntimeName::Claude => Some((
            CLAUDE_SETTINGS_ANNOTATION,
            "claude-managed-settings.json",
            claude::MANAGED_SETTINGS,
            claude::managed_settings().to_string(),
        )),
        RuntimeName::Codex => Some((
            CODEX_REQUIREMENTS_ANNOTATION,
            "codex-requirements.toml",
            codex::REQUIREMENTS,
            codex::requirements(),
        )),
        _ => None,
    }
}

/// Adds `policy` to `pod` (its agent container, the first) for the runtime `runtime`.
pub fn dress(pod: &mut Pod, policy: &Policy, runtime: RuntimeName) {
    let hook = hook_settings(runtime);
    let mut files = vec![(POLICY_ANNOTATION, POLICY_FILE, policy_json(policy))];
    if let Some((annotation, file, _, text)) = &hook {
        files.push((annotation, file, text.clone()));
    }
    let annotations = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    for (annotation, _, text) in &files {
        annotations.insert(annotation.to_string(), text.clone());
    }
    let items = files
        .iter()
        .map(|(annotation, file, _)| DownwardAPIVolumeFile {
            path: file.to_string(),
            field_ref: Some(ObjectFieldSelector {
                field_path: format!("metadata.annotations['{annotation}']"),
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect();
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    spec.volumes.get_or_insert_with(Vec::new).push(Volume {
        name: VOLUME.into(),
        downward_api: Some(DownwardAPIVolumeSource {
            items: Some(items),
            ..Default::default()
        }),
        ..Default::default()
    });
    let Some(container) = spec.containers.first_mut() else {
        return;
    };
    let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
    mounts.push(VolumeMount {
        name: VOLUME.into(),
        mount_path: POLICY_DIR.into(),
        read_only: Some(true),
        ..Default::default()
    });
    if let Some((_, file, path, _)) = hook {
        mounts.push(VolumeMount {
            name: VOLUME.into(),
            mount_path: path.into(),
            sub_path: Some(file.into()),
            read_only: Some(true),
            ..Default::default()
        });
    }
}

fn policy_json(policy: &Policy) -> String {
    serde_json::to_string(policy).expect("a policy serializes")
}
