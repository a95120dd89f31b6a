//! The pull request watches an agent asks for itself (`overseer watch-pr URL`): its
//! request list, and the PRWatch each request makes, always for that agent and with the
//! GitHub access a person set in its spec (`spec.pullRequests`), never the agent.

use kube::{Resource, ResourceExt};

use crate::api::{MANAGED_BY, fit_name, fnv1a, label_value};
use crate::kinds::agent::{Agent, PullRequestAccess, WatchRequest};
use crate::prwatch::PRWatch;
use crate::{Error, Result, labels};

/// Most requests an agent keeps (the schema's bound).
pub const MAX_REQUESTS: usize = 16;

/// The request list after asking to watch `url` (or to stop watching it): one entry
/// per URL, the newest ask winning.
pub fn requested(current: &[WatchRequest], url: &str, stop: bool) -> Result<Vec<WatchRequest>> {
    let mut requests: Vec<WatchRequest> =
        current.iter().filter(|r| r.url != url).cloned().collect();
    if requests.len() >= MAX_REQUESTS {
        return Err(Error::Refused(format!(
            "this agent already asked for {MAX_REQUESTS} pull request watches"
        )));
    }
    requests.push(WatchRequest {
        url: url.to_string(),
        stop,
    });
    Ok(requests)
}

/// The name of the PRWatch of `agent` for `url`.
pub fn watch_name(agent: &str, url: &str) -> String {
    let suffix = format!("-pr-{:08x}", fnv1a(url.as_bytes()) as u32);
    format!("{}{suffix}", fit_name(agent, 253 - suffix.len()))
}

/// The PRWatch a request makes: owned by the agent, waking only it, through `access`.
pub fn desired(
    agent: &Agent,
    access: &PullRequestAccess,
    request: &WatchRequest,
) -> Result<PRWatch> {
    let name = agent.name_any();
    let mut watch: PRWatch = serde_json::from_value(serde_json::json!({
        "apiVersion": "overseer.dev/v1alpha1",
        "kind": "PRWatch",
        "metadata": {"name": watch_name(&name, &request.url), "namespace": agent.namespace()},
        "spec": {"url": request.url, "agent": name, "github": access.github, "stop": request.stop},
    }))?;
    watch.metadata.labels = Some(
        [
            (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
            (labels::AGENT.to_string(), label_value(&name)),
        ]
        .into(),
    );
    watch.metadata.owner_references = agent.controller_owner_ref(&()).map(|r| vec![r]);
    Ok(watch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(url: &str, stop: bool) -> WatchRequest {
        WatchRequest {
            url: url.into(),
            stop,
        }
    }

    #[test]
    fn one_request_per_pull_request_the_newest_ask_winning() {
        let a = "https://github.com/acme/w/pull/1";
        let b = "https://github.com/acme/w/pull/2";
        let asked = requested(&[], a, false).unwrap();
        let asked = requested(&asked, b, false).unwrap();
        let stopped = requested(&asked, a, true).unwrap();
        assert_eq!(stopped, vec![request(b, false), request(a, true)]);
        let full: Vec<WatchRequest> = (1..=16)
            .map(|n| request(&format!("https://github.com/acme/w/pull/{n}"), false))
            .collect();
        assert!(requested(&full, "https://github.com/acme/w/pull/99", false).is_err());
        assert!(
            requested(&full, "https://github.com/acme/w/pull/3", true).is_ok(),
            "stopping one it has is always possible"
        );
    }

    #[test]
    fn the_watch_is_for_the_agent_itself_with_the_access_a_person_set() {
        let agent: Agent = serde_saphyr::from_str(
            r#"
apiVersion: overseer.dev/v1alpha1
kind: Agent
metadata: {name: builder, namespace: team, uid: 0b5e6f0e-1111-2222-3333-444455556666}
spec:
  runtime: {name: claude, image: example.com/claude:1}
  pullRequests: {github: {tokenSecretRef: {name: github, key: token}}}
"#,
        )
        .unwrap();
        let access = agent.spec.pull_requests.clone().unwrap();
        let watch = desired(
            &agent,
            &access,
            &request("https://github.com/acme/w/pull/7", false),
        )
        .unwrap();
        insta::assert_yaml_snapshot!("agent_pr_watch", watch);
        assert_ne!(
            watch_name("builder", "https://github.com/acme/w/pull/7"),
            watch_name("builder", "https://github.com/acme/w/pull/8")
        );
    }
}
