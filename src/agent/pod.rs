//! The agent's pod and its identity (ServiceAccount, and a Role limited by
//! `resourceNames` to its own Agent's status), built as plain values (no I/O).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, EnvVar, EnvVarSource, ObjectFieldSelector, Pod, PodSpec,
    ServiceAccount, Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};

use super::preamble;
use crate::api::{MANAGED_BY, RuntimeMode, fit_name, label_value, pod_env};
use crate::kinds::agent::{Agent, AgentSpec};
use crate::kinds::agent_pod::{CONTAINER, pod_name};
use crate::labels;
use crate::pods::env;
use crate::{pods, runtimes, workspace};

/// What the first list after a start reads of an agent's Role: its metadata and a
/// digest of its rules (`rules_digest`), from which `RolesAtStart` keeps the owner and
/// the digest, all `sync_role` compares. The rules are never held: 10,000 agents have
/// 10,000 Roles.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
pub struct RoleSummary {
    pub metadata: ObjectMeta,
    #[serde(
        default = "no_rules_digest",
        rename = "rules",
        deserialize_with = "digest_of_rules"
    )]
    pub rules_digest: u64,
}

crate::kubernetes::summary::summary_of!(RoleSummary, Role);

/// A digest of a Role's rules: equal for equal rules.
pub fn rules_digest(rules: &[PolicyRule]) -> u64 {
    crate::kubernetes::fresh::digest(&rules).unwrap_or_default()
}

fn no_rules_digest() -> u64 {
    rules_digest(&[])
}

fn digest_of_rules<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let rules: Option<Vec<PolicyRule>> = serde::Deserialize::deserialize(d)?;
    Ok(rules_digest(&rules.unwrap_or_default()))
}

/// Name of the agent's ServiceAccount, Role and RoleBinding.
pub fn identity_name(agent: &str) -> String {
    format!(
        "overseer-agent-{}",
        fit_name(agent, 253 - "overseer-agent-".len())
    )
}

/// The labels of everything made for `agent`.
pub fn labels(agent: &Agent) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (labels::AGENT.into(), label_value(&agent.name_any())),
        (labels::ROLE.into(), agent.spec.role.clone()),
    ]);
    if let Some(swarm) = &agent.spec.swarm {
        labels.insert(labels::SWARM.into(), label_value(swarm));
    }
    if let Some(run) = agent.labels().get(labels::RUN) {
        labels.insert(labels::RUN.into(), run.clone());
    }
    labels
}

/// The namespace and controller owner reference of what `agent` owns.
pub fn owned_meta(agent: &Agent) -> ObjectMeta {
    ObjectMeta {
        namespace: agent.namespace(),
        owner_references: agent.controller_owner_ref(&()).map(|r| vec![r]),
        ..Default::default()
    }
}

fn meta(agent: &Agent, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: agent.namespace(),
        labels: Some(labels(agent)),
        owner_references: agent.controller_owner_ref(&()).map(|r| vec![r]),
        ..Default::default()
    }
}

/// An agent this one oversees (`oversight::accepts`), or watches as its swarm's
/// monitor (`monitor::monitors`), and its current pod.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Overseen {
    pub agent: String,
    /// The pod of its current attempt, which `overseer peek` reads.
    pub pod: Option<String>,
}

/// Whether `agent` acts as an overseer: it has an overseer role, or it oversees agents.
pub fn acts_as_overseer(agent: &Agent, overseen: &[Overseen]) -> bool {
    !overseen.is_empty() || preamble::OVERSEER_ROLES.contains(&agent.spec.role.as_str())
}

fn rule(group: &str, resources: &[&str], names: Option<Vec<String>>, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(resources.iter().map(|r| r.to_string()).collect()),
        resource_names: names,
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }
}

/// The rules of an agent's Role. Every agent may read and write its own status
/// (`overseer loop done|block`), and a swarm member the copy of its swarm's claims.
/// An overseer may also read the agents, goals and
/// PR watches of its namespace (`overseer ps`), read the current pods and logs of
/// exactly the agents it oversees (`overseer peek`), and write their status
/// (`overseer send`, `loop release`). A swarm's monitor reads as an overseer does, and
/// the pods and logs of its `fleet`, but writes no status but its own. Nobody gets
/// pods/exec: the operator delivers every message. An empty `resourceNames` would
/// mean every name, so the pod rule is left out while no agent it reaches has a pod.
pub fn role_rules(agent: &Agent, overseen: &[Overseen], fleet: &[Overseen]) -> Vec<PolicyRule> {
    let mut writable = vec![agent.name_any()];
    writable.extend(overseen.iter().map(|o| o.agent.clone()));
    writable.sort();
    writable.dedup();
    let mut rules = vec![rule(
        crate::api::GROUP,
        &["agents/status"],
        Some(writable),
        &["get", "patch"],
    )];
    // A swarm member reads the claims of its swarm (`overseer claims`).
    if let Some(swarm) = super::oversight::swarm_owner(agent) {
        let claims = crate::kinds::claim::config_map_name(&swarm.name);
        rules.push(rule("", &["configmaps"], Some(vec![claims]), &["get"]));
    }
    if acts_as_overseer(agent, overseen) || !fleet.is_empty() {
        rules.push(rule(
            crate::api::GROUP,
            &["agents", "goals", "prwatches"],
            None,
            &["get", "list", "watch"],
        ));
        let mut pods: Vec<String> = overseen
            .iter()
            .chain(fleet)
            .filter_map(|o| o.pod.clone())
            .collect();
        pods.sort();
        pods.dedup();
        if !pods.is_empty() {
            rules.push(rule("", &["pods", "pods/log"], Some(pods), &["get"]));
        }
    }
    rules
}

/// The agent's ServiceAccount, its Role (`role_rules`) and the binding.
pub fn identity(
    agent: &Agent,
    overseen: &[Overseen],
    fleet: &[Overseen],
) -> (ServiceAccount, Role, RoleBinding) {
    let name = identity_name(&agent.name_any());
    let account = ServiceAccount {
        metadata: meta(agent, name.clone()),
        ..Default::default()
    };
    let role = Role {
        metadata: meta(agent, name.clone()),
        rules: Some(role_rules(agent, overseen, fleet)),
    };
    let binding = RoleBinding {
        metadata: meta(agent, name.clone()),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: name.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name,
            namespace: agent.namespace(),
            ..Default::default()
        }]),
    };
    (account, role, binding)
}

/// Where the agent works (`spec.workspace`; a pod template's volume named `workspace`
/// replaces its storage). The container's working directory.
pub const WORKSPACE: &str = workspace::DIR;
/// Where a swarm member's instructions ConfigMap is mounted (a directory, so a
/// change to a layer reaches the running pod).
pub const INSTRUCTIONS_DIR: &str = "/overseer/instructions";

/// The name of the ConfigMap holding an agent's composed instructions.
pub fn instructions_name(agent: &str) -> String {
    format!(
        "{}-instructions",
        fit_name(agent, 253 - "-instructions".len())
    )
}

/// How an agent's pod differs by what the agent is.
#[derive(Debug, Clone, Copy)]
pub struct PodShape<'a> {
    /// It acts as an overseer: its prompt starts with the standing instructions.
    pub overseer: bool,
    /// Its role only reads: every volume it mounts is read-only.
    pub read_only: bool,
    /// The runtime's instruction file name (CLAUDE.md, AGENTS.md), under which the
    /// agent's composed instructions are mounted.
    pub instructions_file: &'a str,
    /// The guards its CLI's hook checks each tool call against (none: guards off).
    pub guards: Option<&'a crate::guard::Policy>,
}

impl Default for PodShape<'_> {
    fn default() -> Self {
        PodShape {
            overseer: false,
            read_only: false,
            instructions_file: "AGENTS.md",
            guards: None,
        }
    }
}

/// The pod of one attempt: the agent CLI under `overseer shim`, as its own
/// ServiceAccount, working in `/workspace`. `agent` gives the names and the owner,
/// `spec` (its effective spec) the rest.
pub fn agent_pod(
    agent: &Agent,
    spec: &AgentSpec,
    attempt: i64,
    overseer_image: &str,
    shape: PodShape,
) -> Pod {
    let mode = spec.runtime.mode.unwrap_or(RuntimeMode::Tui);
    let mut command = vec![
        format!("{}/overseer", pods::BIN_DIR),
        "shim".into(),
        "--".into(),
    ];
    command.extend(runtimes::agent_command(&spec.runtime, mode));
    let template = spec.pod_template.clone().unwrap_or_default();
    let mut env_vars = shim_env(agent, spec, attempt, shape.overseer);
    let mut pod_labels = labels(agent);
    pod_labels.insert(labels::ATTEMPT.into(), attempt.to_string());
    let storage = storage(agent, spec, &template.volumes, &shape);
    env_vars.push(storage.env);
    env_vars.extend(
        spec.workspace
            .as_deref()
            .map(workspace::git_env)
            .unwrap_or_default(),
    );
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(&agent.name_any(), attempt)),
            namespace: agent.namespace(),
            labels: Some(pod_labels),
            owner_references: agent.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            service_account_name: Some(identity_name(&agent.name_any())),
            security_context: Some(pods::restricted_pod()),
            init_containers: Some(init_containers(agent, spec, overseer_image)),
            containers: vec![Container {
                name: CONTAINER.into(),
                image: spec.runtime.image.clone(),
                command: Some(command),
                working_dir: Some(WORKSPACE.into()),
                env: Some(env_vars),
                volume_mounts: Some(storage.mounts),
                security_context: Some(pods::restricted()),
                ..Default::default()
            }],
            volumes: Some(storage.volumes),
            ..Default::default()
        }),
        status: None,
    };
    template.dress(&mut pod);
    if let Some(policy) = shape.guards {
        crate::guard::pod::dress(&mut pod, policy, spec.runtime.effective_name());
    }
    if shape.read_only {
        pods::read_only_mounts(&mut pod);
    }
    pod
}

/// The operator's binary copied in, then the workspace's git source cloned (with the
/// agent's image, for its git) when there is one.
fn init_containers(agent: &Agent, spec: &AgentSpec, overseer_image: &str) -> Vec<Container> {
    let workspace = spec.workspace.clone().unwrap_or_default();
    let name = agent.name_any();
    let sync = workspace::sync_container(
        &workspace,
        spec.runtime.image.as_deref(),
        &workspace::default_branch(&name),
    );
    std::iter::once(pods::install_container(overseer_image))
        .chain(sync)
        .collect()
}

/// What the shim reads from its environment: who it runs for, how, and the prompt
/// (an overseer's starts with its standing instructions).
fn shim_env(agent: &Agent, spec: &AgentSpec, attempt: i64, overseer: bool) -> Vec<EnvVar> {
    let runtime_name = spec.runtime.effective_name();
    let mode = spec.runtime.mode.unwrap_or(RuntimeMode::Tui);
    let mut env_vars = vec![
        env(pod_env::AGENT, agent.name_any()),
        EnvVar {
            name: pod_env::NAMESPACE.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.namespace".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
        env(pod_env::ATTEMPT, attempt.to_string()),
        env(pod_env::RUNTIME, crate::api::wire_name(runtime_name)),
        env(pod_env::MODE, crate::api::wire_name(mode)),
        env(pod_env::INTERVAL, spec.loop_.interval.as_str()),
    ];
    let prompt = match overseer {
        true => Some(preamble::overseer_prompt(spec.prompt.as_deref())),
        false => spec.prompt.clone(),
    };
    if let Some(prompt) = prompt {
        env_vars.push(env(pod_env::PROMPT, prompt));
    }
    env_vars
}

/// The pod's volumes and the agent container's mounts, and where its instructions are.
struct Storage {
    volumes: Vec<Volume>,
    mounts: Vec<VolumeMount>,
    /// `OVERSEER_INSTRUCTIONS`.
    env: EnvVar,
}

/// The `overseer` binary, the workspace (the template's own volume of that name, or an
/// emptyDir) and the agent's instructions; the template's other volumes and mounts are
/// added when the pod is dressed.
fn storage(
    agent: &Agent,
    spec: &AgentSpec,
    template_volumes: &[Volume],
    shape: &PodShape,
) -> Storage {
    let workspace = spec.workspace.clone().unwrap_or_default();
    let mut mounts = pods::overseer_mounts().to_vec();
    mounts.extend(workspace::mounts(&workspace, false));
    let mut volumes = vec![pods::overseer_volume()];
    let templated = template_volumes.iter().any(|v| v.name == workspace::VOLUME);
    volumes.extend(
        workspace::volumes(&workspace, &agent.name_any())
            .into_iter()
            .filter(|v| !(templated && v.name == workspace::VOLUME)),
    );
    let file = shape.instructions_file;
    volumes.push(Volume {
        name: "instructions".into(),
        config_map: Some(ConfigMapVolumeSource {
            name: instructions_name(&agent.name_any()),
            ..Default::default()
        }),
        ..Default::default()
    });
    mounts.push(VolumeMount {
        name: "instructions".into(),
        mount_path: INSTRUCTIONS_DIR.into(),
        read_only: Some(true),
        ..Default::default()
    });
    Storage {
        volumes,
        mounts,
        env: env(pod_env::INSTRUCTIONS, format!("{INSTRUCTIONS_DIR}/{file}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::agent_pod::{PodPhase, PodSummary, own_pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    /// An Agent whose pod template tries to set the labels the operator owns.
    fn builder_with_foreign_labels() -> Agent {
        serde_saphyr::from_str(
            r#"
apiVersion: overseer.dev/v1alpha1
kind: Agent
metadata: {name: builder, namespace: team, uid: 0b5e6f0e-1111-2222-3333-444455556666}
spec:
  runtime: {name: claude, image: example.com/claude:1}
  podTemplate:
    labels: {overseer.dev/agent: someone-else, overseer.dev/attempt: "99", team: billing}
"#,
        )
        .unwrap()
    }

    #[test]
    fn only_the_operators_own_pods_count() {
        let agent = builder_with_foreign_labels();
        let ours = agent_pod(&agent, &agent.spec, 3, "overseer:1", PodShape::default());
        let labels = ours.metadata.labels.clone().unwrap();
        assert_eq!(
            labels["overseer.dev/agent"], "builder",
            "ours win over the template's"
        );
        assert_eq!(labels["overseer.dev/attempt"], "3");
        assert_eq!(labels["team"], "billing");
        assert_eq!(own_pod(&agent, &(&ours).into()).map(|p| p.attempt), Some(3));
        let mut foreign = ours.clone();
        foreign.metadata.owner_references = None;
        let mut other_owner = ours.clone();
        other_owner.metadata.owner_references.as_mut().unwrap()[0].uid = "another".into();
        let mut relabelled = ours.clone();
        relabelled
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(labels::AGENT.into(), "other".into());
        let mut deleting = ours.clone();
        deleting.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        for (what, pod) in [
            ("no owner", foreign),
            ("another owner", other_owner),
            ("another agent's label", relabelled),
            ("being deleted", deleting),
        ] {
            assert!(own_pod(&agent, &(&pod).into()).is_none(), "{what}");
        }
    }

    /// The pod's JSON as the API server sends it, read as the cache keeps it.
    fn as_cached(pod: &Pod) -> PodSummary {
        serde_json::from_value(serde_json::to_value(pod).unwrap()).unwrap()
    }

    #[test]
    fn the_cached_summary_is_judged_as_the_whole_pod() {
        let agent = builder_with_foreign_labels();
        let mut pod = agent_pod(&agent, &agent.spec, 2, "overseer:1", PodShape::default());
        pod.status = serde_json::from_value(serde_json::json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "agent", "image": "x", "imageID": "",
                "ready": true, "restartCount": 0}]
        }))
        .unwrap();
        let cached = as_cached(&pod);
        assert_eq!(cached, PodSummary::from(&pod));
        assert!(own_pod(&agent, &cached).is_some_and(|p| p.ready && p.attempt == 2));

        // A container that waits on its image keeps its reason, and only that.
        pod.metadata.creation_timestamp = Some(Time("2026-12-01T00:00:00Z".parse().unwrap()));
        pod.status = serde_json::from_value(serde_json::json!({
            "phase": "Pending",
            "containerStatuses": [{"name": "agent", "image": "x", "imageID": "",
                "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ImagePullBackOff",
                    "message": "Back-off pulling image \"x\""}}}]
        }))
        .unwrap();
        let cached = as_cached(&pod);
        assert_eq!(cached, PodSummary::from(&pod));
        let judged = own_pod(&agent, &cached).unwrap();
        assert!(!judged.ready && judged.phase == PodPhase::Pending);
        assert_eq!(
            judged.image_wait.map(|w| (w.reason, w.since.to_string())),
            Some(("ImagePullBackOff".into(), "2026-12-01T00:00:00Z".into()))
        );
        // A pod the kubelet has not reported on yet is Pending and not ready.
        pod.status = None;
        let judged = own_pod(&agent, &as_cached(&pod)).unwrap();
        assert!(!judged.ready && judged.phase == PodPhase::Pending && judged.image_wait.is_none());
    }

    #[test]
    fn a_cached_role_keeps_its_owner_and_a_digest_that_tells_its_rules_apart() {
        let agent = builder_with_foreign_labels();
        let wanted = role_rules(&agent, &[], &[]);
        let role = serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "overseer-agent-builder", "namespace": "team",
                "annotations": {"a": "b"},
                "ownerReferences": [{"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
                    "name": "builder", "uid": agent.uid().unwrap(), "controller": true}]},
            "rules": wanted,
        });
        let cached: RoleSummary = serde_json::from_value(role.clone()).unwrap();
        assert!(crate::api::controlled_by(&cached, &agent.uid().unwrap()));
        assert_eq!(cached.rules_digest, rules_digest(&wanted));

        let mut changed = role.clone();
        changed["rules"][0]["verbs"] = serde_json::json!(["get"]);
        let cached: RoleSummary = serde_json::from_value(changed).unwrap();
        assert_ne!(cached.rules_digest, rules_digest(&wanted));

        let mut none = role;
        none.as_object_mut().unwrap().remove("rules");
        let cached: RoleSummary = serde_json::from_value(none).unwrap();
        assert_eq!(cached.rules_digest, rules_digest(&[]));
        assert_ne!(cached.rules_digest, rules_digest(&wanted));
    }

    #[test]
    fn the_agent_pod_and_its_identity() {
        let mut agent: Agent = serde_saphyr::from_str(
            r#"
apiVersion: overseer.dev/v1alpha1
kind: Agent
metadata: {name: builder, namespace: team, uid: 0b5e6f0e-1111-2222-3333-444455556666}
spec:
  role: builder
  runtime: {name: claude, image: example.com/claude:1}
  prompt: Implement the parser.
  loop: {enabled: true, interval: 10s}
  podTemplate:
    env: [{name: GIT_AUTHOR_NAME, value: agent}]
    resources: {limits: {memory: 2Gi}}
"#,
        )
        .unwrap();
        agent.metadata.namespace = Some("team".into());
        let shape = PodShape {
            instructions_file: "CLAUDE.md",
            ..Default::default()
        };
        let pod = agent_pod(
            &agent,
            &agent.spec,
            3,
            "ghcr.io/overseer-dev/overseer:0.1.0",
            shape,
        );
        let (account, role, binding) = identity(&agent, &[], &[]);
        insta::assert_yaml_snapshot!("agent_pod", pod);
        insta::assert_yaml_snapshot!("agent_role", (account, role, binding));
    }

    #[test]
    fn a_read_only_member_mounts_everything_read_only_and_gets_its_instructions() {
        let scout: Agent = serde_saphyr::from_str(
            r#"
apiVersion: overseer.dev/v1alpha1
kind: Agent
metadata: {name: billing-scout, namespace: team}
spec:
  role: scout
  swarm: billing
  runtime: {name: claude, image: example.com/claude:1}
  podTemplate:
    volumes: [{name: workspace, persistentVolumeClaim: {claimName: billing-repo}}]
    volumeMounts: [{name: workspace, mountPath: /workspace}]
"#,
        )
        .unwrap();
        let shape = PodShape {
            overseer: false,
            read_only: true,
            instructions_file: "CLAUDE.md",
            guards: None,
        };
        let spec = agent_pod(&scout, &scout.spec, 1, "img", shape)
            .spec
            .unwrap();
        let container = &spec.containers[0];
        assert_eq!(container.working_dir.as_deref(), Some(WORKSPACE));
        insta::assert_yaml_snapshot!(
            "read_only_member_storage",
            (&spec.volumes, &container.volume_mounts)
        );
        let mounts = container.volume_mounts.as_ref().unwrap();
        assert!(
            mounts
                .iter()
                .filter(|m| m.name != "overseer")
                .all(|m| m.read_only == Some(true)),
            "only the shim's own directory stays writable"
        );
    }

    #[test]
    fn an_overseer_reads_its_namespace_and_writes_only_its_agents() {
        let lead: Agent = serde_saphyr::from_str(
            r#"
apiVersion: overseer.dev/v1alpha1
kind: Agent
metadata: {name: lead, namespace: team}
spec:
  role: reviewer
  runtime: {name: claude, image: example.com/claude:1}
  prompt: Keep the builders going.
"#,
        )
        .unwrap();
        assert!(!acts_as_overseer(&lead, &[]));
        assert_eq!(
            role_rules(&lead, &[], &[]).len(),
            1,
            "an agent alone: its own status"
        );
        let overseen = [
            Overseen {
                agent: "builder-b".into(),
                pod: Some(crate::kinds::agent_pod::pod_name("builder-b", 2)),
            },
            Overseen {
                agent: "builder-a".into(),
                pod: None,
            },
        ];
        assert!(acts_as_overseer(&lead, &overseen));
        insta::assert_yaml_snapshot!("overseer_role", role_rules(&lead, &overseen, &[]));
        let shape = PodShape {
            overseer: true,
            ..Default::default()
        };
        let pod = agent_pod(&lead, &lead.spec, 1, "img", shape);
        let prompt = agent_env(&pod, pod_env::PROMPT).unwrap();
        assert!(prompt.starts_with("# Overseer standing instructions (v2)"));
        assert!(prompt.ends_with("Keep the builders going.\n"));
    }

    /// The agent container's environment variable `name`.
    fn agent_env(pod: &Pod, name: &str) -> Option<String> {
        let env = pod.spec.as_ref()?.containers[0].env.as_ref()?;
        env.iter().find(|e| e.name == name)?.value.clone()
    }

    #[test]
    fn without_a_runtime_name_the_command_the_shim_and_the_instructions_agree_on_claude() {
        let agent: Agent = serde_saphyr::from_str(
            r#"
apiVersion: overseer.dev/v1alpha1
kind: Agent
metadata: {name: builder, namespace: team}
spec:
  runtime: {image: example.com/cli:1}
"#,
        )
        .unwrap();
        let pod = agent_pod(&agent, &agent.spec, 1, "img", PodShape::default());
        assert_eq!(
            agent_env(&pod, pod_env::RUNTIME).as_deref(),
            Some("claude"),
            "the shim's matchers"
        );
        let command = pod.spec.unwrap().containers[0].command.clone().unwrap();
        let cli = command.iter().skip_while(|a| *a != "--").nth(1);
        assert_eq!(cli.map(String::as_str), Some("claude"), "{command:?}");
        let runtime = crate::runtimes::lookup(agent.spec.runtime.effective_name());
        assert_eq!(runtime.instruction_file, "CLAUDE.md");
    }

    #[test]
    fn a_persistent_workspace_is_the_same_claim_for_every_attempt_and_cloned_first() {
        let scout: Agent = serde_saphyr::from_str(
            r#"
apiVersion: overseer.dev/v1alpha1
kind: Agent
metadata: {name: scout, namespace: team}
spec:
  role: scout
  runtime: {name: claude, image: example.com/claude:1}
  workspace:
    git: {url: "https://github.com/acme/widgets.git", credentialsSecretRef: {name: git}}
    storage: {persistent: {size: 5Gi}}
"#,
        )
        .unwrap();
        let shape = PodShape {
            read_only: true,
            ..Default::default()
        };
        for attempt in [1, 2] {
            let spec = agent_pod(&scout, &scout.spec, attempt, "img", shape)
                .spec
                .unwrap();
            let claim = spec
                .volumes
                .iter()
                .flatten()
                .find_map(|v| v.persistent_volume_claim.as_ref())
                .map(|c| c.claim_name.as_str());
            assert_eq!(claim, Some("scout-workspace"), "attempt {attempt}");
            let inits = spec.init_containers.unwrap();
            assert_eq!(
                inits.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
                ["install-overseer", "workspace"]
            );
            let clone_mount = inits[1]
                .volume_mounts
                .iter()
                .flatten()
                .find(|m| m.name == "workspace");
            assert_eq!(
                clone_mount.and_then(|m| m.read_only),
                None,
                "the clone writes"
            );
            let agent_mounts = spec.containers[0].volume_mounts.clone().unwrap();
            assert!(
                agent_mounts
                    .iter()
                    .filter(|m| m.name != "overseer")
                    .all(|m| m.read_only == Some(true)),
                "a scout reads: {agent_mounts:?}"
            );
        }
    }
}
