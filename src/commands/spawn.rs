//! `overseer spawn`, in an agent's pod: asks the agent's swarm for a new member (or to
//! cancel one it spawned) through a request in the agent's own status, and prints the
//! operator's answer: refused with the reason (exit 1), queued, or running; with
//! `--wait`, then how the member ended. An agent reads and writes only its own status;
//! the operator checks the request against the swarm's `spec.coordination.spawn`.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use serde_json::json;

use super::access::{agents, await_own_status, queue_onto_version};
use crate::kinds::agent::{Agent, AgentStatus};
use crate::kinds::spawn::{SpawnRecord, SpawnRequest, SpawnState};
use crate::{Error, Result};

/// Field manager of the agent's spawn requests.
const SPAWN_MANAGER: &str = "overseer-spawn";
/// Requests kept at once, at most (the schema's limit).
const REQUESTS_LIMIT: usize = 16;
/// How often the answer is looked for.
const POLL: Duration = Duration::from_millis(500);

/// What `overseer spawn` asks for.
pub struct Ask<'a> {
    pub name: &'a str,
    pub role: Option<&'a str>,
    pub task: Option<&'a str>,
    pub cancel: bool,
}

/// The requests after adding `ask`: those not answered yet or still queued (their
/// task is read when they start), and the new one with the next seq.
fn requests(status: &AgentStatus, ask: &Ask, now: Timestamp) -> Result<Vec<SpawnRequest>> {
    let label = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if !label(ask.name) {
        return Err(Error::Usage(format!(
            "NAME {:?}: lowercase letters, digits and '-', at most 63",
            ask.name
        )));
    }
    match ask.role {
        None if !ask.cancel => return Err(Error::Usage("--role is required".into())),
        Some(role) if !label(role) => {
            return Err(Error::Usage(format!("--role {role:?}: not a role name")));
        }
        _ => {}
    }
    if ask.task.is_some_and(|t| t.len() > 16384) {
        return Err(Error::Usage("the task is over 16384 bytes".into()));
    }
    let ledger = status.spawns.clone().unwrap_or_default();
    let queued = |r: &SpawnRequest| {
        ledger
            .records
            .iter()
            .any(|x| x.seq == r.seq && x.state == SpawnState::Queued)
    };
    let mut kept: Vec<SpawnRequest> = status
        .spawn_requests
        .iter()
        .filter(|r| r.seq > ledger.answered || queued(r))
        .cloned()
        .collect();
    if kept.len() >= REQUESTS_LIMIT {
        return Err(Error::Busy(format!(
            "{REQUESTS_LIMIT} spawn requests wait already; try again when some have started"
        )));
    }
    let seq = kept
        .iter()
        .map(|r| r.seq)
        .chain(ledger.records.iter().map(|r| r.seq))
        .fold(ledger.answered, i64::max)
        + 1;
    kept.push(SpawnRequest {
        seq,
        name: ask.name.to_string(),
        role: ask.role.map(str::to_string),
        task: ask.task.map(str::to_string),
        cancel: ask.cancel,
        time: Time(now),
    });
    Ok(kept)
}

/// `overseer spawn NAME`: queues the request in `agent`'s status and waits up to
/// `wait` for the answer; with `until_end`, then until the member ends.
pub async fn spawn(
    namespace: Option<&str>,
    agent: &str,
    ask: &Ask<'_>,
    wait: Duration,
    until_end: bool,
) -> Result<()> {
    let api = agents(namespace).await?;
    let action = ("ask for a spawn as", SPAWN_MANAGER);
    let written = queue_onto_version(&api, agent, action, |status| {
        let requests = requests(status, ask, Timestamp::now())?;
        let seq = requests.last().map_or(0, |r| r.seq);
        Ok((json!({"spawnRequests": requests}), seq))
    })
    .await?;
    let seq = written.ok_or_else(|| {
        Error::Busy(format!(
            "{agent} changed too often to queue the request; try again"
        ))
    })?;
    let Some(answer) = await_record(&api, agent, seq, wait, |_| true).await? else {
        println!(
            "request #{seq} queued; the operator answers as soon as it runs (overseer ps shows the swarm)"
        );
        return Ok(());
    };
    println!("{}", line(&answer));
    if answer.state == SpawnState::Refused {
        return Err(Error::Refused(format!(
            "spawn request #{seq} refused: {}",
            answer.reason.unwrap_or_default()
        )));
    }
    if !until_end || answer.state.is_final() {
        return Ok(());
    }
    // A member's loop can run for days; the command waits as long as its caller does.
    let week = Duration::from_secs(7 * 24 * 3600);
    if let Some(end) = await_record(&api, agent, seq, week, |r| r.state.is_final()).await? {
        println!("{}", line(&end));
    }
    Ok(())
}

/// The record of request `seq` once it answers `done`, within `wait` (None: not yet).
async fn await_record(
    api: &Api<Agent>,
    agent: &str,
    seq: i64,
    wait: Duration,
    done: impl Fn(&SpawnRecord) -> bool,
) -> Result<Option<SpawnRecord>> {
    await_own_status(api, ("read the spawns of", agent), (wait, POLL), |status| {
        let ledger = status.spawns.unwrap_or_default();
        ledger.records.into_iter().find(|r| r.seq == seq && done(r))
    })
    .await
}

fn line(record: &SpawnRecord) -> String {
    let reason = record
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    format!(
        "spawn #{} {}: {:?}{reason}",
        record.seq, record.name, record.state
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask<'a>(name: &'a str, role: Option<&'a str>, cancel: bool) -> Ask<'a> {
        Ask {
            name,
            role,
            task: Some("do it"),
            cancel,
        }
    }

    #[test]
    fn requests_continue_after_the_answered_keep_the_queued_and_refuse_malformed_ones() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let mut status = AgentStatus::default();
        let first = requests(&status, &ask("a", Some("builder"), false), now).unwrap();
        assert_eq!(first.iter().map(|r| r.seq).collect::<Vec<_>>(), [1]);
        let second = requests(
            &AgentStatus {
                spawn_requests: first.clone(),
                ..Default::default()
            },
            &ask("b", Some("builder"), false),
            now,
        )
        .unwrap();
        status.spawn_requests = second;
        status.spawns = serde_json::from_value(json!({"answered": 2, "records": [
            {"seq": 1, "name": "a", "state": "Running", "time": "2027-01-15T08:00:00Z"},
            {"seq": 2, "name": "b", "state": "Queued", "time": "2027-01-15T08:00:00Z"}]}))
        .unwrap();
        let third = requests(&status, &ask("a", None, true), now).unwrap();
        assert_eq!(
            third
                .iter()
                .map(|r| (r.seq, r.name.as_str(), r.cancel))
                .collect::<Vec<_>>(),
            [(2, "b", false), (3, "a", true)],
            "the started one is dropped, the queued one kept with its task"
        );
        for bad in [
            ask("A", Some("builder"), false),
            ask("a", None, false),
            ask("a", Some("Builder"), false),
            ask("-a", Some("builder"), false),
        ] {
            let refused = requests(&status, &bad, now).unwrap_err();
            assert_eq!(refused.exit_code(), 2, "{refused:?}");
        }
    }
}
