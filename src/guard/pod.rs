//! How an agent's pod carries its guards: the policy and its CLI's hook (Claude Code's
//! managed settings, codex's managed requirements, a copilot plugin, a pi extension) in
//! the pod's own annotations, mounted read-only through the downward API; they are set
//! after the pod template's, so a template cannot put its own in their place. Where the
//! CLI loads its hook from a flag (copilot, pi), the flag goes on the agent's command.
//! No ConfigMap and no write of its own: the pod is created anyway, and the files
//! cannot be changed by the agent, which runs as a user that owns neither.

use k8s_openapi::api::core::v1::{
    DownwardAPIVolumeFile, DownwardAPIVolumeSource, ObjectFieldSelector, Pod, Volume, VolumeMount,
};

use super::{POLICY_DIR, POLICY_FILE, Policy, claude, codex, copilot, pi};
use crate::api::RuntimeName;

pub const POLICY_ANNOTATION: &str = "overseer.dev/guard-policy";
pub const CLAUDE_SETTINGS_ANNOTATION: &str = "overseer.dev/claude-managed-settings";
pub const CODEX_REQUIREMENTS_ANNOTATION: &str = "overseer.dev/codex-requirements";
pub const COPILOT_PLUGIN_ANNOTATION: &str = "overseer.dev/copilot-guard-plugin";
pub const COPILOT_HOOKS_ANNOTATION: &str = "overseer.dev/copilot-guard-hooks";
pub const PI_EXTENSION_ANNOTATION: &str = "overseer.dev/pi-guard-extension";
const VOLUME: &str = "overseer-guard";

/// One file of the guard volume: the annotation that carries it, its path in the
/// volume, where else the CLI reads it (a mount of its own), and its text.
struct File {
    annotation: &'static str,
    path: String,
    mount: Option<&'static str>,
    text: String,
}

/// A runtime's hook: the files it reads and the flags that load it.
fn hook(runtime: RuntimeName) -> (Vec<File>, Vec<String>) {
    match runtime {
        RuntimeName::Claude => (
            vec![File {
                annotation: CLAUDE_SETTINGS_ANNOTATION,
                path: "claude-managed-settings.json".into(),
                mount: Some(claude::MANAGED_SETTINGS),
                text: claude::managed_settings().to_string(),
            }],
            vec![],
        ),
        RuntimeName::Codex => (
            vec![File {
                annotation: CODEX_REQUIREMENTS_ANNOTATION,
                path: "codex-requirements.toml".into(),
                mount: Some(codex::REQUIREMENTS),
                text: codex::requirements(),
            }],
            vec![],
        ),
        RuntimeName::Copilot => (
            vec![
                File {
                    annotation: COPILOT_PLUGIN_ANNOTATION,
                    path: format!("{}/plugin.json", copilot::PLUGIN_DIR),
                    mount: None,
                    text: copilot::manifest().to_string(),
                },
                File {
                    annotation: COPILOT_HOOKS_ANNOTATION,
                    path: format!("{}/hooks/hooks.json", copilot::PLUGIN_DIR),
                    mount: None,
                    text: copilot::hooks().to_string(),
                },
            ],
            copilot::args(),
        ),
        RuntimeName::Pi => (
            vec![File {
                annotation: PI_EXTENSION_ANNOTATION,
                path: pi::EXTENSION.into(),
                mount: None,
                text: pi::extension(),
            }],
            pi::args(),
        ),
        RuntimeName::Cursor | RuntimeName::Custom => (vec![], vec![]),
    }
}

/// Adds `policy` to `pod` (its agent container, the first) for the runtime `runtime`.
pub fn dress(pod: &mut Pod, policy: &Policy, runtime: RuntimeName) {
    let (hook_files, args) = hook(runtime);
    let mut files = vec![File {
        annotation: POLICY_ANNOTATION,
        path: POLICY_FILE.into(),
        mount: None,
        text: policy_json(policy),
    }];
    files.extend(hook_files);
    let annotations = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    for file in &files {
        annotations.insert(file.annotation.to_string(), file.text.clone());
    }
    let items = files
        .iter()
        .map(|file| DownwardAPIVolumeFile {
            path: file.path.clone(),
            field_ref: Some(ObjectFieldSelector {
                field_path: format!("metadata.annotations['{}']", file.annotation),
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
    // After the user's args: a flag of the operator's that the agent cannot drop.
    if let Some(command) = container.command.as_mut() {
        command.extend(args);
    }
    let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
    mounts.push(VolumeMount {
        name: VOLUME.into(),
        mount_path: POLICY_DIR.into(),
        read_only: Some(true),
        ..Default::default()
    });
    for file in &files {
        if let Some(path) = file.mount {
            mounts.push(VolumeMount {
                name: VOLUME.into(),
                mount_path: path.into(),
                sub_path: Some(file.path.clone()),
                read_only: Some(true),
                ..Default::default()
            });
        }
    }
}

fn policy_json(policy: &Policy) -> String {
    serde_json::to_string(policy).expect("a policy serializes")
}
