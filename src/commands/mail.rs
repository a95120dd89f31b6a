//! Mail from the command line, in an agent's pod: `overseer mail send` (a message in
//! the agent's own outbox, which the operator routes), `overseer mail read` (its
//! mailbox, marked read) and `overseer mail` (what became of what it sent). An agent
//! reads and writes only its own status; the operator carries the mail.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::access::{agents, await_own_status, own_status, queue_onto_version, refused};
use crate::delivery::mail;
use crate::kinds::agent::{Agent, AgentStatus, MailReceipt, OutgoingMail, ReceiptState};
use crate::{Error, Result};

/// Field manager of the agent's outbox and read mark.
const MAIL_MANAGER: &str = "overseer-mail";
/// Messages waiting to be routed at once, at most (the schema's limit).
const OUTBOX_LIMIT: usize = 16;

/// What `mail send` asks for.
pub struct Outgoing<'a> {
    pub to: &'a str,
    pub type_: Option<&'a str>,
    pub urgent: bool,
    pub body: &'a str,
}

/// The outbox after adding `outgoing`: the messages not routed yet, and the new one
/// with the next seq. Refused when too many wait or the message is malformed.
fn queued(status: &AgentStatus, outgoing: &Outgoing, now: Timestamp) -> Result<Vec<OutgoingMail>> {
    if outgoing.body.trim().is_empty() {
        return Err(Error::Usage("the message is empty".into()));
    }
    if let Some(kind) = outgoing.type_
        && (kind.is_empty()
            || kind.len() > 32
            || !kind.starts_with(|c: char| c.is_ascii_lowercase())
            || !kind
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
    {
        return Err(Error::Usage(format!(
            "--type {kind:?}: one word of lowercase letters, digits and '-', at most 32"
        )));
    }
    let routed = status.mail.as_ref().map_or(0, |m| m.routed_seq);
    let mut pending: Vec<OutgoingMail> = mail::unrouted(status).into_iter().cloned().collect();
    if pending.len() >= OUTBOX_LIMIT {
        return Err(Error::Busy(format!(
            "{OUTBOX_LIMIT} messages wait to be routed already; try again shortly"
        )));
    }
    let seq = pending
        .iter()
        .map(|m| m.seq)
        .max()
        .unwrap_or(routed)
        .max(routed)
        + 1;
    pending.push(OutgoingMail {
        seq,
        to: outgoing.to.to_string(),
        type_: outgoing.type_.map(str::to_string),
        urgent: outgoing.urgent,
        body: outgoing.body.to_string(),
        sent_time: Time(now),
    });
    Ok(pending)
}

/// `overseer mail send TO`: queues the message in `agent`'s outbox, then waits up to
/// `wait` for the operator's receipts. Exit 1 when it reached nobody (refused, or every
/// recipient has ended).
pub async fn send(
    namespace: Option<&str>,
    agent: &str,
    outgoing: &Outgoing<'_>,
    wait: Duration,
) -> Result<()> {
    let api = agents(namespace).await?;
    let action = ("send mail as", MAIL_MANAGER);
    let written = queue_onto_version(&api, agent, action, |status| {
        let outbox = queued(status, outgoing, Timestamp::now())?;
        let seq = outbox.last().map_or(0, |m| m.seq);
        Ok((json!({"outbox": outbox}), seq))
    })
    .await?;
    let seq = written.ok_or_else(|| {
        Error::Busy(format!(
            "{agent} changed too often to queue the mail; try again"
        ))
    })?;
    let Some(receipts) = await_receipts(&api, agent, seq, wait).await? else {
        println!(
            "mail #{seq} queued; the operator routes it as soon as it runs (overseer mail shows its receipts)"
        );
        return Ok(());
    };
    for receipt in &receipts {
        println!("{}", receipt_line(receipt));
    }
    let nobody =
        |r: &&MailReceipt| matches!(r.state, ReceiptState::Refused | ReceiptState::Undeliverable);
    if receipts.iter().all(|r| nobody(&r)) {
        let reason = receipts
            .iter()
            .filter_map(|r| r.reason.clone())
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Error::NotDelivered(format!(
            "mail #{seq} reached nobody: {reason}"
        )));
    }
    Ok(())
}

fn params() -> PatchParams {
    PatchParams {
        field_manager: Some(MAIL_MANAGER.into()),
        ..Default::default()
    }
}

/// The receipts of `seq` once the operator routed it, within `wait` (None: not yet).
async fn await_receipts(
    api: &Api<Agent>,
    agent: &str,
    seq: i64,
    wait: Duration,
) -> Result<Option<Vec<MailReceipt>>> {
    let every = Duration::from_millis(200);
    await_own_status(api, ("read the mail of", agent), (wait, every), |status| {
        let record = status.mail.unwrap_or_default();
        (record.routed_seq >= seq).then(|| {
            record
                .receipts
                .into_iter()
                .filter(|r| r.seq == seq)
                .collect()
        })
    })
    .await
}

fn receipt_line(receipt: &MailReceipt) -> String {
    let reason = receipt
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    format!(
        "mail #{} to {}: {:?}{reason}",
        receipt.seq, receipt.to, receipt.state
    )
}

/// `overseer mail read`: prints `agent`'s unread mail (control characters but line
/// breaks and tabs removed) and marks it read.
pub async fn read(namespace: Option<&str>, agent: &str) -> Result<()> {
    let api = agents(namespace).await?;
    let current = own_status(&api, "read the mail of", agent).await?;
    let status = current.status.unwrap_or_default();
    let unread: Vec<_> = status.unread_mail().collect();
    let Some(last) = unread.iter().map(|m| m.id).max() else {
        println!("no new mail");
        return Ok(());
    };
    for message in &unread {
        let kind = message.type_.as_deref().unwrap_or("message");
        let urgent = if message.urgent { ", urgent" } else { "" };
        println!(
            "--- mail #{} from {} ({kind}{urgent}), sent {}",
            message.id, message.from, message.sent_time.0
        );
        println!("{}", plain(&message.body));
    }
    let patch = json!({"status": {"mailRead": last}});
    api.patch_status(agent, &params(), &Patch::Merge(&patch))
        .await
        .map_err(|e| refused("mark the mail read of", agent, e))?;
    Ok(())
}

/// Another agent's words as plain text: every control character but line breaks and
/// tabs becomes a space, so no escape sequence of theirs reaches the reader's terminal.
fn plain(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c,
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// `overseer mail`: the receipts of what `agent` sent, and how much waits unread.
pub async fn status(namespace: Option<&str>, agent: &str) -> Result<()> {
    let api = agents(namespace).await?;
    let current = own_status(&api, "read the mail of", agent).await?;
    let status = current.status.unwrap_or_default();
    let unread = status.unread_mail().count();
    println!("{unread} unread in your mailbox (overseer mail read)");
    let waiting = mail::unrouted(&status).len();
    if waiting > 0 {
        println!("{waiting} sent, not routed yet");
    }
    for receipt in status.mail.iter().flat_map(|m| &m.receipts) {
        println!("{}", receipt_line(receipt));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outgoing<'a>(to: &'a str, type_: Option<&'a str>, body: &'a str) -> Outgoing<'a> {
        Outgoing {
            to,
            type_,
            urgent: false,
            body,
        }
    }

    #[test]
    fn the_outbox_continues_after_what_was_routed_and_refuses_malformed_mail() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let mut status = AgentStatus::default();
        let first = queued(&status, &outgoing("builder", Some("finding"), "x"), now).unwrap();
        assert_eq!(first[0].seq, 1);
        status.outbox = first;
        status.mail = Some(crate::kinds::agent::MailStatus {
            routed_seq: 1,
            ..Default::default()
        });
        let second = queued(&status, &outgoing("@all", None, "y"), now).unwrap();
        assert_eq!(second.iter().map(|m| m.seq).collect::<Vec<_>>(), [2]);
        for (kind, body) in [(Some("Finding"), "x"), (Some("a b"), "x"), (None, "  ")] {
            assert!(
                queued(&status, &outgoing("b", kind, body), now).is_err(),
                "{kind:?}"
            );
        }
        assert_eq!(plain("a\x1b[2J\r\nb\tc"), "a [2J \nb\tc");
    }
}
