//! Escalations from the command line: `overseer escalate` in an agent's pod (a request
//! in its own status, which the operator opens), `overseer escalations [AGENT]` (the
//! overseer or a person reads them, the agent's reasons included) and `overseer ack
//! AGENT` (acknowledges them; `send`, `loop release` and `loop add` do too).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::json;

use super::access::{agents, get, own_status, queue_next, queue_onto_version, refused};
use crate::delivery::escalation;
use crate::kinds::agent::{Agent, AgentStatus, EscalationRequest, Severity};
use crate::{Error, Result};

/// Field manager of `overseer escalate`.
const ESCALATE_MANAGER: &str = "overseer-escalate";
/// Field manager of `overseer ack`.
pub const ACK_MANAGER: &str = "overseer-ack";
/// Requests waiting for the operator at once, at most (the schema's limit).
const REQUESTS_LIMIT: usize = 8;

/// The severity named on the command line.
pub fn parse_severity(text: &str) -> std::result::Result<Severity, String> {
    match text {
        "info" => Ok(Severity::Info),
        "warning" => Ok(Severity::Warning),
        "critical" => Ok(Severity::Critical),
        other => Err(format!(
            "unknown severity {other:?}: info, warning or critical"
        )),
    }
}

/// The requests after adding one with `reason`: those the operator has not taken, and
/// the new one with the next seq. Refused when too many wait.
fn requested(
    status: &AgentStatus,
    severity: Severity,
    reason: &str,
    now: Timestamp,
) -> Result<Vec<EscalationRequest>> {
    let taken = status.escalation_counts.as_ref().map_or(0, |c| c.taken_seq);
    let busy = format!(
        "{REQUESTS_LIMIT} escalations already wait for the operator; try again once it has opened them"
    );
    queue_next(
        &status.escalation_requests,
        taken,
        [],
        (REQUESTS_LIMIT, &busy),
        |seq| EscalationRequest {
            seq,
            severity,
            reason: reason.trim().chars().take(1024).collect(),
            time: Time(now),
        },
    )
}

/// `overseer escalate --severity S --reason R`, in agent `agent`'s pod: records the
/// request on its own status (onto the version read, so none is lost), then waits up
/// to `wait` for the operator to open it.
pub async fn escalate(
    namespace: Option<&str>,
    agent: &str,
    severity: Severity,
    reason: &str,
    wait: Duration,
) -> Result<()> {
    if reason.trim().is_empty() {
        return Err(Error::Usage("--reason is empty: say what you need".into()));
    }
    let api = agents(namespace).await?;
    let action = ("escalate for", ESCALATE_MANAGER);
    let written = queue_onto_version(&api, agent, action, |status| {
        let requests = requested(status, severity, reason, Timestamp::now())?;
        let seq = requests.last().map_or(0, |r| r.seq);
        Ok((json!({"escalationRequests": requests}), seq))
    })
    .await?;
    let seq = written.ok_or_else(|| {
        Error::Busy(format!(
            "{agent} changed too often to record the escalation; try again"
        ))
    })?;
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let current = own_status(&api, "escalate for", agent).await?;
        let status = current.status.unwrap_or_default();
        if let Some(opened) = status
            .escalations
            .iter()
            .find(|e| e.request_seq == Some(seq))
        {
            println!(
                "escalation #{} opened (severity {}); your overseer is told, and reads your reason with `overseer escalations {agent}`",
                opened.id,
                opened.severity.label()
            );
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            println!(
                "escalation request #{seq} recorded; the operator opens it as soon as it runs"
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `overseer escalations [AGENT]`: the escalations of one agent, or of every agent
/// here that has any, with the agents' reasons (one line each, control characters
/// removed, as every cell of a table).
pub async fn list(namespace: Option<&str>, agent: Option<&str>) -> Result<()> {
    let api = agents(namespace).await?;
    let found: Vec<Agent> = match agent {
        Some(name) => vec![get(&api, "read the escalations of", name).await?],
        None => {
            api.list(&ListParams::default())
                .await
                .map_err(|e| refused("list", "agents", e))?
                .items
        }
    };
    let now = Timestamp::now();
    let mut rows = vec![
        [
            "AGENT", "ID", "KIND", "SEVERITY", "STATE", "AGE", "TOLD", "REASON",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for agent in &found {
        let name = kube::ResourceExt::name_any(agent);
        for e in agent.status.iter().flat_map(|s| &s.escalations) {
            rows.push(vec![
                name.clone(),
                e.id.to_string(),
                e.kind.label().to_string(),
                e.severity.label().to_string(),
                format!("{:?}", e.state),
                super::output::age(now, e.opened_time.0),
                if e.told_time.is_some() { "yes" } else { "no" }.to_string(),
                plain(e.reason.as_deref().unwrap_or("")),
            ]);
        }
    }
    if rows.len() == 1 {
        println!("no escalations");
        return Ok(());
    }
    print!("{}", super::output::columns(&rows, 0));
    Ok(())
}

/// Text as one line (the table removes the control characters left).
fn plain(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `overseer ack AGENT [--id N]`: acknowledges AGENT's open escalations (up to N).
pub async fn ack(namespace: Option<&str>, agent: &str, id: Option<i64>, by: &str) -> Result<()> {
    let api = agents(namespace).await?;
    let current = get(&api, "acknowledge the escalations of", agent).await?;
    let status = current.status.unwrap_or_default();
    let Some(answer) = escalation::answer(&status, id, by, Timestamp::now()) else {
        println!("{agent} has no open escalation");
        return Ok(());
    };
    let through = answer.through;
    write_ack(&api, agent, &answer).await?;
    println!("{agent}: escalations up to #{through} acknowledged");
    Ok(())
}

async fn write_ack(
    api: &Api<Agent>,
    agent: &str,
    answer: &crate::kinds::agent::EscalationAck,
) -> Result<()> {
    let params = PatchParams {
        field_manager: Some(ACK_MANAGER.into()),
        ..Default::default()
    };
    let patch = json!({"status": {"escalationAck": answer}});
    api.patch_status(agent, &params, &Patch::Merge(&patch))
        .await
        .map_err(|e| refused("acknowledge the escalations of", agent, e))?;
    Ok(())
}

/// What an answer to `agent` (`send`, `loop release`, `loop add`) writes beside itself:
/// the acknowledgement of its open escalations, by the one answering.
pub fn answer_fields(status: &AgentStatus, by: &str) -> serde_json::Value {
    match escalation::answer(status, None, by, Timestamp::now()) {
        Some(answer) => json!({"escalationAck": answer}),
        None => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_continue_after_what_was_taken_and_are_bounded() {
        let mut status = AgentStatus::default();
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let first = requested(&status, Severity::Warning, " need a key \n", now).unwrap();
        assert_eq!((first[0].seq, first[0].reason.as_str()), (1, "need a key"));
        status.escalation_requests = first;
        status.escalation_counts = Some(crate::kinds::agent::EscalationCounts {
            last_id: 1,
            taken_seq: 1,
        });
        let second = requested(&status, Severity::Info, "again", now).unwrap();
        assert_eq!(second.iter().map(|r| r.seq).collect::<Vec<_>>(), [2]);
        status.escalation_requests = (2..10)
            .map(|seq| EscalationRequest {
                seq,
                severity: Severity::Info,
                reason: "x".into(),
                time: Time(now),
            })
            .collect();
        let full = requested(&status, Severity::Info, "one more", now).unwrap_err();
        assert!(full.to_string().contains("already wait"), "{full}");
    }

    #[test]
    fn reasons_print_as_one_plain_line() {
        assert_eq!(plain("a b\nc\t d"), "a b c d");
        let table = super::super::output::columns(&[vec![plain("x\x1b[2Jy")]], 0);
        assert_eq!(table, "x [2Jy\n");
        assert_eq!(parse_severity("critical"), Ok(Severity::Critical));
        assert!(parse_severity("urgent").is_err());
    }
}
