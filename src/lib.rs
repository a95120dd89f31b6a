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
pub mod console;
pub mod controller;
pub mod crd;
pub mod delivery;
pub mod duration;
pub mod egress;
pub mod goal;
pub mod guard;
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
pub mod variables;
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
    /// Input refused before anything was done: a flag, a message, a template.
    #[error("{0}")]
    Usage(String),
    /// Another writer or a full queue held it up: the same command may work shortly.
    #[error("{0}")]
    Busy(String),
    /// What it needs is not there yet: an agent without a pod, a message still queued.
    #[error("{0}")]
    NotReady(String),
    /// Not allowed, not the operator's own, or over a limit: asking again changes nothing.
    #[error("{0}")]
    Refused(String),
    /// A message or wake did not reach its agent.
    #[error("{0}")]
    NotDelivered(String),
    /// The object (or the tool) asked for is not there.
    #[error("{0}")]
    NotFound(String),
    /// A git command in the workspace failed.
    #[error("{0}")]
    Git(String),
    /// A watch of the API server failed.
    #[error("{0}")]
    Watch(String),
    #[error("reconcile panicked: {0}")]
    Panicked(String),
    /// An object the operator would make exists already without its owner: it is left
    /// alone, and the owner reports the collision as a condition.
    #[error("{kind} {name} exists and belongs to another owner; it is left as it is")]
    NameTaken { kind: String, name: String },
}

impl Error {
    /// Every value of `metric_label`, so the failures metric can start each at zero.
    pub const METRIC_LABELS: [&'static str; 17] = [
        "kube",
        "connect",
        "crds_missing",
        "leadership_lost",
        "serialization",
        "yaml",
        "io",
        "usage",
        "busy",
        "not_ready",
        "refused",
        "not_delivered",
        "not_found",
        "git",
        "watch",
        "panicked",
        "name_taken",
    ];

    /// The exit status of a command that failed with this error: 2 for input refused
    /// (as for a flag clap refuses), 75 (EX_TEMPFAIL) when trying again shortly may
    /// work, 1 for anything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Busy(_) | Error::NotReady(_) => 75,
            _ => 1,
        }
    }

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
            Error::Usage(_) => "usage",
            Error::Busy(_) => "busy",
            Error::NotReady(_) => "not_ready",
            Error::Refused(_) => "refused",
            Error::NotDelivered(_) => "not_delivered",
            Error::NotFound(_) => "not_found",
            Error::Git(_) => "git",
            Error::Watch(_) => "watch",
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
            Error::Usage(String::new()),
            Error::Busy(String::new()),
            Error::NotReady(String::new()),
            Error::Refused(String::new()),
            Error::NotDelivered(String::new()),
            Error::NotFound(String::new()),
            Error::Git(String::new()),
            Error::Watch(String::new()),
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

    /// (error, exit status): a script can tell input it must change from a moment it
    /// must wait out.
    #[test]
    fn each_error_exits_with_what_the_caller_should_do() {
        let rows = [
            (Error::Usage("the message is empty".into()), 2),
            (Error::Busy("changed too often; try again".into()), 75),
            (Error::NotReady("agent p has no pod yet".into()), 75),
            (Error::Refused("not the operator's pod".into()), 1),
            (Error::NotDelivered("not delivered".into()), 1),
            (Error::NotFound("there is no agent p".into()), 1),
            (Error::CrdsMissing("agents".into()), 1),
        ];
        for (error, code) in rows {
            assert_eq!(error.exit_code(), code, "{error:?}");
        }
    }
}
