//! API pieces shared by the four kinds: the runtime choice, durations, secret
//! references, conditions and how status is written. Field names follow
//! `docs/DESIGN.md` (the contract).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams};
use kube::{KubeSchema, Resource};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// The API group of every overseer kind.
pub const GROUP: &str = "overseer.dev";
/// Field manager of everything the operator writes.
pub const CONTROLLER_MANAGER: &str = "overseer-controller";
/// Field manager of what an agent pod reports about itself.
pub const SHIM_MANAGER: &str = "overseer-shim";
/// Field manager of `status.exit` (`overseer loop done|block|release|add`).
pub const LOOP_MANAGER: &str = "overseer-loop";
/// Field manager of `status.watchRequests` (`overseer watch-pr`).
pub const WATCH_PR_MANAGER: &str = "overseer-watch-pr";

/// `object`'s controller owner reference (the API server allows at most one).
pub fn controller_of<K: Resource>(object: &K) -> Option<&OwnerReference> {
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// Whether `object`'s controller owner reference is the object of uid `owner_uid`.
pub fn controlled_by<K: Resource>(object: &K, owner_uid: &str) -> bool {
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == owner_uid)
}

/// Ok when `current` (the object named `name`, as read) is absent or controlled by
/// the object of uid `owner_uid`; else `Error::NameTaken`.
pub fn ours_or_absent<K: Resource<DynamicType = ()>>(
    current: Option<&K>,
    name: &str,
    owner_uid: &str,
) -> crate::Result<()> {
    match current {
        Some(current) if !controlled_by(current, owner_uid) => Err(crate::Error::NameTaken {
            kind: K::kind(&()).into_owned(),
            name: name.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Server-side applies `object` (named `name`, owned by the object of uid
/// `owner_uid`), but never onto an object of that name that `owner_uid` does not
/// control: that one is left as it is, and `Error::NameTaken` says so. Whoever could
/// create an object of that name first would otherwise have the operator take it
/// over, or change and later delete another owner's. (Between the read and the apply
/// an object made by someone else would still be taken; that window is one request.)
pub async fn apply_owned<K>(
    api: &Api<K>,
    name: &str,
    owner_uid: &str,
    object: &K,
) -> crate::Result<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    ours_or_absent(api.get_opt(name).await?.as_ref(), name, owner_uid)?;
    Ok(api
        .patch(
            name,
            &PatchParams::apply(CONTROLLER_MANAGER).force(),
            &Patch::Apply(object),
        )
        .await?)
}

/// Server-side applies `status` (the status fields this writer owns) to object `name`
/// under field `manager`, taking the fields over on conflict. Every status write of
/// every kind goes through here: each writer owns its fields by its manager.
pub async fn apply_status<K>(
    api: &Api<K>,
    name: &str,
    manager: &str,
    status: &impl Serialize,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    apply_status_onto(api, name, manager, None, status)
        .await
        .map(drop)
}

/// As `apply_status`, returning the object as written (its new resourceVersion).
pub async fn apply_status_returning<K>(
    api: &Api<K>,
    name: &str,
    manager: &str,
    status: &impl Serialize,
) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    apply_status_onto(api, name, manager, None, status).await
}

/// As `apply_status`, but only onto the version `resource_version` of the object: the
/// API server refuses the apply with 409 Conflict when the object changed since.
/// Returns the object as written.
pub async fn apply_status_at<K>(
    api: &Api<K>,
    name: &str,
    manager: &str,
    resource_version: &str,
    status: &impl Serialize,
) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    apply_status_onto(api, name, manager, Some(resource_version), status).await
}

async fn apply_status_onto<K>(
    api: &Api<K>,
    name: &str,
    manager: &str,
    resource_version: Option<&str>,
    status: &impl Serialize,
) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    if let Some(version) = resource_version {
        patch["metadata"] = serde_json::json!({"resourceVersion": version});
    }
    api.patch_status(
        name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(&patch),
    )
    .await
}

/// Go-style duration, as `time.ParseDuration` and CEL's `duration()` read it.
pub const DURATION_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$";
/// A duration, or `off` to disable the time-based rule it drives.
pub const DURATION_OR_OFF_PATTERN: &str = r"^(off|([0-9]+(\.[0-9]+)?(ms|s|m|h))+)$";

/// Schema of a duration string such as `15s`, `2m` or `1h30m`.
pub fn duration_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": DURATION_PATTERN,
        "maxLength": 32,
    })
}

/// Schema of a duration string that also accepts `off`.
pub fn duration_or_off_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": DURATION_OR_OFF_PATTERN,
        "maxLength": 32,
    })
}

/// Schema of a Kubernetes object name (DNS-1123 subdomain) referenced by a field.
pub fn object_name_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        "minLength": 1,
        "maxLength": 253,
    })
}

/// Schema of a role name: a DNS label, since it becomes a label value and part of names.
pub fn role_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        "minLength": 1,
        "maxLength": 63,
    })
}

/// The agent CLI a pod runs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeName {
    Claude,
    Codex,
    Pi,
    Copilot,
    Cursor,
    Custom,
}

/// How the agent CLI runs: an interactive TUI inside tmux, or headless runs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeMode {
    Tui,
    Headless,
}

/// The environment an agent's or a step's container gets from the operator, read there
/// by the shim, `overseer step` and the agent-side commands: one name each, shared by
/// both sides so that they cannot drift apart.
pub mod pod_env {
    pub const AGENT: &str = "OVERSEER_AGENT";
    pub const NAMESPACE: &str = "OVERSEER_NAMESPACE";
    pub const ATTEMPT: &str = "OVERSEER_ATTEMPT";
    pub const RUNTIME: &str = "OVERSEER_RUNTIME";
    pub const MODE: &str = "OVERSEER_MODE";
    pub const INTERVAL: &str = "OVERSEER_INTERVAL";
    pub const PROMPT: &str = "OVERSEER_PROMPT";
    pub const INSTRUCTIONS: &str = "OVERSEER_INSTRUCTIONS";
    pub const INPUT_SOCKET: &str = "OVERSEER_INPUT_SOCKET";
}

/// Which agent CLI to run and how. Used wherever a runtime is chosen; a partial
/// runtime fills in from the level above (step → goal defaults, agent → swarm role → swarm defaults).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    cel,
    validation = Rule::new("!has(self.name) || self.name != 'custom' || (has(self.command) && size(self.command) > 0)")
        .message("runtime.command is required when runtime.name is custom")
)]
pub struct RuntimeSpec {
    /// The agent CLI: claude (the default), codex, pi, copilot, cursor or custom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<RuntimeName>,
    /// tui (inside tmux) or headless (one run per prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RuntimeMode>,
    /// Container image holding the agent CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub image: Option<String>,
    /// Command that starts the agent CLI (required for custom); replaces the registry's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), inner(length(max = 4096)))]
    pub command: Option<Vec<String>>,
    /// Extra arguments appended to the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), inner(length(max = 4096)))]
    pub args: Option<Vec<String>>,
    /// The model, passed with the runtime's model flag (docs/runtimes.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._:/@\[\]-]*$")
    )]
    pub model: Option<String>,
    /// Run without asking a person: the runtime's autonomy flags (docs/runtimes.md) are
    /// added unless this is false. The pod is the sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unattended: Option<bool>,
}

impl RuntimeSpec {
    /// The runtime that runs when no level names one: the one place that decides it,
    /// so the command, the shim's matchers and the instruction file always agree.
    pub const DEFAULT_NAME: RuntimeName = RuntimeName::Claude;

    /// The runtime this spec runs: its `name`, else `DEFAULT_NAME`.
    pub fn effective_name(&self) -> RuntimeName {
        self.name.unwrap_or(Self::DEFAULT_NAME)
    }

    /// Fills every unset field from `fallback` (the level above).
    pub fn or(&self, fallback: &RuntimeSpec) -> RuntimeSpec {
        RuntimeSpec {
            name: self.name.or(fallback.name),
            mode: self.mode.or(fallback.mode),
            image: self.image.clone().or_else(|| fallback.image.clone()),
            command: self.command.clone().or_else(|| fallback.command.clone()),
            args: self.args.clone().or_else(|| fallback.args.clone()),
            model: self.model.clone().or_else(|| fallback.model.clone()),
            unattended: self.unattended.or(fallback.unattended),
        }
    }
}

/// A key in a Secret of the object's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// Name of the Secret.
    #[schemars(schema_with = "object_name_schema")]
    pub name: String,
    /// Key within the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// A webhook told about an object's outcomes (a Goal's completion and pauses, an
/// Agent's Done, Blocked and Released); a failed send is an Event only.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Notify {
    /// Secret key holding the webhook URL (kept out of the spec so it never leaks).
    pub url_secret_ref: SecretKeyRef,
}

/// CEL rule accepting a pull request URL of github.com or a GitHub Enterprise server:
/// `https://HOST[:PORT]/OWNER/REPO/pull/N`. The operator polls only a host it is
/// configured for (`--github-api-origin`), and only with the API of that same server.
pub const PR_URL_RULE: &str = r"self.matches('^https://[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:[0-9]{1,5})?/[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}/pull/[1-9][0-9]{0,9}$')";

/// Access to GitHub's GraphQL API.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitHubAccess {
    /// GraphQL endpoint (GitHub Enterprise: https://HOST/api/graphql).
    #[serde(default = "default_api_url", rename = "apiURL")]
    #[schemars(regex(pattern = r"^https?://[^\s]+$"), length(max = 500))]
    pub api_url: String,
    /// Secret key holding the API token.
    pub token_secret_ref: SecretKeyRef,
}

fn default_api_url() -> String {
    "https://api.github.com/graphql".into()
}

/// Label marking everything the operator creates.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "overseer");

/// The word a value of one of the API's string enums is written as (`claude`, `idle`,
/// `Running`): its serde form, for tables, env and status fields.
pub fn wire_name<T: Serialize>(value: T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(word)) => word,
        _ => String::new(),
    }
}

/// A name as a label value (at most 63 characters): long names keep a prefix and
/// gain a hash, so the value stays unique and valid.
pub fn label_value(name: &str) -> String {
    fit_name(name, 63)
}

/// `name` in at most `limit` bytes: as it is when it fits, else cut and ended with a
/// hash of the whole, so two long names that share a beginning stay apart. The cut
/// drops a trailing `-`, `.` or `_`, which neither names nor label values may end in
/// before the hash's `-`. Object names are ASCII (DNS-1123), so any byte is a
/// character boundary.
pub fn fit_name(name: &str, limit: usize) -> String {
    if name.len() <= limit {
        return name.to_string();
    }
    let hash = fnv1a(name.as_bytes()) as u32;
    let prefix = name[..limit - 9].trim_end_matches(['-', '.', '_']);
    format!("{prefix}-{hash:08x}")
}

/// FNV-1a: a small stable hash for names and fingerprints (not for security).
pub fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::fit_name;

    #[test]
    fn long_names_that_share_a_beginning_stay_apart() {
        assert_eq!(fit_name("builder", 63), "builder");
        let base = "a".repeat(240);
        let (one, two) = (format!("{base}-one"), format!("{base}-two"));
        let (fit_one, fit_two) = (fit_name(&one, 238), fit_name(&two, 238));
        assert_ne!(fit_one, fit_two);
        assert_eq!(fit_one.len(), 238);
        assert_eq!(fit_name(&one, 238), fit_one, "stable");
        // A cut that would end in '-' or '.' drops it, so the name stays valid.
        let dashed = format!("{}-{}", "b".repeat(53), "c".repeat(20));
        assert!(
            !fit_name(&dashed, 63).contains("--"),
            "{}",
            fit_name(&dashed, 63)
        );
    }
}
