//! Reading and writing Agents under the caller's own permissions, for every command
//! that does: the client, the refusal in words, and the retry of a write onto a
//! version that changed meanwhile.

use std::time::Duration;

use kube::Api;
use kube::api::{Patch, PatchParams};

use crate::kinds::agent::{Agent, AgentStatus};
use crate::kinds::request::Request;
use crate::{Error, Result};

/// How many times a list in an agent's status is read and written again when another
/// writer changed the agent in between (optimistic concurrency).
pub(crate) const WRITE_TRIES: usize = 32;

/// A short, spread pause before trying a conflicting write again, so that many
/// concurrent writers do not meet again at once.
pub(crate) fn retry_pause() -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    Duration::from_millis(10 + u64::from(nanos % 90))
}

/// A member's request list after adding one: those the operator has not answered (seq
/// above `answered`), in the order written, and the one `make` builds under the next
/// seq, above every pending seq, `answered` and the seqs of the answers `recorded`.
/// Busy, with `busy`, when `limit` wait already.
pub(crate) fn queue_next<R: Request + Clone>(
    requests: &[R],
    answered: i64,
    recorded: impl IntoIterator<Item = i64>,
    (limit, busy): (usize, &str),
    make: impl FnOnce(i64) -> R,
) -> Result<Vec<R>> {
    let mut kept: Vec<R> = requests
        .iter()
        .filter(|r| r.seq() > answered)
        .cloned()
        .collect();
    if kept.len() >= limit {
        return Err(Error::Busy(busy.to_string()));
    }
    let last = recorded
        .into_iter()
        .chain(kept.iter().map(Request::seq))
        .fold(answered, i64::max);
    kept.push(make(last + 1));
    Ok(kept)
}

pub(crate) async fn agents(namespace: Option<&str>) -> Result<Api<Agent>> {
    let client =
        crate::kubernetes::timeouts::client(crate::kubernetes::timeouts::ANSWER_DEADLINE).await?;
    Ok(match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::default_namespaced(client),
    })
}

/// A refusal by the API server, in words that say what to do about it.
pub(crate) fn refused(action: &str, agent: &str, error: kube::Error) -> Error {
    match error {
        kube::Error::Api(status) if status.code == 403 => Error::Refused(format!(
            "not allowed to {action} {agent}: only its overseer (or a person with access to agents/status) may; {}",
            status.message
        )),
        kube::Error::Api(status) if status.code == 404 => Error::NotFound(format!(
            "there is no agent {agent} here: {}",
            status.message
        )),
        other => other.into(),
    }
}

pub(crate) async fn get(api: &Api<Agent>, action: &str, agent: &str) -> Result<Agent> {
    api.get(agent).await.map_err(|e| refused(action, agent, e))
}

/// Agent `agent` as its status read shows it (its own status is all an agent may
/// read), for `action`.
pub(crate) async fn own_status(api: &Api<Agent>, action: &str, agent: &str) -> Result<Agent> {
    api.get_status(agent)
        .await
        .map_err(|e| refused(action, agent, e))
}

/// What `pick` finds in `agent`'s own status, read every `every` until it finds
/// something or `wait` has passed (None: not yet). An agent may read only its own
/// status, so the commands in its pod wait for the operator's answer by reading it.
pub(crate) async fn await_own_status<T>(
    api: &Api<Agent>,
    (action, agent): (&str, &str),
    (wait, every): (Duration, Duration),
    mut pick: impl FnMut(AgentStatus) -> Option<T>,
) -> Result<Option<T>> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let current = own_status(api, action, agent).await?;
        if let Some(found) = pick(current.status.unwrap_or_default()) {
            return Ok(Some(found));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(every).await;
    }
}

/// Writes the status fields `queue` makes from the agent's current status (a merge
/// patch under `manager`) onto the version they were made from: when another writer
/// changed the agent in between, it reads and tries again, so concurrent writers of
/// one list lose nothing. What `queue` returned with the written fields; None when the
/// agent changed every time.
pub(crate) async fn queue_onto_version<T>(
    api: &Api<Agent>,
    agent: &str,
    (action, manager): (&str, &str),
    mut queue: impl FnMut(&AgentStatus) -> Result<(serde_json::Value, T)>,
) -> Result<Option<T>> {
    let params = PatchParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    };
    for _ in 0..WRITE_TRIES {
        let current = own_status(api, action, agent).await?;
        let (fields, written) = queue(&current.status.clone().unwrap_or_default())?;
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "status": fields,
        });
        match api
            .patch_status(agent, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(Some(written)),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tokio::time::sleep(retry_pause()).await;
            }
            Err(error) => return Err(refused(action, agent, error)),
        }
    }
    Ok(None)
}
