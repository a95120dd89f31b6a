//! Where an agent or a goal's steps work: `spec.workspace` (Agent, Goal, Swarm), its
//! storage (an emptyDir per pod, or a PersistentVolumeClaim owned by the Agent or Goal
//! that outlives attempts and stall replacements), and the pod pieces that give it,
//! built as plain values (src/kubernetes/pods.rs applies the claim). The git
//! source is cloned by `overseer workspace sync` (src/workspace/sync.rs) in an init
//! container.

pub mod land;
pub mod sync;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource,
    SecretVolumeSource, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::KubeSchema;
use kube::api::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{MANAGED_BY, fit_name, object_name_schema};
use crate::pods;

/// Where the workspace is mounted in every container that works in it.
pub const DIR: &str = "/workspace";
/// The pod's volume of the workspace.
pub const VOLUME: &str = "workspace";
/// The init container that clones the git source.
pub const SYNC_CONTAINER: &str = "workspace";
/// Where the git credentials Secret is mounted.
pub const CREDENTIALS_DIR: &str = "/overseer/git-credentials";
const CREDENTIALS_VOLUME: &str = "git-credentials";

/// The workspace of an Agent (each of its pods) or a Goal (every step, in turn).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    /// A repository cloned into the workspace before the agent starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSource>,
    /// What holds the workspace.
    #[serde(default)]
    pub storage: Storage,
}

/// A repository to work in.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitSource {
    /// The repository (https://, ssh:// or git@host:path).
    #[schemars(length(min = 1, max = 2048))]
    #[x_kube(validation = Rule::new("self.startsWith('https://') || self.startsWith('ssh://') || self.startsWith('git@') || self.startsWith('file:///')").message("git.url must be an https://, ssh://, git@ or file:/// URL"))]
    #[x_kube(validation = Rule::new("!self.matches('^https://[^/]*@') && !self.matches('^ssh://[^/@]*:[^/]*@')").message("git.url must not hold credentials (they would be in the spec, readable by everyone who reads it): give them in the workspace's credentials Secret"))]
    pub url: String,
    /// The branch, tag or commit to start from (default: the remote's HEAD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    #[x_kube(validation = Rule::new("!self.startsWith('-')").message("git.ref must not start with -"))]
    pub r#ref: Option<String>,
    /// The branch the work goes on (default `overseer/<agent or goal>`), created from
    /// `ref` the first time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    #[x_kube(validation = Rule::new("!self.startsWith('-')").message("git.branch must not start with -"))]
    pub branch: Option<String>,
    /// A Secret with `username` (optional) and `password` (a token) for https.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret_ref: Option<SecretRef>,
}

/// A Secret of the object's namespace, by name.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct SecretRef {
    #[schemars(schema_with = "object_name_schema")]
    pub name: String,
}

/// What holds a workspace: an emptyDir of each pod (the default), or a claim that
/// outlives the pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.emptyDir) && has(self.persistent))").message("storage takes emptyDir or persistent, not both"))]
pub struct Storage {
    /// A fresh directory per pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_dir: Option<EmptyDir>,
    /// A PersistentVolumeClaim owned by the Agent or Goal, kept across its pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent: Option<Persistent>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct EmptyDir {}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Persistent {
    /// Requested size, such as 10Gi.
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"))]
    pub size: String,
    /// StorageClass of the claim (default: the cluster's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "object_name_schema")]
    pub storage_class_name: Option<String>,
}

/// The environment of every container that runs git in a cloned workspace: the
/// workspace is a safe directory. A volume's root belongs to root (an emptyDir) while
/// the agent runs as its own user, and git (2.35.2 and later) refuses every command in
/// a repository whose top directory another user owns ("dubious ownership"). Given as
/// command-line-scoped configuration (`GIT_CONFIG_COUNT`), which git honours for
/// `safe.directory` and which needs no writable global config.
pub fn git_env(workspace: &Workspace) -> Vec<k8s_openapi::api::core::v1::EnvVar> {
    if workspace.git.is_none() {
        return Vec::new();
    }
    [
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "safe.directory"),
        ("GIT_CONFIG_VALUE_0", DIR),
    ]
    .into_iter()
    .map(|(name, value)| pods::env(name, value))
    .collect()
}

/// The name of the claim of the Agent or Goal `owner`.
pub fn claim_name(owner: &str) -> String {
    format!("{}-workspace", fit_name(owner, 253 - "-workspace".len()))
}

/// The claim of a persistent workspace, owned by `owner` (deleted with it).
pub fn claim(
    workspace: &Workspace,
    meta: ObjectMeta,
    owner: &str,
    labels: BTreeMap<String, String>,
) -> Option<PersistentVolumeClaim> {
    let persistent = workspace.storage.persistent.as_ref()?;
    let mut all_labels = labels;
    all_labels.insert(MANAGED_BY.0.into(), MANAGED_BY.1.into());
    Some(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(claim_name(owner)),
            labels: Some(all_labels),
            ..meta
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: persistent.storage_class_name.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(persistent.size.clone()),
                )])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    })
}

/// The pod's volumes for the workspace of `owner`: its claim or an emptyDir, and the
/// git credentials when the source has them.
pub fn volumes(workspace: &Workspace, owner: &str) -> Vec<Volume> {
    let storage = match &workspace.storage.persistent {
        Some(_) => Volume {
            name: VOLUME.into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(owner),
                ..Default::default()
            }),
            ..Default::default()
        },
        None => Volume {
            name: VOLUME.into(),
            empty_dir: Some(Default::default()),
            ..Default::default()
        },
    };
    let credentials = credentials(workspace).map(|secret| Volume {
        name: CREDENTIALS_VOLUME.into(),
        secret: Some(SecretVolumeSource {
            // The default mode (0644): the agent's user must read it, and it owns no file.
            secret_name: Some(secret.to_string()),
            ..Default::default()
        }),
        ..Default::default()
    });
    std::iter::once(storage).chain(credentials).collect()
}

/// The mounts of a container working in the workspace (`read_only` for a role that
/// only reads), and of the git credentials.
pub fn mounts(workspace: &Workspace, read_only: bool) -> Vec<VolumeMount> {
    let storage = VolumeMount {
        name: VOLUME.into(),
        mount_path: DIR.into(),
        read_only: read_only.then_some(true),
        ..Default::default()
    };
    let credentials = credentials(workspace).map(|_| VolumeMount {
        name: CREDENTIALS_VOLUME.into(),
        mount_path: CREDENTIALS_DIR.into(),
        read_only: Some(true),
        ..Default::default()
    });
    std::iter::once(storage).chain(credentials).collect()
}

fn credentials(workspace: &Workspace) -> Option<&str> {
    workspace
        .git
        .as_ref()
        .and_then(|g| g.credentials_secret_ref.as_ref())
        .map(|s| s.name.as_str())
}

/// The init container that clones the git source into the workspace (or finds the
/// clone of an earlier pod and keeps it), with the agent's image for its `git`, and
/// the operator's binary copied in before it. None without a git source.
pub fn sync_container(
    workspace: &Workspace,
    image: Option<&str>,
    default_branch: &str,
) -> Option<Container> {
    let git = workspace.git.as_ref()?;
    let env = [
        Some(("OVERSEER_GIT_URL", git.url.clone())),
        git.r#ref.clone().map(|r| ("OVERSEER_GIT_REF", r)),
        Some((
            "OVERSEER_GIT_BRANCH",
            git.branch
                .clone()
                .unwrap_or_else(|| default_branch.to_string()),
        )),
    ]
    .into_iter()
    .flatten()
    .map(|(name, value)| pods::env(name, value))
    .chain(git_env(workspace))
    .collect();
    let mut volume_mounts = pods::overseer_mounts().to_vec();
    volume_mounts.extend(mounts(workspace, false));
    Some(Container {
        name: SYNC_CONTAINER.into(),
        image: image.map(String::from),
        command: Some(vec![
            format!("{}/overseer", pods::BIN_DIR),
            "workspace".into(),
            "sync".into(),
        ]),
        working_dir: Some(DIR.into()),
        env: Some(env),
        volume_mounts: Some(volume_mounts),
        security_context: Some(pods::restricted()),
        ..Default::default()
    })
}

/// The branch an owner's work goes on when the source names none.
pub fn default_branch(owner: &str) -> String {
    format!("overseer/{owner}")
}

#[cfg(test)]
mod tests;
