//! The one pod template type of every kind (`podTemplate` on Agent, Goal, its steps,
//! and a Swarm's defaults, roles and members), how layers of it merge, and how the
//! merged template dresses a pod the operator built. All pure.
//!
//! Layers, first to last (a later layer wins):
//! - an agent: swarm `defaults.podTemplate` → `roles.<role>.podTemplate` → the
//!   member's or agent's own `podTemplate`;
//! - a goal step: swarm `defaults.podTemplate` → `roles.<role>.podTemplate` → the
//!   goal's `spec.podTemplate` → the step's `podTemplate`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvFromSource, EnvVar, LocalObjectReference, Pod, ResourceRequirements,
    Toleration, Volume, VolumeMount,
};
use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// Settings merged into a pod the operator generates (an agent's or a step's). The
/// operator owns the rest: the command, the image, the ServiceAccount, the init
/// container and the restricted security settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplate {
    /// Labels added to the pod; `overseer.dev/` labels are the operator's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 64))]
    #[x_kube(validation = Rule::new("self.all(k, !k.startsWith('overseer.dev/'))").message("labels under overseer.dev/ are reserved for the operator"))]
    pub labels: BTreeMap<String, String>,
    /// Annotations added to the pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 64))]
    #[x_kube(validation = Rule::new("self.all(k, !k.startsWith('container.apparmor.security.beta.kubernetes.io/') && !k.startsWith('seccomp.security.alpha.kubernetes.io/') && !k.startsWith('container.seccomp.security.alpha.kubernetes.io/'))").message("AppArmor and seccomp annotations are refused: the operator sets the pod's security profile"))]
    pub annotations: BTreeMap<String, String>,
    /// Environment variables of the agent container (the operator's `OVERSEER_*` win).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 128))]
    pub env: Vec<EnvVar>,
    /// Sources of environment variables of the agent container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub env_from: Vec<EnvFromSource>,
    /// Compute resources of the agent container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Volumes added to the pod (one named `workspace` replaces an agent's emptyDir).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(validation = Rule::new("self.all(v, !has(v.hostPath))").message("hostPath volumes are refused: a template must not reach into the node"))]
    #[x_kube(validation = Rule::new("self.all(v, has(v.configMap) || has(v.csi) || has(v.downwardAPI) || has(v.emptyDir) || has(v.ephemeral) || has(v.persistentVolumeClaim) || has(v.projected) || has(v.secret))").message("volumes may be only of the types the restricted Pod Security Standard allows: configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected, secret"))]
    #[schemars(length(max = 32))]
    pub volumes: Vec<Volume>,
    /// Volume mounts added to the agent container; never at or under `/overseer`, where
    /// the operator's binary and the shim's socket are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(validation = Rule::new("self.all(m, !m.mountPath.matches('^[/.]*overseer(/|$)') && !m.mountPath.matches('(^|/)[.][.](/|$)'))").message("mountPath may not be /overseer or under it (the operator's binary and socket), nor contain '..'"))]
    #[schemars(length(max = 32))]
    pub volume_mounts: Vec<VolumeMount>,
    /// Node selector of the pod.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations of the pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub tolerations: Vec<Toleration>,
    /// Affinity of the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// RuntimeClass of the pod (gVisor or Kata, say, for a sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub runtime_class_name: Option<String>,
    /// The user and groups the pod runs as; the rest of its security context stays
    /// restricted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodIdentity>,
    /// Secrets for pulling the images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub image_pull_secrets: Vec<LocalObjectReference>,
}

/// The user and groups of a pod: what an image's file ownership needs, nothing that
/// loosens the restricted Pod Security Standard (root is refused).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodIdentity {
    /// Uid of the pod's processes (not 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 2147483647))]
    pub run_as_user: Option<i64>,
    /// Primary gid of the pod's processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2147483647))]
    pub run_as_group: Option<i64>,
    /// Gid that owns the pod's volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2147483647))]
    pub fs_group: Option<i64>,
}

impl PodTemplate {
    /// The templates merged in order, each over the ones before it: maps (labels,
    /// annotations, node selector) key by key; env by name, volumes by name, mounts by
    /// mount path and pull secrets by name, the later entry replacing the earlier; the
    /// resource requests and limits by resource; envFrom and tolerations appended;
    /// affinity, runtime class and each security field replaced when set.
    pub fn layered<'a>(layers: impl IntoIterator<Item = Option<&'a PodTemplate>>) -> PodTemplate {
        layers
            .into_iter()
            .flatten()
            .fold(PodTemplate::default(), |base, over| {
                base.under(over.clone())
            })
    }

    /// Whether the template sets nothing.
    pub fn is_empty(&self) -> bool {
        *self == PodTemplate::default()
    }

    fn under(self, over: PodTemplate) -> PodTemplate {
        PodTemplate {
            labels: extended(self.labels, over.labels),
            annotations: extended(self.annotations, over.annotations),
            env: replaced_by(self.env, over.env, |e| e.name.clone()),
            env_from: appended(self.env_from, over.env_from),
            resources: match (self.resources, over.resources) {
                (Some(base), Some(over)) => Some(merged_resources(base, over)),
                (base, over) => over.or(base),
            },
            volumes: replaced_by(self.volumes, over.volumes, |v| v.name.clone()),
            volume_mounts: replaced_by(self.volume_mounts, over.volume_mounts, |m| {
                m.mount_path.clone()
            }),
            node_selector: extended(self.node_selector, over.node_selector),
            tolerations: appended(self.tolerations, over.tolerations),
            affinity: over.affinity.or(self.affinity),
            runtime_class_name: over.runtime_class_name.or(self.runtime_class_name),
            security_context: match (self.security_context, over.security_context) {
                (Some(base), Some(over)) => Some(PodIdentity {
                    run_as_user: over.run_as_user.or(base.run_as_user),
                    run_as_group: over.run_as_group.or(base.run_as_group),
                    fs_group: over.fs_group.or(base.fs_group),
                }),
                (base, over) => over.or(base),
            },
            image_pull_secrets: replaced_by(
                self.image_pull_secrets,
                over.image_pull_secrets,
                |s| s.name.clone(),
            ),
        }
    }

    /// Dresses `pod`, built by the operator, with this template. What the operator
    /// set wins: its labels (ownership and exec input are decided by them), its env
    /// names, volume names and mount paths. The first container is the agent's.
    pub fn dress(self, pod: &mut Pod) {
        let mut labels = self.labels;
        labels.extend(pod.metadata.labels.take().unwrap_or_default());
        pod.metadata.labels = Some(labels);
        let mut annotations = self.annotations;
        annotations.extend(pod.metadata.annotations.take().unwrap_or_default());
        pod.metadata.annotations = non_empty(annotations);
        let Some(spec) = pod.spec.as_mut() else {
            return;
        };
        spec.node_selector = non_empty(self.node_selector);
        spec.tolerations = non_empty(self.tolerations);
        spec.affinity = self.affinity;
        spec.runtime_class_name = self.runtime_class_name;
        spec.image_pull_secrets = non_empty(self.image_pull_secrets);
        if let Some(identity) = self.security_context {
            let security = spec.security_context.get_or_insert_with(Default::default);
            security.run_as_user = identity.run_as_user;
            security.run_as_group = identity.run_as_group;
            security.fs_group = identity.fs_group;
        }
        let volumes = spec.volumes.get_or_insert_with(Vec::new);
        let added = without_keys(self.volumes, volumes, |v| v.name.clone());
        volumes.extend(added);
        // The workspace's clone runs git as the agent does: with its environment and
        // mounts (a private CA, a proxy, git's own settings).
        let clones = spec.init_containers.iter_mut().flatten();
        for clone in clones.filter(|c| c.name == crate::workspace::SYNC_CONTAINER) {
            add_env_and_mounts(
                clone,
                self.env.clone(),
                self.env_from.clone(),
                self.volume_mounts.clone(),
            );
        }
        let Some(container) = spec.containers.first_mut() else {
            return;
        };
        add_env_and_mounts(container, self.env, self.env_from, self.volume_mounts);
        container.resources = self.resources;
    }
}

/// Gives `container` the template's env (names the operator set win), envFrom, and
/// mounts (paths the operator set win).
fn add_env_and_mounts(
    container: &mut Container,
    env: Vec<EnvVar>,
    env_from: Vec<EnvFromSource>,
    mounts: Vec<VolumeMount>,
) {
    let own_env = container.env.get_or_insert_with(Vec::new);
    let added = without_keys(env, own_env, |e| e.name.clone());
    own_env.extend(added);
    container.env_from = non_empty(env_from);
    let own_mounts = container.volume_mounts.get_or_insert_with(Vec::new);
    let added = without_keys(mounts, own_mounts, |m| m.mount_path.clone());
    own_mounts.extend(added);
}

fn extended(
    mut base: BTreeMap<String, String>,
    over: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    base.extend(over);
    base
}

fn appended<T: PartialEq>(mut base: Vec<T>, over: Vec<T>) -> Vec<T> {
    for item in over {
        if !base.contains(&item) {
            base.push(item);
        }
    }
    base
}

/// `base` without the entries `over` replaces, then `over`.
fn replaced_by<T, K: PartialEq>(base: Vec<T>, over: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let replaced: Vec<K> = over.iter().map(&key).collect();
    let mut merged: Vec<T> = base
        .into_iter()
        .filter(|item| !replaced.contains(&key(item)))
        .collect();
    merged.extend(over);
    merged
}

/// The entries of `items` whose key none of `taken` has.
fn without_keys<T, K: PartialEq>(items: Vec<T>, taken: &[T], key: impl Fn(&T) -> K) -> Vec<T> {
    let taken: Vec<K> = taken.iter().map(&key).collect();
    items
        .into_iter()
        .filter(|item| !taken.contains(&key(item)))
        .collect()
}

fn merged_resources(
    base: ResourceRequirements,
    over: ResourceRequirements,
) -> ResourceRequirements {
    let merge = |base: Option<BTreeMap<_, _>>, over: Option<BTreeMap<_, _>>| match (base, over) {
        (Some(mut base), Some(over)) => {
            base.extend(over);
            Some(base)
        }
        (base, over) => over.or(base),
    };
    ResourceRequirements {
        limits: merge(base.limits, over.limits),
        requests: merge(base.requests, over.requests),
        claims: over.claims.or(base.claims),
    }
}

fn non_empty<C: IntoIterator + Default + PartialEq>(items: C) -> Option<C> {
    (items != C::default()).then_some(items)
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
