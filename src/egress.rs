//! Where agent pods may connect to. Every agent pod and step pod is a sandbox by
//! default: an egress NetworkPolicy owned by its Agent or Goal lets it reach DNS, the
//! API server (its shim reports status there) and the world outside the cluster, and
//! nothing of the cluster's inside: no other pod or service, no node, no cloud
//! metadata address. More destinations come from the operator's flags (the chart's
//! `sandbox.allowCIDRs`) and an Agent's own `spec.egress.allowCIDRs`. A swarm's own
//! `spec.egress` (docs/swarm.md) uses the same rules for its members.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::Api;
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;

use crate::api::{MANAGED_BY, apply_owned, fit_name, label_value};
use crate::kinds::swarm::SwarmSpec;
use crate::kubernetes::fresh::Applied;

/// Ranges the public internet leaves out: private, shared, link-local (the cloud
/// metadata services, 169.254.169.254) and unique-local, where the cluster's pods,
/// services and nodes live; and loopback.
pub const NOT_PUBLIC_V4: [&str; 6] = [
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
];
pub const NOT_PUBLIC_V6: [&str; 3] = ["::1/128", "fc00::/7", "fe80::/10"];

/// The operator's sandbox settings (its flags).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sandbox {
    /// Whether agent and step pods get the sandbox policy at all.
    pub enabled: bool,
    /// The API server's own addresses (the `kubernetes` Service's endpoints, not its
    /// cluster IP, which a network plugin translates before it applies policy).
    pub api_server: Vec<String>,
    /// More destinations every sandbox may reach.
    pub allow: Vec<String>,
}

fn block(cidr: &str, except: &[&str]) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr: cidr.to_string(),
            except: (!except.is_empty()).then(|| except.iter().map(|e| e.to_string()).collect()),
        }),
        ..Default::default()
    }
}

/// DNS on port 53, anywhere (the cluster's resolver lives inside it).
pub fn dns() -> NetworkPolicyEgressRule {
    NetworkPolicyEgressRule {
        ports: Some(
            ["UDP", "TCP"]
                .map(|protocol| NetworkPolicyPort {
                    protocol: Some(protocol.into()),
                    port: Some(IntOrString::Int(53)),
                    ..Default::default()
                })
                .to_vec(),
        ),
        to: None,
    }
}

/// Every public address, IPv4 and IPv6.
pub fn public_internet() -> [NetworkPolicyPeer; 2] {
    [
        block("0.0.0.0/0", &NOT_PUBLIC_V4),
        block("::/0", &NOT_PUBLIC_V6),
    ]
}

/// Each CIDR as a destination.
pub fn cidrs<'a>(cidrs: impl IntoIterator<Item = &'a String>) -> Vec<NetworkPolicyPeer> {
    cidrs.into_iter().map(|cidr| block(cidr, &[])).collect()
}

/// The sandbox of the pods `selector` picks (an Agent's or a Goal's), owned by `owner`:
/// egress to DNS, the API server, the public internet, and `allow` besides the
/// operator's own list. Ingress is left as the namespace has it.
fn sandbox_policy<K: Resource<DynamicType = ()>>(
    owner: &K,
    name: String,
    selector: BTreeMap<String, String>,
    sandbox: &Sandbox,
    allow: &[String],
) -> NetworkPolicy {
    let mut peers: Vec<NetworkPolicyPeer> = public_internet().into();
    let mut extra: Vec<&String> = sandbox
        .api_server
        .iter()
        .chain(&sandbox.allow)
        .chain(allow)
        .collect();
    extra.sort();
    extra.dedup();
    peers.extend(cidrs(extra));
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: owner.meta().namespace.clone(),
            labels: Some(BTreeMap::from([(
                MANAGED_BY.0.to_string(),
                MANAGED_BY.1.to_string(),
            )])),
            owner_references: owner.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(selector),
                ..Default::default()
            }),
            policy_types: Some(vec!["Egress".into()]),
            egress: Some(vec![
                dns(),
                NetworkPolicyEgressRule {
                    to: Some(peers),
                    ports: None,
                },
            ]),
            ingress: None,
        }),
    }
}

/// The name of the sandbox policy of the `kind` (`agent`, `goal`) object `name`.
fn sandbox_name(kind: &str, name: &str) -> String {
    let prefix = format!("overseer-sandbox-{kind}-");
    format!("{prefix}{}", fit_name(name, 253 - prefix.len()))
}

/// Whose pods a sandbox picks: an Agent's or a Goal's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SandboxOf {
    Agent,
    Goal,
}

impl SandboxOf {
    /// The word in the policy's name.
    fn word(self) -> &'static str {
        match self {
            SandboxOf::Agent => "agent",
            SandboxOf::Goal => "goal",
        }
    }

    /// The label the operator sets on the owner's pods, its value the owner's name.
    fn label(self) -> &'static str {
        match self {
            SandboxOf::Agent => crate::labels::AGENT,
            SandboxOf::Goal => crate::labels::GOAL,
        }
    }
}

/// Whether a swarm's own NetworkPolicy limits its pods' egress (`networkPolicy` with
/// `egress`): then it alone governs them, since NetworkPolicies add up and a sandbox
/// beside it would only widen what the swarm allows.
pub fn swarm_governs(swarm: &SwarmSpec) -> bool {
    swarm.network_policy && swarm.egress.is_some()
}

/// Applies the sandbox of `owner`'s pods (`allow`: its own extra destinations) before
/// they are made, when it differs from what this operator last applied (`applied`).
/// Nothing when sandboxes are off, or when the owner's swarm governs its egress.
pub async fn ensure<K>(
    client: &Client,
    sandbox: &Sandbox,
    applied: &Applied,
    owner: &K,
    of: SandboxOf,
    swarm: Option<&SwarmSpec>,
    allow: &[String],
) -> crate::Result<()>
where
    K: Resource<DynamicType = ()> + Serialize,
{
    const KIND: &str = "NetworkPolicy";
    if !sandbox.enabled || swarm.is_some_and(swarm_governs) {
        return Ok(());
    }
    let namespace = owner.namespace().unwrap_or_default();
    let name = sandbox_name(of.word(), &owner.name_any());
    let selector = BTreeMap::from([
        (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
        (of.label().to_string(), label_value(&owner.name_any())),
    ]);
    let policy = sandbox_policy(owner, name.clone(), selector, sandbox, allow);
    if applied.holds(KIND, &namespace, &name, &policy.spec) {
        return Ok(());
    }
    let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &namespace);
    apply_owned(&policies, &name, &owner.uid().unwrap_or_default(), &policy).await?;
    applied.record(KIND, &namespace, &name, &policy.spec);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::agent::Agent;

    #[test]
    fn a_sandbox_reaches_dns_the_api_server_and_the_world_and_nothing_inside() {
        let agent: Agent = serde_json::from_value(serde_json::json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
            "metadata": {"name": "builder", "namespace": "team", "uid": "u-1"},
            "spec": {"runtime": {"name": "claude", "image": "a:1"}}
        }))
        .unwrap();
        let sandbox = Sandbox {
            enabled: true,
            api_server: vec!["172.18.0.2/32".into()],
            allow: vec!["10.20.0.0/16".into()],
        };
        let policy = sandbox_policy(
            &agent,
            sandbox_name("agent", "builder"),
            BTreeMap::from([("overseer.dev/agent".into(), "builder".into())]),
            &sandbox,
            &["10.30.0.5/32".into(), "10.20.0.0/16".into()],
        );
        insta::assert_yaml_snapshot!(policy);
        let peers = &policy.spec.as_ref().unwrap().egress.as_ref().unwrap()[1];
        let v4 = peers.to.as_ref().unwrap()[0].ip_block.as_ref().unwrap();
        assert!(
            v4.except
                .as_ref()
                .unwrap()
                .contains(&"169.254.0.0/16".to_string()),
            "the cloud metadata address is refused"
        );
        assert_eq!(
            sandbox_name("agent", &"a".repeat(253)).len(),
            253,
            "names fit"
        );
    }
}
