//! overseer: a Kubernetes operator that keeps autonomous coding agents working
//! until they are genuinely done.

// kube's `printcolumn(...)` attributes repeat `type_`/`json_path` keys by design.
#![allow(clippy::duplicated_attributes)]

pub mod agent;
pub mod api;
pub mod cli;
pub mod commands;
pub mod completion;
pub mod conditions;
pub mod controller;
pub mod crd;
pub mod delivery;
pub mod duration;
pub mod egress;
pub mod goal;
pub mod health;
pub mod https;
pub mod kinds;
pub mod kubernetes;
pub mod labels;
pub mod metrics;
pub mod notify;
pub mod operator;
pub mod pods;
pub mod prwatch;
pub mod reasons;
pub mod roles;
pub mod runtimes;
pub mod shim;
pub mod step;
pub mod swarm;
pub mod telemetry;
pub mod template;
pub mod workspace;
pub mod yaml;

/// Everything that can go wrong in the operator and the CLI.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    #[error("cannot reach a cluster: {0}")]
    Connect(String),
    #[error(
        "the overseer CRDs are not installed ({0} is missing): install them with `overseer crd | kubectl apply --server-side -f -`"
    )]
    CrdsMissing(String),
    #[error("leadership lost: {0}")]
    LeadershipLost(String),
    #[error("serialization error: {0}")]
    Serialization(#[from] serde_json::Error),
    #[error("YAML error: {0}")]
    Yaml(#[from] serde_saphyr::SerializeError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Invalid(String),
    #[error("reconcile panicked: {0}")]
    Panicked(String),
    /// An object the operator would make exists already without its owner: it is left
    /// alone, and the owner reports the collision as a condition.
    #[error("{kind} {name} exists and belongs to another owner; it is left as it is")]
    NameTaken { kind: String, name: String },
}

impl Error {
    /// Every value of `metric_label`, so the failures metric can start each at zero.
    pub const METRIC_LABELS: [&'static str; 10] = [
        "kube",
        "connect",
        "crds_missing",
        "leadership_lost",
        "serialization",
        "yaml",
        "io",
        "invalid",
        "panicked",
        "name_taken",
    ];

    /// A short, bounded label for the failures metric.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::Connect(_) => "connect",
            Error::CrdsMissing(_) => "crds_missing",
            Error::LeadershipLost(_) => "leadership_lost",
            Error::Serialization(_) => "serialization",
            Error::Yaml(_) => "yaml",
            Error::Io(_) => "io",
            Error::Invalid(_) => "invalid",
            Error::Panicked(_) => "panicked",
            Error::NameTaken { .. } => "name_taken",
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod scripted;

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn every_error_label_is_listed() {
        let errors = [
            Error::Connect(String::new()),
            Error::CrdsMissing(String::new()),
            Error::LeadershipLost(String::new()),
            Error::Serialization(serde_json::from_str::<u8>("x").unwrap_err()),
            Error::Yaml(serde::ser::Error::custom("x")),
            Error::Io(std::io::Error::other("x")),
            Error::Invalid(String::new()),
            Error::Panicked(String::new()),
            Error::NameTaken {
                kind: String::new(),
                name: String::new(),
            },
        ];
        for error in &errors {
            assert!(
                Error::METRIC_LABELS.contains(&error.metric_label()),
                "{error:?}"
            );
        }
        // kube's errors are the one variant not built here.
        assert_eq!(Error::METRIC_LABELS.len(), errors.len() + 1);
        assert_eq!(Error::METRIC_LABELS[0], "kube");
    }
}
