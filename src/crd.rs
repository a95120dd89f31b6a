//! The four CustomResourceDefinitions, as `overseer crd` prints them and `crds/` holds them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{Result, agent::Agent, goal::Goal, prwatch::PRWatch, swarm::Swarm};

/// All CRDs of overseer, in a stable order.
pub fn all() -> Vec<CustomResourceDefinition> {
    vec![Agent::crd(), Goal::crd(), PRWatch::crd(), Swarm::crd()]
        .into_iter()
        .map(|crd| rewrite_schema(crd, bound_timestamps))
        .map(|crd| rewrite_schema(crd, brief_embedded_types))
        .map(|crd| rewrite_schema(crd, bound_mount_paths))
        .map(|crd| rewrite_schema(crd, unobserved_until_written))
        .collect()
}

/// An object the operator has not written a status for yet reads (the API server
/// defaults it on every read) as `status.observedGeneration: 0`: kstatus, which reads
/// an object without conditions as Current, then sees a generation not yet observed
/// and waits (InProgress), so `helm install --wait` (Helm 4) or a Flux `wait` never
/// passes on a Goal the operator has not even looked at.
fn unobserved_until_written(schema: &mut serde_json::Value) {
    if let Some(status) = schema.pointer_mut("/properties/status") {
        status["default"] = serde_json::json!({"observedGeneration": 0});
    }
}

/// RFC 3339 as the API server's `date-time` format takes it, but with at most nine
/// fractional digits: the API server accepts more, which no Rust time type reads, and
/// one such timestamp (written by anyone who may patch a status) would make every
/// list and watch of the kind fail to deserialise, stalling the controller for all.
pub const TIMESTAMP_PATTERN: &str = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$";

fn bound_timestamps(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            if map.get("format").and_then(|f| f.as_str()) == Some("date-time")
                && !map.contains_key("pattern")
            {
                map.insert("pattern".into(), TIMESTAMP_PATTERN.into());
            }
            map.values_mut().for_each(bound_timestamps);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(bound_timestamps),
        _ => {}
    }
}

/// The longest `mountPath` of a pod template's mounts. Kubernetes sets none; the CEL
/// rule that keeps mounts off `/overseer` needs one, or the API server estimates its
/// cost over a string of any length and refuses the CRD.
pub const MOUNT_PATH_MAX: u64 = 512;

fn bound_mount_paths(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(path) = map
                .get_mut("properties")
                .and_then(|p| p.get_mut("volumeMounts"))
                .and_then(|m| m.get_mut("items"))
                .and_then(|i| i.get_mut("properties"))
                .and_then(|p| p.get_mut("mountPath"))
                .and_then(|p| p.as_object_mut())
            {
                path.insert("maxLength".into(), MOUNT_PATH_MAX.into());
            }
            map.values_mut().for_each(bound_mount_paths);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(bound_mount_paths),
        _ => {}
    }
}

/// Kubernetes' own types (volumes, env, affinity, ...) without their upstream
/// descriptions, which `kubectl explain pod.spec` already gives: with them, the pod
/// template's six places in the Swarm and Goal schemas made CRDs of several hundred
/// KiB, past what `kubectl apply` can keep in its last-applied annotation (256 KiB).
/// The field's own description (ours) stays.
fn brief_embedded_types(schema: &mut serde_json::Value) {
    fn strip(schema: &mut serde_json::Value) {
        match schema {
            serde_json::Value::Object(map) => {
                map.remove("description");
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(properties)) = map.get_mut("properties") {
                for (name, field) in properties.iter_mut() {
                    if !EMBEDDED_KUBERNETES_FIELDS.contains(&name.as_str()) {
                        continue;
                    }
                    let own = field.get("description").cloned();
                    strip(field);
                    if let (Some(own), Some(field)) = (own, field.as_object_mut()) {
                        field.insert("description".into(), own);
                    }
                }
            }
            map.values_mut().for_each(brief_embedded_types);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(brief_embedded_types),
        _ => {}
    }
}

fn rewrite_schema(
    mut crd: CustomResourceDefinition,
    rewrite: fn(&mut serde_json::Value),
) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        let Some(schema) = version.schema.as_mut() else {
            continue;
        };
        let mut value =
            serde_json::to_value(&schema.open_api_v3_schema).expect("a schema serialises to JSON");
        rewrite(&mut value);
        schema.open_api_v3_schema =
            serde_json::from_value(value).expect("a rewritten schema is still a schema");
    }
    crd
}

/// One CRD as a YAML document.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String> {
    Ok(crate::yaml::to_string(crd)?)
}

/// All CRDs as one multi-document YAML stream.
pub fn all_yaml() -> Result<String> {
    let docs = all().iter().map(to_yaml).collect::<Result<Vec<_>>>()?;
    Ok(docs.iter().map(|d| format!("---\n{d}")).collect())
}

/// A Markdown reference of every field of every kind, generated from the schemas.
pub fn reference_markdown() -> Result<String> {
    let mut out = String::from(
        "# API reference (overseer.dev/v1alpha1)\n\n\
         Generated from the CRD schemas by `overseer crd --format reference`; \
         a test fails when this file drifts from the code.\n",
    );
    for crd in all() {
        let names = &crd.spec.names;
        out.push_str(&format!(
            "\n## {} (`{}`, short name `{}`)\n\n| field | type | default | description |\n|---|---|---|---|\n",
            names.kind,
            crd.metadata.name.as_deref().unwrap_or_default(),
            names.short_names.as_ref().and_then(|s| s.first()).map(String::as_str).unwrap_or("-"),
        ));
        let schema = serde_json::to_value(
            crd.spec.versions[0]
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref()),
        )?;
        for part in ["spec", "status"] {
            describe_fields(&schema["properties"][part], part, &mut out);
        }
    }
    Ok(out)
}

/// Fields holding Kubernetes' own types, documented upstream: the reference stops there.
const EMBEDDED_KUBERNETES_FIELDS: &[&str] = &[
    "env",
    "envFrom",
    "resources",
    "volumes",
    "volumeMounts",
    "tolerations",
    "affinity",
    "imagePullSecrets",
    "conditions",
];

fn describe_fields(schema: &serde_json::Value, path: &str, out: &mut String) {
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return;
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    for (name, field) in properties {
        let field_path = format!("{path}.{name}");
        let mut kind = field["type"].as_str().unwrap_or("object").to_string();
        if let Some(values) = field["enum"].as_array() {
            let values: Vec<String> = values
                .iter()
                .filter_map(|v| v.as_str())
                .map(|v| format!("`{v}`"))
                .collect();
            kind = values.join(" \\| ");
        } else if let Some(pattern) = field["pattern"].as_str() {
            kind = format!("{kind} matching `{}`", pattern.replace('|', "\\|"));
        }
        for (low, high, unit) in [
            ("minimum", "maximum", ""),
            ("minItems", "maxItems", " items"),
        ] {
            if field.get(low).is_some() || field.get(high).is_some() {
                let bound = |key: &str| {
                    field[key]
                        .as_f64()
                        .map(|v| v.to_string())
                        .unwrap_or_default()
                };
                kind.push_str(&format!(", {}..{}{unit}", bound(low), bound(high)));
            }
        }
        if let Some(rules) = field["x-kubernetes-validations"].as_array() {
            for rule in rules.iter().filter_map(|r| r["message"].as_str()) {
                kind.push_str(&format!(", rule: {rule}"));
            }
        }
        if required.contains(&name.as_str()) {
            kind.push_str(", required");
        }
        let default = match &field["default"] {
            serde_json::Value::Null => String::new(),
            value if value.is_object() => "see fields".into(),
            value => format!("`{value}`"),
        };
        let description = field["description"]
            .as_str()
            .unwrap_or("")
            .replace('\n', " ");
        out.push_str(&format!(
            "| `{field_path}` | {kind} | {default} | {description} |\n"
        ));
        if !EMBEDDED_KUBERNETES_FIELDS.contains(&name.as_str()) {
            describe_fields(field, &field_path, out);
            describe_fields(&field["items"], &format!("{field_path}[]"), out);
        }
    }
}
