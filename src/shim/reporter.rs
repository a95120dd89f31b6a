//! Where the shim's view of the agent goes: the Agent's status, by server-side apply
//! under the shim's field manager (the exit under the loop's).

use std::time::Duration;

use kube::Api;
use serde_json::json;

use super::args::ShimArgs;
use crate::agent::{Activity, Agent, AgentExit};
use crate::api::{LOOP_MANAGER, SHIM_MANAGER};

/// How long one status write may take: the shim's loop (and the input it takes) waits
/// on it, and a write that fails is retried a second later.
const REPORT_DEADLINE: Duration = Duration::from_secs(10);

/// Where the shim's view of the agent goes: the Agent's status.
pub(super) struct Reporter {
    api: Api<Agent>,
    name: String,
}

impl Reporter {
    pub(super) async fn connect(args: &ShimArgs) -> crate::Result<Option<Reporter>> {
        let Some(name) = args.agent.clone() else {
            return Ok(None);
        };
        let client = crate::kubernetes::timeouts::client(REPORT_DEADLINE).await?;
        let namespace = args
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_string());
        Ok(Some(Reporter {
            api: Api::namespaced(client, &namespace),
            name,
        }))
    }

    pub(super) async fn report(&self, activity: &Activity) -> Result<(), kube::Error> {
        self.apply(SHIM_MANAGER, json!({"activity": activity}))
            .await
    }

    /// The exit goes once, under the loop's own field manager: later activity reports
    /// do not re-assert it, so `overseer loop add` can take it back.
    pub(super) async fn record_exit(&self, exit: &AgentExit) -> Result<(), kube::Error> {
        self.apply(LOOP_MANAGER, json!({"exit": exit})).await
    }

    async fn apply(&self, manager: &str, status: serde_json::Value) -> Result<(), kube::Error> {
        crate::api::apply_status(&self.api, &self.name, manager, &status).await
    }
}
