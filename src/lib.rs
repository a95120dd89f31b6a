//! overseer: a Kubernetes operator that keeps autonomous coding agents working
//! until they are genuinely done.

pub mod agent;
pub mod api;
pub mod crd;
pub mod goal;
pub mod prwatch;
pub mod swarm;

/// Everything that can go wrong in the operator and the CLI.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    #[error("serialization error: {0}")]
    Serialization(#[from] serde_json::Error),
    #[error("YAML error: {0}")]
    Yaml(#[from] serde_yaml::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
