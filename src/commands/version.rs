//! `overseer version`: this program's version, the API server's, and the operator's
//! that runs in the cluster (from its Deployment's `app.kubernetes.io/version`), as
//! `kubectl version` prints the client's and the server's.

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use serde::Serialize;

use crate::Result;

/// The chart's labels on the operator's Deployment.
const OPERATOR_SELECTOR: &str =
    "app.kubernetes.io/part-of=overseer,app.kubernetes.io/component=controller";

#[derive(Serialize, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct Versions {
    pub client_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Each operator release found: `namespace/name version`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub operator_versions: Vec<String>,
}

/// The lines `overseer version` prints.
pub fn text(versions: &Versions) -> String {
    let mut out = format!("Client Version: {}\n", versions.client_version);
    if let Some(server) = &versions.server_version {
        out.push_str(&format!("Kubernetes Version: {server}\n"));
        if versions.operator_versions.is_empty() {
            out.push_str("Operator Version: none found (no Deployment labelled by the chart that you may list)\n");
        }
        for operator in &versions.operator_versions {
            out.push_str(&format!("Operator Version: {operator}\n"));
        }
    }
    out
}

pub async fn run(client_only: bool, output: Option<&str>) -> Result<()> {
    let mut versions = Versions {
        client_version: env!("CARGO_PKG_VERSION").to_string(),
        ..Default::default()
    };
    if !client_only {
        let client =
            crate::kubernetes::timeouts::client(crate::kubernetes::timeouts::ANSWER_DEADLINE)
                .await?;
        versions.server_version = Some(client.apiserver_version().await?.git_version);
        // Listing Deployments everywhere may be refused: then none is shown.
        let deployments: Api<Deployment> = Api::all(client);
        if let Ok(found) = deployments
            .list(&ListParams::default().labels(OPERATOR_SELECTOR))
            .await
        {
            versions.operator_versions = found
                .items
                .iter()
                .map(|d| {
                    let version = d
                        .labels()
                        .get("app.kubernetes.io/version")
                        .map_or("unknown", String::as_str);
                    format!(
                        "{version} ({}/{})",
                        d.namespace().unwrap_or_default(),
                        d.name_any()
                    )
                })
                .collect();
        }
    }
    let printed = match output {
        None => text(&versions),
        Some("json") => format!("{}\n", serde_json::to_string_pretty(&versions)?),
        Some("yaml") => crate::yaml::to_string(&versions)?,
        Some(other) => {
            return Err(crate::Error::Usage(format!(
                "unknown output format {other:?}: json or yaml"
            )));
        }
    };
    print!("{printed}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_server_and_operator_versions() {
        let versions = Versions {
            client_version: "0.1.0".into(),
            server_version: Some("v1.37.2".into()),
            operator_versions: vec!["0.1.0 (overseer-system/overseer)".into()],
        };
        assert_eq!(
            text(&versions),
            "Client Version: 0.1.0\nKubernetes Version: v1.37.2\nOperator Version: 0.1.0 (overseer-system/overseer)\n"
        );
        let client_only = Versions {
            client_version: "0.1.0".into(),
            ..Default::default()
        };
        assert_eq!(text(&client_only), "Client Version: 0.1.0\n");
    }
}
