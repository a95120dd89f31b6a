//! The overseer's toolkit (and a person's): `overseer peek`, `overseer send`,
//! `overseer loop release|add|remove`. Each is one or two API calls that the
//! caller's own permissions allow or refuse; nothing here execs into a pod: the
//! operator delivers every message.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{LogParams, Patch, PatchParams};
use kube::runtime::wait::await_condition;
use serde_json::json;

use super::access::{WRITE_TRIES, agents, get, own_status, refused, retry_pause};
use crate::api::{LOOP_MANAGER, WATCH_PR_MANAGER, pod_env};
use crate::delivery::inbox;
use crate::kinds::agent::{
    Agent, AgentExit, ExitOutcome, InboxMessage, MAX_SEND_BYTES, SendOutcome, SendResult,
};
use crate::kinds::agent_pod::CONTAINER;
use crate::{Error, Result};

/// Field manager of senders' inbox writes.
const SEND_MANAGER: &str = "overseer-send";
/// Inbox messages waiting at once, at most (the schema's limit).
const INBOX_LIMIT: usize = 16;

/// `overseer peek AGENT`: the last `lines` lines the agent's pod logged (what the
/// shim mirrors of the agent's screen or output).
pub async fn peek(namespace: Option<&str>, agent: &str, lines: i64) -> Result<()> {
    let (_, pods, pod) = current_pod(namespace, agent).await?;
    let params = LogParams {
        container: Some(CONTAINER.into()),
        tail_lines: Some(lines),
        ..Default::default()
    };
    let log = pods
        .logs(&pod, &params)
        .await
        .map_err(|e| refused("read the log of", agent, e))?;
    print!("{}", screen_lines(&log));
    Ok(())
}

/// The CLI's screen as the shim mirrored it into the container log, without the
/// shim's own log lines (its tracing output, which shares the log) and without any
/// terminal escape sequence: what the overseer's model reads is the agent's screen only.
pub fn screen_lines(log: &str) -> String {
    let mut screen = String::new();
    for line in log.lines() {
        let plain = without_escapes(line);
        if is_shim_log_line(&plain) {
            continue;
        }
        screen.push_str(&plain);
        screen.push('\n');
    }
    screen
}

/// A line of the shim's own tracing output: an RFC 3339 time, a level, then the
/// `overseer` module that logged it.
fn is_shim_log_line(line: &str) -> bool {
    let mut words = line.split_whitespace();
    let time = words.next().unwrap_or_default();
    let level = words.next().unwrap_or_default();
    let target = words.next().unwrap_or_default();
    time.parse::<jiff::Timestamp>().is_ok()
        && matches!(level, "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR")
        && target.starts_with("overseer")
}

/// `line` without ANSI escape sequences (CSI such as colours, and any other ESC pair)
/// and other control characters but tab.
fn without_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // CSI: parameters and intermediates up to a final byte in @..~; any other
            // escape is ESC and the one character after it.
            '\u{1b}' => {
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Agent `agent`, the pods of its namespace and the name of its current pod.
pub(crate) async fn current_pod(
    namespace: Option<&str>,
    agent: &str,
) -> Result<(Agent, Api<Pod>, String)> {
    let api = agents(namespace).await?;
    let found = get(&api, "read", agent).await?;
    // The pod's name follows from the attempt; `status.podName` is the agent's to write.
    let pod = found
        .status
        .as_ref()
        .and_then(|s| s.attempt)
        .map(|attempt| crate::kinds::agent_pod::pod_name(agent, attempt))
        .ok_or_else(|| Error::NotReady(format!("agent {agent} has no pod yet")))?;
    let pods: Api<Pod> = Api::namespaced(api.clone().into_client(), &namespace_of(&api, namespace));
    // Only the pod the operator made for this agent: one of that name made by someone
    // else is never read, followed or attached to.
    let current = pods
        .get_opt(&pod)
        .await
        .map_err(|e| refused("read the pod of", agent, e))?
        .ok_or_else(|| Error::NotReady(format!("agent {agent} has no pod {pod}")))?;
    if crate::kinds::agent_pod::own_pod(&found, &(&current).into()).is_none() {
        return Err(Error::Refused(format!(
            "pod {pod} is not the operator's pod of agent {agent}: refused"
        )));
    }
    Ok((found, pods, pod))
}

fn namespace_of(api: &Api<Agent>, namespace: Option<&str>) -> String {
    namespace.map_or_else(
        || api.clone().into_client().default_namespace().to_string(),
        String::from,
    )
}

/// The inbox after queueing `text`: handled messages are dropped, the new one gets
/// the next seq. Refuses an empty or oversized message and a full inbox.
pub fn enqueue(agent: &Agent, from: &str, text: &str, now: Timestamp) -> Result<Vec<InboxMessage>> {
    if text.trim().is_empty() {
        return Err(Error::Usage("the message is empty".into()));
    }
    if text.len() > MAX_SEND_BYTES {
        return Err(Error::Usage(format!(
            "the message is {} bytes; at most {MAX_SEND_BYTES} are sent",
            text.len()
        )));
    }
    let status = agent.status.clone().unwrap_or_default();
    let pending = inbox::pending_messages(&status);
    if pending.len() >= INBOX_LIMIT {
        return Err(Error::Busy(format!(
            "{INBOX_LIMIT} messages are already waiting for this agent; send again once they are delivered"
        )));
    }
    let sends = status.sends.clone().unwrap_or_default();
    // The message in flight stays: an operator that stopped while delivering it
    // delivers it again from here.
    let in_flight = status
        .inbox
        .iter()
        .filter(|m| Some(m.seq) == sends.in_flight_seq);
    let mut inbox: Vec<InboxMessage> = in_flight.chain(&pending).cloned().collect();
    let last = inbox
        .iter()
        .map(|m| m.seq)
        .chain(sends.results.iter().map(|r| r.seq))
        .chain([sends.handled_seq])
        .max()
        .unwrap_or(0);
    inbox.push(InboxMessage {
        seq: last.saturating_add(1),
        from: from.to_string(),
        text: text.to_string(),
        sent_time: Time(now),
    });
    Ok(inbox)
}

/// `overseer send AGENT`: queues `text` on the agent (see [`queue`]), then waits up to
/// `wait` for the operator to report its delivery.
pub async fn send(
    namespace: Option<&str>,
    agent: &str,
    from: &str,
    text: &str,
    wait: Duration,
) -> Result<()> {
    let api = agents(namespace).await?;
    let seq = queue(&api, agent, from, text).await?;
    if wait.is_zero() {
        println!("message #{seq} queued for {agent}");
        return Ok(());
    }
    let Some(result) = await_result(&api, agent, seq, wait).await? else {
        return Err(Error::NotReady(format!(
            "message #{seq} is still queued for {agent} after {}s (is its pod ready?); it is delivered once the pod can take it, or reported failed (the operator's --send-expiry)",
            wait.as_secs(),
        )));
    };
    match result {
        Some(SendResult {
            outcome: SendOutcome::Delivered,
            ..
        }) => {
            println!("message #{seq} delivered to {agent}");
            Ok(())
        }
        Some(result) => Err(Error::NotDelivered(format!(
            "message #{seq} was not delivered to {agent}: {}",
            result.reason.unwrap_or_default()
        ))),
        None => Err(Error::NotFound(format!("{agent} was deleted"))),
    }
}

/// Queues `text` from `from` on the agent's inbox (optimistic concurrency on its
/// resourceVersion, so concurrent senders never lose a message); returns its seq, by
/// which the operator reports its delivery. The operator delivers it at most once.
pub async fn queue(api: &Api<Agent>, agent: &str, from: &str, text: &str) -> Result<i64> {
    let mut seq = None;
    for _ in 0..WRITE_TRIES {
        let current = get(api, "send to", agent).await?;
        let inbox = enqueue(&current, from, text, Timestamp::now())?;
        // A message answers the agent's open escalations.
        let mut status = super::escalation::answer_fields(
            current.status.as_ref().unwrap_or(&Default::default()),
            from,
        );
        status["inbox"] = json!(inbox);
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "status": status,
        });
        let params = PatchParams {
            field_manager: Some(SEND_MANAGER.into()),
            ..Default::default()
        };
        match api
            .patch_status(agent, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                seq = inbox.last().map(|m| m.seq);
                break;
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tokio::time::sleep(retry_pause()).await;
            }
            Err(error) => return Err(refused("send to", agent, error)),
        }
    }
    seq.ok_or_else(|| {
        Error::Busy(format!(
            "{agent} changed too often to queue the message; try again"
        ))
    })
}

/// Waits up to `wait` for message `seq`'s result: None when the time ran out,
/// Some(None) when the agent was deleted. Watches the agent; when the watch fails (a
/// sender allowed to get but not to watch, or a broken stream) it reads the agent
/// every second instead, so a queued message is never reported as failed for that.
async fn await_result(
    api: &Api<Agent>,
    agent: &str,
    seq: i64,
    wait: Duration,
) -> Result<Option<Option<SendResult>>> {
    const POLL: Duration = Duration::from_secs(1);
    let deadline = tokio::time::Instant::now() + wait;
    let settled = |a: Option<&Agent>| result_of(a, seq).is_some();
    let watched = tokio::time::timeout_at(deadline, await_condition(api.clone(), agent, settled));
    match watched.await {
        Err(_) => return Ok(None),
        Ok(Ok(found)) => return Ok(Some(result_of(found.as_ref(), seq))),
        Ok(Err(error)) => tracing::debug!(%error, "watching the agent failed; reading it instead"),
    }
    loop {
        match api.get_opt(agent).await {
            Ok(None) => return Ok(Some(None)),
            Ok(Some(current)) => {
                if let Some(result) = result_of(Some(&current), seq) {
                    return Ok(Some(Some(result)));
                }
            }
            Err(error) => return Err(refused("read", agent, error)),
        }
        if tokio::time::Instant::now() + POLL > deadline {
            return Ok(None);
        }
        tokio::time::sleep(POLL).await;
    }
}

fn result_of(agent: Option<&Agent>, seq: i64) -> Option<SendResult> {
    agent?
        .status
        .as_ref()?
        .sends
        .as_ref()?
        .results
        .iter()
        .find(|r| r.seq == seq)
        .cloned()
}

/// `overseer loop release AGENT --reason R`: its overseer stops driving it; the
/// loop of its current attempt ends with outcome `released`.
pub async fn release(namespace: Option<&str>, agent: &str, reason: &str) -> Result<String> {
    let api = agents(namespace).await?;
    let current = get(&api, "release", agent).await?;
    let status = current.status.clone().unwrap_or_default();
    if let Some(exit) = status.current_exit() {
        return Ok(format!(
            "{agent} already ended its loop ({:?})",
            exit.outcome
        ));
    }
    let attempt = status
        .attempt
        .ok_or_else(|| Error::NotReady(format!("{agent} has not started yet")))?;
    let exit = AgentExit {
        outcome: ExitOutcome::Released,
        reason: Some(reason.chars().take(1024).collect()),
        time: Some(Time(Timestamp::now())),
        attempt,
    };
    let mut fields = super::escalation::answer_fields(&status, &answerer());
    fields["exit"] = json!(exit);
    let patch = json!({"status": fields});
    api.patch_status(agent, &loop_params(), &Patch::Merge(&patch))
        .await
        .map_err(|e| refused("release", agent, e))?;
    Ok(format!("{agent} released: its loop has ended"))
}

/// `overseer watch-pr URL [--stop]`, in an agent pod: asks the operator to watch the
/// pull request for this agent (or to stop). The agent writes only its own status;
/// the operator makes the PRWatch, for this agent, with the access a person set.
pub async fn watch_pr(namespace: Option<&str>, agent: &str, url: &str, stop: bool) -> Result<()> {
    if crate::prwatch::github::PullRequest::parse(url).is_none() {
        return Err(Error::Usage(format!(
            "{url} is not a pull request URL: https://HOST/OWNER/REPO/pull/N"
        )));
    }
    let api = agents(namespace).await?;
    // The list is written onto the version it was read from (409 when another request
    // landed meanwhile, then read again), so concurrent requests are all kept.
    let mut written = false;
    for _ in 0..WRITE_TRIES {
        let current = own_status(&api, "ask a pull request watch for", agent).await?;
        let version = current
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        let status = current.status.unwrap_or_default();
        let requests = crate::agent::pr_watches::requested(&status.watch_requests, url, stop)?;
        match crate::api::apply_status_at(
            &api,
            agent,
            WATCH_PR_MANAGER,
            &version,
            &json!({"watchRequests": requests}),
        )
        .await
        {
            Ok(_) => {
                written = true;
                break;
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tokio::time::sleep(retry_pause()).await;
            }
            Err(error) => return Err(refused("ask a pull request watch for", agent, error)),
        }
    }
    if !written {
        return Err(Error::Busy(format!(
            "{agent} changed too often to record the request; try again"
        )));
    }
    match stop {
        true => println!("{agent}: asked to stop watching {url}"),
        false => println!(
            "{agent}: asked to watch {url}; you are woken when CI settles or feedback arrives"
        ),
    }
    Ok(())
}

/// Who answers an agent: the agent whose pod this runs in, else a person.
fn answerer() -> String {
    std::env::var(pod_env::AGENT).unwrap_or_else(|_| "user".into())
}

fn loop_params() -> PatchParams {
    PatchParams {
        field_manager: Some(LOOP_MANAGER.into()),
        ..Default::default()
    }
}

/// `overseer loop add|remove AGENT`: turns the agent's loop on or off through the
/// `overseer.dev/loop` annotation (the CLI never writes spec). Adding also takes back
/// an exit of the current attempt (done, block, release), so the agent is driven again.
pub async fn set_loop(namespace: Option<&str>, agent: &str, enabled: bool) -> Result<String> {
    let api = agents(namespace).await?;
    let current = get(&api, "change the loop of", agent).await?;
    let switch = if enabled { "on" } else { "off" };
    let patch =
        json!({"metadata": {"annotations": {crate::agent::decide::LOOP_ANNOTATION: switch}}});
    api.patch(agent, &loop_params(), &Patch::Merge(&patch))
        .await
        .map_err(|e| refused("change the loop of", agent, e))?;
    let status = current.status.unwrap_or_default();
    if enabled {
        let answer = super::escalation::answer_fields(&status, &answerer());
        if answer.as_object().is_some_and(|a| !a.is_empty()) {
            api.patch_status(
                agent,
                &loop_params(),
                &Patch::Merge(&json!({"status": answer})),
            )
            .await
            .map_err(|e| refused("acknowledge the escalations of", agent, e))?;
        }
    }
    if enabled && status.current_exit().is_some() {
        let patch = json!({"status": {"exit": null}});
        api.patch_status(agent, &loop_params(), &Patch::Merge(&patch))
            .await
            .map_err(|e| refused("take back the exit of", agent, e))?;
        return Ok(format!("{agent}: loop on; its earlier exit was taken back"));
    }
    Ok(format!(
        "{agent}: loop {}",
        if enabled { "on" } else { "off" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::agent::SendStatus;

    fn agent(inbox: Vec<InboxMessage>, sends: Option<SendStatus>) -> Agent {
        let mut agent: Agent = serde_saphyr::from_str(
            "apiVersion: overseer.dev/v1alpha1\nkind: Agent\nmetadata: {name: b}\nspec: {runtime: {name: pi, image: x}}\n",
        )
        .unwrap();
        agent.status = Some(crate::kinds::agent::AgentStatus {
            inbox,
            sends,
            ..Default::default()
        });
        agent
    }

    fn queued(seq: i64) -> InboxMessage {
        InboxMessage {
            seq,
            from: "lead".into(),
            text: "go".into(),
            sent_time: Time(Timestamp::UNIX_EPOCH),
        }
    }

    #[test]
    fn peek_shows_the_screen_without_the_shims_log_lines_or_colours() {
        let log = concat!(
            "\u{1b}[2m2026-12-05T20:16:19.730272Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[2moverseer::shim\u{1b}[0m\u{1b}[2m:\u{1b}[0m shim started\n",
            "2026-12-05T20:16:20.1Z  WARN overseer::shim::tmux: a dialog was answered\n",
            "> implementing proration\n",
            "\u{1b}[1mtests pass\u{1b}[0m\n",
            "2026-12-05 is the date in the plan\n",
        );
        assert_eq!(
            screen_lines(log),
            "> implementing proration\ntests pass\n2026-12-05 is the date in the plan\n"
        );
    }

    #[test]
    fn enqueue_drops_handled_messages_and_takes_the_next_seq() {
        let sends = SendStatus {
            handled_seq: 2,
            in_flight_seq: None,
            in_flight_attempt: None,
            results: vec![],
        };
        let inbox = enqueue(
            &agent(vec![queued(1), queued(2), queued(3)], Some(sends)),
            "lead",
            "continue",
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(inbox.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![3, 4]);
        assert_eq!(inbox[1].text, "continue");
        // Seq never goes back, even with an empty inbox.
        let fresh = SendStatus {
            handled_seq: 7,
            in_flight_seq: None,
            in_flight_attempt: None,
            results: vec![],
        };
        let inbox = enqueue(
            &agent(vec![], Some(fresh)),
            "lead",
            "x",
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(inbox[0].seq, 8);
    }

    #[test]
    fn enqueue_keeps_the_message_in_flight() {
        let sends = SendStatus {
            handled_seq: 2,
            in_flight_seq: Some(2),
            in_flight_attempt: Some(1),
            results: vec![],
        };
        let inbox = enqueue(
            &agent(vec![queued(1), queued(2)], Some(sends)),
            "lead",
            "next",
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(inbox.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![2, 3]);
    }

    #[test]
    fn enqueue_refuses_empty_oversized_and_full() {
        let empty = agent(vec![], None);
        for (text, expected) in [
            ("  \n", "empty"),
            (&"x".repeat(MAX_SEND_BYTES + 1) as &str, "at most"),
        ] {
            let error = enqueue(&empty, "lead", text, Timestamp::UNIX_EPOCH).unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
        }
        let full = agent((1..=16).map(queued).collect(), None);
        let error = enqueue(&full, "lead", "x", Timestamp::UNIX_EPOCH).unwrap_err();
        assert!(error.to_string().contains("already waiting"), "{error}");
    }
}
