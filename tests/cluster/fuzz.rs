//! Spec fuzzing: specs generated from the CRDs' own schemas (each example with one to
//! three fields set to boundary values: durations past any clock, integers one past
//! their bounds, maximum lengths and one more, unicode, flag-like prompts, reserved
//! label keys, unknown enum values) are sent to the real API server (dry run).
//!
//! - The API server answers every one with acceptance or a 422 naming a field, and the
//!   client-side CEL evaluation (kube's `Validator`) agrees: what it refuses the API
//!   server refuses, and a CEL message the API server gives the client gives too.
//! - Every accepted object deserialises into the operator's types (else it would be
//!   unreadable, see tests/no_crds.rs) and its pure planner runs without a panic.
//! - A sample of the accepted objects is created for real with an operator running:
//!   each ends with conditions that carry a reason, and the operator never exits.
//!
//! `make test` generates 250 specs per kind; OVERSEER_FUZZ_ALL=1 (`make fuzz`) 2,500.
//! The tally goes to target/test-logs/fuzz.txt.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::cel::Validator;
use overseer::agent::Agent;
use overseer::goal::Goal;
use overseer::prwatch::PRWatch;
use overseer::swarm::Swarm;
use serde_json::{Value, json};

use crate::support::cluster::{Operator, TestNamespace, kubectl, repo_root, setup, wait_in};

const KINDS: [&str; 4] = ["Agent", "Goal", "PRWatch", "Swarm"];
/// Accepted objects per kind created for real with an operator running.
const REAL_SAMPLE: usize = 6;

/// xorshift64*: the same specs in every run, so a failure can be reproduced.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Statuses an agent of the sample forges for itself.
const STATUSES_PER_AGENT: usize = 25;

/// The security properties of a pod the operator made: the restricted standard (no
/// root, no privilege escalation, no capabilities, the runtime's seccomp profile, no
/// node access), a controller owner of ours, and the namespace of that owner.
fn secure_pod(pod: &k8s_openapi::api::core::v1::Pod, namespace: &str) -> Result<(), String> {
    let spec = pod.spec.as_ref().ok_or("no spec")?;
    if pod.metadata.namespace.as_deref() != Some(namespace) {
        return Err(format!("in namespace {:?}", pod.metadata.namespace));
    }
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .ok_or("no controller owner")?;
    if !["Agent", "Goal"].contains(&owner.kind.as_str())
        || owner.api_version != "overseer.dev/v1alpha1"
    {
        return Err(format!("owned by {} {}", owner.api_version, owner.kind));
    }
    let pod_context = spec
        .security_context
        .as_ref()
        .ok_or("no pod securityContext")?;
    if pod_context.run_as_non_root != Some(true) || pod_context.run_as_user == Some(0) {
        return Err("may run as root".into());
    }
    if pod_context
        .seccomp_profile
        .as_ref()
        .map(|p| p.type_.as_str())
        != Some("RuntimeDefault")
    {
        return Err("no RuntimeDefault seccomp profile".into());
    }
    if spec.host_network == Some(true) || spec.host_pid == Some(true) || spec.host_ipc == Some(true)
    {
        return Err("shares a host namespace".into());
    }
    if spec.volumes.iter().flatten().any(|v| v.host_path.is_some()) {
        return Err("mounts a host path".into());
    }
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    for container in containers {
        let context = container
            .security_context
            .as_ref()
            .ok_or("a container without securityContext")?;
        let drops_all = context
            .capabilities
            .as_ref()
            .and_then(|c| c.drop.as_ref())
            .is_some_and(|d| d.iter().any(|c| c == "ALL"));
        let adds = context
            .capabilities
            .as_ref()
            .and_then(|c| c.add.as_ref())
            .is_some_and(|a| !a.is_empty());
        if context.allow_privilege_escalation != Some(false)
            || context.privileged == Some(true)
            || !drops_all
            || adds
            || context.run_as_user == Some(0)
        {
            return Err(format!(
                "container {} is not restricted: {context:?}",
                container.name
            ));
        }
    }
    Ok(())
}

fn specs_per_kind() -> usize {
    if std::env::var_os("OVERSEER_FUZZ_ALL").is_some() {
        2500
    } else {
        250
    }
}

fn schema_of(kind: &str) -> Value {
    let crd = overseer::crd::all()
        .into_iter()
        .find(|crd| crd.spec.names.kind == kind)
        .unwrap();
    let schema = crd.spec.versions[0].schema.clone().unwrap();
    serde_json::to_value(schema.open_api_v3_schema.unwrap()).unwrap()
}

/// The first example object of each kind (examples/*.yaml).
fn examples() -> BTreeMap<String, Value> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(repo_root().join("examples")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for object in serde_saphyr::from_multiple::<Value>(&text).unwrap() {
            let kind = object["kind"].as_str().unwrap().to_string();
            found.entry(kind).or_insert(object);
        }
    }
    found
}

/// Every field under `spec` with its schema: the JSON path and the schema node (array
/// items are reached through their array, which is generated whole).
fn fields(schema: &Value) -> Vec<(Vec<String>, Value)> {
    fields_under(schema, "spec")
}

/// As `fields`, under `root` (`spec`, or `status`: what an agent writes of its own).
fn fields_under(schema: &Value, root: &str) -> Vec<(Vec<String>, Value)> {
    fn walk(node: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
        out.push((path.clone(), node.clone()));
        if let Some(properties) = node["properties"].as_object() {
            for (name, child) in properties {
                path.push(name.clone());
                walk(child, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &schema["properties"][root],
        &mut vec![root.to_string()],
        &mut out,
    );
    out.retain(|(path, _)| path.len() > 1);
    out
}

const DURATIONS: [&str; 12] = [
    "0s",
    "1ms",
    "500ms",
    "1s",
    "10s",
    "90m",
    "1h30m",
    "99999999999999999999h",
    "99999999999h",
    "-1s",
    "1d",
    "off",
];
const STRINGS: [&str; 12] = [
    "",
    "a",
    "builder",
    "-rf /",
    "--help",
    "ünïcødé ✓ 漢字",
    "overseer.dev/agent",
    "app.kubernetes.io/managed-by",
    "https://github.com/acme/billing/pull/7",
    "http://localhost:6443/",
    "2026-12-02T00:00:00.1234567891Z",
    "line\nbreak",
];

/// A boundary value for a field of `schema` (depth bounds nested objects).
fn boundary(schema: &Value, rng: &mut Rng, depth: usize) -> Value {
    if let Some(options) = schema["enum"].as_array() {
        return match rng.below(4) {
            0 => json!("Bogus-Value"),
            _ => rng.pick(options).clone(),
        };
    }
    if schema["x-kubernetes-int-or-string"] == true {
        return rng
            .pick(&[json!(0), json!(1), json!("1"), json!("25%"), json!(-1)])
            .clone();
    }
    match schema["type"].as_str() {
        Some("string") => {
            let max = schema["maxLength"].as_u64().unwrap_or(300) as usize;
            match rng.below(5) {
                0 => json!(rng.pick(&DURATIONS)),
                1 => json!("x".repeat(max)),
                2 => json!("y".repeat(max + 1)),
                3 => json!("é".repeat(max.min(4096))),
                _ => json!(rng.pick(&STRINGS)),
            }
        }
        Some("integer") | Some("number") => {
            let min = schema["minimum"].as_i64().unwrap_or(0);
            let max = schema["maximum"].as_i64().unwrap_or(i64::from(i32::MAX));
            let candidates = [
                0,
                1,
                -1,
                min,
                max,
                min.saturating_sub(1),
                max.saturating_add(1),
                i64::from(i32::MAX),
                i64::MAX,
            ];
            json!(rng.pick(&candidates))
        }
        Some("boolean") => json!(rng.below(2) == 0),
        Some("array") => {
            let max = schema["maxItems"].as_u64().unwrap_or(3).min(60) as usize;
            let count = *rng.pick(&[0, 1, 2, max, max + 1]);
            let items = &schema["items"];
            Value::Array(
                (0..count)
                    .map(|_| boundary(items, rng, depth + 1))
                    .collect(),
            )
        }
        Some("object") if schema["properties"].is_object() && depth < 3 => {
            let mut object = serde_json::Map::new();
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for (name, child) in schema["properties"].as_object().unwrap() {
                if required.contains(&name.as_str()) || rng.below(3) == 0 {
                    object.insert(name.clone(), boundary(child, rng, depth + 1));
                }
            }
            Value::Object(object)
        }
        Some("object") if schema["additionalProperties"].is_object() => json!({
            "overseer.dev/agent": "someone-else",
            "a/b/c": "",
            rng.pick(&STRINGS).to_string(): "v",
        }),
        _ => json!({"anything": [1, "two"]}),
    }
}

/// `base` with one to three of its spec fields set to boundary values.
fn mutated(base: &Value, fields: &[(Vec<String>, Value)], rng: &mut Rng, i: usize) -> Value {
    let mut object = base.clone();
    object["metadata"] = json!({"name": format!("f{i}")});
    for _ in 0..=rng.below(3) {
        let (path, schema) = rng.pick(fields);
        let value = boundary(schema, rng, path.len());
        let mut at = &mut object;
        for key in &path[..path.len() - 1] {
            if !at[key.as_str()].is_object() {
                at[key.as_str()] = json!({});
            }
            at = &mut at[key.as_str()];
        }
        at[path.last().unwrap().as_str()] = value;
    }
    object
}

/// What the client-side CEL evaluation refuses, as messages.
fn cel_refusals(schema: &Value, object: &Value) -> Vec<String> {
    match Validator::new().validate(schema, object, None) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.iter().map(|e| e.message.clone()).collect(),
    }
}

/// Every CEL rule message of a schema.
fn cel_messages(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if let Some(rules) = map
                .get("x-kubernetes-validations")
                .and_then(Value::as_array)
            {
                out.extend(
                    rules
                        .iter()
                        .filter_map(|r| r["message"].as_str().map(String::from)),
                );
            }
            map.values().for_each(|v| cel_messages(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| cel_messages(v, out)),
        _ => {}
    }
}

/// The accepted (defaulted) object read as the operator reads it, and its pure
/// planner run once; Err says what failed.
fn operator_reads_and_plans(kind: &str, stored: &Value) -> Result<(), String> {
    let now = jiff::Timestamp::now();
    let planned = std::panic::catch_unwind(|| -> Result<(), String> {
        match kind {
            "Agent" => {
                let agent: Agent =
                    serde_json::from_value(stored.clone()).map_err(|e| e.to_string())?;
                let plan = overseer::agent::decide::plan(&overseer::agent::decide::Input {
                    name: "f",
                    generation: Some(1),
                    spec: &agent.spec,
                    status: None,
                    pods: &[],
                    overseer: overseer::agent::candidate::OverseerState::Offline,
                    pod_retention: Some(std::time::Duration::from_secs(3600)),
                    now,
                });
                reasons_given(&plan.status.conditions)
            }
            "Goal" => {
                let goal: Goal =
                    serde_json::from_value(stored.clone()).map_err(|e| e.to_string())?;
                let plan = overseer::goal::plan::plan(&overseer::goal::plan::Input {
                    name: "f",
                    generation: Some(1),
                    resume: None,
                    spec: &goal.spec,
                    status: None,
                    pods: &[],
                    goals: &[],
                    swarm: None,
                    notified: None,
                    pod_retention: Some(std::time::Duration::from_secs(3600)),
                    now,
                });
                reasons_given(&plan.status.conditions)
            }
            "PRWatch" => {
                let watch: PRWatch =
                    serde_json::from_value(stored.clone()).map_err(|e| e.to_string())?;
                let error = overseer::prwatch::github::PollError::Failed("fuzz".into());
                let plan = overseer::prwatch::decide::plan(&overseer::prwatch::decide::Input {
                    name: "f",
                    generation: Some(1),
                    spec: &watch.spec,
                    status: None,
                    poll: overseer::prwatch::decide::Poll::Error(&error),
                    agent_ready: true,
                    now,
                });
                reasons_given(&plan.status.conditions)
            }
            "Swarm" => {
                let swarm: Swarm =
                    serde_json::from_value(stored.clone()).map_err(|e| e.to_string())?;
                let _ = overseer::swarm::compose::problems(&swarm);
                for desired in overseer::swarm::compose::desired_agents(&swarm) {
                    let _ = desired.apply_body();
                }
                Ok(())
            }
            other => Err(format!("no planner for {other}")),
        }
    });
    planned.map_err(|_| "the planner panicked".to_string())?
}

/// Conditions, where a plan sets any, each with a CamelCase reason.
fn reasons_given(conditions: &[Condition]) -> Result<(), String> {
    match conditions.iter().find(|c| !camel_case(&c.reason)) {
        Some(bad) => Err(format!(
            "condition {} has reason {:?}",
            bad.type_, bad.reason
        )),
        None => Ok(()),
    }
}

fn camel_case(reason: &str) -> bool {
    reason.starts_with(|c: char| c.is_ascii_uppercase())
        && reason.chars().all(|c| c.is_ascii_alphanumeric())
}

fn api_for(ns: &TestNamespace, kind: &str) -> Api<DynamicObject> {
    let gvk = kube::core::GroupVersionKind::gvk("overseer.dev", "v1alpha1", kind);
    let resource = kube::core::ApiResource::from_gvk(&gvk);
    Api::namespaced_with(ns.client.clone(), &ns.name, &resource)
}

#[derive(Default)]
struct Tally {
    accepted: usize,
    refused: usize,
    cel_refused: usize,
    /// Refused by both, the client with an evaluation error for the server's message.
    worded_apart: usize,
    /// Refused by the API server only: a duration past Go's range.
    past_go: usize,
}

/// Whether any string of the object is a whole-hours duration past Go's time.Duration.
fn past_go_durations(value: &Value) -> bool {
    const GO_MAX_HOURS: f64 = 2_562_047.0;
    match value {
        Value::String(text) => text
            .strip_suffix('h')
            .and_then(|hours| hours.parse::<f64>().ok())
            .is_some_and(|hours| hours > GO_MAX_HOURS),
        Value::Array(items) => items.iter().any(past_go_durations),
        Value::Object(map) => map.values().any(past_go_durations),
        _ => false,
    }
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn generated_specs_are_refused_with_a_field_or_served_without_a_panic() {
    let ns = setup("fuzz").await;
    let examples = examples();
    let per_kind = specs_per_kind();
    let mut rng = Rng(0x5EED_0F0E_25EE);
    let mut summary = String::new();
    let mut problems = Vec::new();
    let mut keep: Vec<(String, Value)> = Vec::new();
    for kind in KINDS {
        let schema = schema_of(kind);
        let fields = fields(&schema);
        let mut cel_rules = Vec::new();
        cel_messages(&schema, &mut cel_rules);
        let api = api_for(&ns, kind);
        let dry_run = PostParams {
            dry_run: true,
            ..Default::default()
        };
        let mut tally = Tally::default();
        let mut kept = 0;
        for i in 0..per_kind {
            let object = mutated(&examples[kind], &fields, &mut rng, i);
            let client_refusals = cel_refusals(&schema, &object);
            tally.cel_refused += usize::from(!client_refusals.is_empty());
            let typed: DynamicObject = match serde_json::from_value(object.clone()) {
                Ok(typed) => typed,
                Err(error) => panic!("generated object is not an object: {error}"),
            };
            match api.create(&dry_run, &typed).await {
                Ok(stored) => {
                    tally.accepted += 1;
                    let stored = serde_json::to_value(&stored).unwrap();
                    if !client_refusals.is_empty() {
                        problems.push(format!(
                            "{kind} f{i}: accepted by the API server, refused by client CEL {client_refusals:?}: {object}"
                        ));
                    }
                    if let Err(why) = operator_reads_and_plans(kind, &stored) {
                        problems.push(format!("{kind} f{i}: accepted but {why}: {object}"));
                    }
                    if kept < REAL_SAMPLE && rng.below(4) == 0 {
                        keep.push((kind.to_string(), object.clone()));
                        kept += 1;
                    }
                }
                Err(kube::Error::Api(status)) if status.code == 422 => {
                    tally.refused += 1;
                    if !status.message.contains("spec") {
                        problems.push(format!(
                            "{kind} f{i}: refused without naming a field: {}",
                            status.message
                        ));
                    }
                    let server_cel: Vec<&String> = cel_rules
                        .iter()
                        .filter(|m| status.message.contains(m.as_str()))
                        .collect();
                    // kube's evaluator words a rule it cannot evaluate (a duration
                    // that does not parse) as an evaluation error, where the API
                    // server gives the rule's message: both refuse.
                    let evaluation_error = client_refusals
                        .iter()
                        .any(|c| c.starts_with("rule evaluation error"));
                    tally.worded_apart += usize::from(evaluation_error && !server_cel.is_empty());
                    // Known apart: past Go's time.Duration (about 292 years) the API
                    // server cannot evaluate duration() and refuses; kube's evaluator
                    // reads it. Refused where it counts, so counted, not failed.
                    let past_go = client_refusals.is_empty() && past_go_durations(&object);
                    tally.past_go += usize::from(past_go && !server_cel.is_empty());
                    let agrees = |m: &&String| {
                        evaluation_error || past_go || client_refusals.iter().any(|c| c == *m)
                    };
                    if let Some(missed) = server_cel.iter().find(|m| !agrees(m)) {
                        problems.push(format!(
                            "{kind} f{i}: the API server's CEL says {missed:?}, client CEL {client_refusals:?}: {object}"
                        ));
                    }
                }
                Err(error) => problems.push(format!("{kind} f{i}: answered {error}: {object}")),
            }
        }
        summary.push_str(&format!(
            "{kind}: {per_kind} specs, {} accepted, {} refused (422 naming a field), {} refused by client CEL ({} of them worded as an evaluation error), {} refused by the API server's CEL only (a duration past Go's range), {kept} created for real\n",
            tally.accepted, tally.refused, tally.cel_refused, tally.worded_apart, tally.past_go
        ));
        assert!(
            tally.accepted > 0 && tally.refused > 0,
            "{kind}: the generator must reach both sides: {summary}"
        );
    }
    assert!(
        problems.is_empty(),
        "{} problems, the first ten:\n{}",
        problems.len(),
        problems[..problems.len().min(10)].join("\n")
    );

    // A sample for real: each gets conditions with reasons, and the operator lives.
    // The namespace enforces the restricted Pod Security Standard, so the API server
    // itself would refuse a pod of ours that is not.
    kubectl(
        &[
            "label",
            "namespace",
            &ns.name,
            "pod-security.kubernetes.io/enforce=restricted",
        ],
        "",
    );
    let mut operator = Operator::start(&["--namespace", &ns.name]);
    for (kind, object) in &keep {
        let typed: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        api_for(&ns, kind)
            .create(&PostParams::default(), &typed)
            .await
            .unwrap_or_else(|e| panic!("{kind} accepted on the dry run, refused now: {e}"));
    }
    for (kind, object) in &keep {
        let name = object["metadata"]["name"].as_str().unwrap();
        let api = api_for(&ns, kind);
        wait_in(
            &ns,
            &format!("{kind} {name} with conditions"),
            Duration::from_secs(60),
            || async {
                let stored = api.get(name).await.ok()?;
                let conditions: Vec<Condition> =
                    serde_json::from_value(stored.data["status"]["conditions"].clone()).ok()?;
                (!conditions.is_empty()).then_some(conditions)
            },
        )
        .await
        .iter()
        .for_each(|c| assert!(camel_case(&c.reason), "{kind} {name}: {c:?}"));
    }
    // What an agent writes of its own status, generated as its specs are: the
    // operator reads, plans and lives on, whatever the agent claims.
    let agent_schema = schema_of("Agent");
    let status_fields = fields_under(&agent_schema, "status");
    let agents = api_for(&ns, "Agent");
    let sample_agents: Vec<&str> = keep
        .iter()
        .filter(|(kind, _)| kind == "Agent")
        .filter_map(|(_, object)| object["metadata"]["name"].as_str())
        .collect();
    let (mut statuses, mut statuses_accepted) = (0, 0);
    for name in &sample_agents {
        for _ in 0..STATUSES_PER_AGENT {
            let forged = mutated(&json!({}), &status_fields, &mut rng, 0);
            let patch = json!({"status": forged["status"]});
            statuses += 1;
            let sent = agents
                .patch_status(
                    name,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await;
            match sent {
                Ok(stored) => {
                    statuses_accepted += 1;
                    let stored = serde_json::to_value(&stored).unwrap();
                    if let Err(why) = operator_reads_and_plans("Agent", &stored) {
                        problems.push(format!("Agent {name}: status accepted but {why}: {patch}"));
                    }
                }
                Err(kube::Error::Api(status)) if status.code == 422 => {
                    if !status.message.contains("status") {
                        problems.push(format!(
                            "Agent {name}: status refused without naming a field: {}",
                            status.message
                        ));
                    }
                }
                Err(error) => problems.push(format!("Agent {name}: status answered {error}")),
            }
        }
    }
    summary.push_str(&format!(
        "Agent status: {statuses} forged statuses on {} agents, {statuses_accepted} accepted\n",
        sample_agents.len()
    ));
    assert!(
        statuses_accepted > 0 && statuses_accepted < statuses,
        "the status generator must reach both sides: {summary}"
    );
    // Let the operator act on what was forged, then look at every pod it made.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        operator.child.try_wait().unwrap().is_none(),
        "the operator exited:\n{}",
        std::fs::read_to_string(&operator.log_path).unwrap_or_default()
    );
    let pods: Api<k8s_openapi::api::core::v1::Pod> = ns.api();
    let made = pods.list(&Default::default()).await.unwrap().items;
    for pod in &made {
        if let Err(why) = secure_pod(pod, &ns.name) {
            problems.push(format!(
                "pod {}: {why}",
                pod.metadata.name.clone().unwrap_or_default()
            ));
        }
    }
    summary.push_str(&format!(
        "pods: {} made, each restricted, owned by its Agent or Goal, in its namespace\n",
        made.len()
    ));
    assert!(!made.is_empty(), "the sample made no pod: {summary}");
    assert!(
        problems.is_empty(),
        "{} problems, the first ten:\n{}",
        problems.len(),
        problems[..problems.len().min(10)].join("\n")
    );
    println!("{summary}");
    let log = repo_root().join("target/test-logs/fuzz.txt");
    std::fs::write(log, summary).unwrap();
}
