//! What a person can do from the console, each through the same path as its CLI
//! command and with the person's own rights: send a message (`overseer send`), end or
//! switch an agent's loop (`overseer loop release|add|remove`), pause or resume a goal
//! (`overseer goal pause|resume`), and create a Swarm, Goal or Agent from YAML after
//! the API server's dry run. A refusal is the API server's own message; a field it
//! refuses is named.

use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::commands::{agent, goal};

/// One action, with the key that makes it happen once however often it is posted.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct Action {
    pub key: String,
    #[serde(flatten)]
    pub what: What,
}

#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "action", rename_all = "camelCase", deny_unknown_fields)]
pub enum What {
    Send {
        namespace: String,
        name: String,
        text: String,
    },
    Release {
        namespace: String,
        name: String,
        reason: String,
    },
    Loop {
        namespace: String,
        name: String,
        enabled: bool,
    },
    Pause {
        namespace: String,
        name: String,
    },
    Resume {
        namespace: String,
        name: String,
    },
    /// Create the object `yaml` describes; with `dry_run`, only the API server's check.
    #[serde(rename_all = "camelCase")]
    Apply {
        yaml: String,
        dry_run: bool,
    },
}

impl Action {
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// Who a message from the console is from, as for `overseer send`.
const SENDER: &str = "user";
/// The kinds the console creates.
const KINDS: [&str; 3] = ["Swarm", "Goal", "Agent"];

/// Does `action`; its answer (`message`, and what else the page shows), or why not
/// (`error`, and the fields the API server named in `causes`).
pub async fn run(
    client: &Client,
    default_namespace: &str,
    action: &Action,
) -> Result<Value, Value> {
    let said = |done: crate::Result<String>| {
        done.map(|message| json!({"message": message}))
            .map_err(|error| json!({"error": error.to_string(), "causes": []}))
    };
    match &action.what {
        What::Send {
            namespace,
            name,
            text,
        } => {
            let api = Api::namespaced(client.clone(), namespace);
            agent::queue(&api, name, SENDER, text)
                .await
                .map(|seq| json!({"message": format!("message #{seq} queued for {name}"), "seq": seq}))
                .map_err(|error| json!({"error": error.to_string(), "causes": []}))
        }
        What::Release {
            namespace,
            name,
            reason,
        } => said(agent::release(Some(namespace), name, reason).await),
        What::Loop {
            namespace,
            name,
            enabled,
        } => said(agent::set_loop(Some(namespace), name, *enabled).await),
        What::Pause { namespace, name } => said(goal::pause(name, Some(namespace)).await),
        What::Resume { namespace, name } => said(goal::resume(name, Some(namespace)).await),
        What::Apply { yaml, dry_run } => apply(client, default_namespace, yaml, *dry_run).await,
    }
}

/// The object of `yaml`, checked before anything is sent: one of overseer's kinds,
/// with a name, and in `default_namespace` when it names none.
pub fn parse(yaml: &str, default_namespace: &str) -> Result<(String, String, Value), Value> {
    let refuse = |field: &str, message: String| {
        Err(json!({"error": message.clone(), "causes": [{"field": field, "message": message}]}))
    };
    let mut object: Value = match serde_saphyr::from_str(yaml) {
        Ok(object) => object,
        Err(error) => return refuse("yaml", format!("the YAML does not parse: {error}")),
    };
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let wanted = format!("{}/v1alpha1", crate::api::GROUP);
    if api_version != wanted {
        return refuse("apiVersion", format!("apiVersion must be {wanted}"));
    }
    let kind = object["kind"].as_str().unwrap_or_default().to_string();
    if !KINDS.contains(&kind.as_str()) {
        return refuse("kind", format!("kind must be one of {}", KINDS.join(", ")));
    }
    if object["metadata"]["name"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        return refuse("metadata.name", "metadata.name is required".into());
    }
    let namespace = match object["metadata"]["namespace"].as_str() {
        Some(ns) => ns.to_string(),
        None => {
            object["metadata"]["namespace"] = json!(default_namespace);
            default_namespace.to_string()
        }
    };
    Ok((kind, namespace, object))
}

async fn apply(
    client: &Client,
    default_namespace: &str,
    yaml: &str,
    dry_run: bool,
) -> Result<Value, Value> {
    let (kind, namespace, object) = parse(yaml, default_namespace)?;
    let resource =
        ApiResource::from_gvk(&GroupVersionKind::gvk(crate::api::GROUP, "v1alpha1", &kind));
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
    let object: DynamicObject = serde_json::from_value(object)
        .map_err(|error| json!({"error": format!("not an object: {error}"), "causes": []}))?;
    let name = object.metadata.name.clone().unwrap_or_default();
    let check = PostParams {
        dry_run: true,
        ..Default::default()
    };
    api.create(&check, &object).await.map_err(refusal)?;
    if dry_run {
        return Ok(
            json!({"message": format!("{kind} {name} passes the API server's checks (dry run): nothing created")}),
        );
    }
    api.create(&PostParams::default(), &object)
        .await
        .map_err(refusal)?;
    let view = kind.to_lowercase();
    Ok(
        json!({"message": format!("{kind} {name} created in {namespace}"),
              "href": format!("#/{view}/{namespace}/{name}")}),
    )
}

/// The API server's refusal, with the fields it names.
fn refusal(error: kube::Error) -> Value {
    match error {
        kube::Error::Api(status) => {
            let causes: Vec<Value> = status
                .details
                .iter()
                .flat_map(|d| &d.causes)
                .map(|c| json!({"field": c.field, "message": c.message}))
                .collect();
            json!({"error": status.message, "causes": causes})
        }
        other => json!({"error": other.to_string(), "causes": []}),
    }
}

/// What the person may do in `namespace`, as the API server's authorizer answers
/// (SelfSubjectAccessReview): the page disables what they may not, and says why.
pub async fn rights(client: &Client, namespace: &str) -> Value {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let ask = |verb: &str, (group, resource): (&str, &str), sub: Option<&str>| {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some(namespace.to_string()),
                    verb: Some(verb.to_string()),
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    subresource: sub.map(str::to_string),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let reviews = reviews.clone();
        async move {
            reviews
                .create(&PostParams::default(), &review)
                .await
                .ok()
                .and_then(|r| r.status)
                .is_some_and(|s| s.allowed)
        }
    };
    let ours = |resource| (crate::api::GROUP, resource);
    let (send, switch, goals, create, exec) = tokio::join!(
        ask("patch", ours("agents"), Some("status")),
        ask("patch", ours("agents"), None),
        ask("patch", ours("goals"), None),
        ask("create", ours("swarms"), None),
        ask("create", ("", "pods"), Some("exec")),
    );
    json!({"send": send, "loop": switch, "goal": goals, "create": create, "exec": exec})
}
