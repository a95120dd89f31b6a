//! The four CustomResourceDefinitions, as `overseer crd` prints them and `crds/` holds them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{Result, agent::Agent, goal::Goal, prwatch::PRWatch, swarm::Swarm};

/// All CRDs of overseer, in a stable order.
pub fn all() -> Vec<CustomResourceDefinition> {
    vec![Agent::crd(), Goal::crd(), PRWatch::crd(), Swarm::crd()]
}

/// One CRD as a YAML document.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String> {
    Ok(serde_yaml::to_string(crd)?)
}

/// All CRDs as one multi-document YAML stream.
pub fn all_yaml() -> Result<String> {
    let docs = all().iter().map(to_yaml).collect::<Result<Vec<_>>>()?;
    Ok(docs.iter().map(|d| format!("---\n{d}")).collect())
}
