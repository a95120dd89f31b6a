//! `overseer ps` (and `kubectl overseer ps`): what is everyone working on, one line per
//! agent; `-w` goes on printing each agent that changes, as `kubectl get -w` does.

use futures::{StreamExt, TryStreamExt};
use jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::watcher;

use super::output::{self, ListArgs, Listed, age};
use crate::Result;
use crate::api::wire_name;
use crate::kinds::agent::Agent;

/// The agent's open escalations: how many and the highest severity (`-`: none).
fn open_escalations(status: &crate::kinds::agent::AgentStatus) -> String {
    let open: Vec<_> = status.open_escalations().collect();
    match open.iter().map(|e| e.severity).max() {
        Some(worst) => format!("{} {}", open.len(), worst.label()),
        None => "-".into(),
    }
}

/// How much mail waits unread in the agent's mailbox (`-`: none).
fn unread_mail(status: &crate::kinds::agent::AgentStatus) -> String {
    match status.unread_mail().count() {
        0 => "-".into(),
        n => format!("{n} unread"),
    }
}

impl Listed for Agent {
    /// Agent, role, phase, activity, since, nudges, summary, and the last message
    /// delivered to it (how long ago, who sent it, its first line); `wide` adds its
    /// runtime, pod, attempt and tokens used.
    fn header(wide: bool) -> Vec<&'static str> {
        let mut header = vec![
            "SWARM",
            "AGENT",
            "ROLE",
            "PHASE",
            "ACTIVITY",
            "SINCE",
            "NUDGES",
            "ESCALATIONS",
            "MAIL",
            "SUMMARY",
            "LAST MESSAGE",
        ];
        if wide {
            header.extend(["RUNTIME", "POD", "ATTEMPT", "TOKENS", "PARENT"]);
        }
        header
    }

    fn row(&self, wide: bool, now: Timestamp) -> Vec<String> {
        let status = self.status.clone().unwrap_or_default();
        let activity = status
            .activity
            .as_ref()
            .filter(|a| a.attempt == status.attempt);
        let dash = || "-".to_string();
        let mut row = vec![
            self.spec.swarm.clone().unwrap_or_else(dash),
            self.name_any(),
            self.spec.role.clone(),
            status.phase.map_or_else(dash, |p| format!("{p:?}")),
            activity.map_or_else(dash, |a| wire_name(a.state)),
            activity
                .and_then(|a| a.since.as_ref())
                .map_or_else(dash, |since| age(now, since.0)),
            status
                .loop_
                .as_ref()
                .map_or_else(|| "0".into(), |l| l.nudges.to_string()),
            open_escalations(&status),
            unread_mail(&status),
            activity
                .and_then(|a| a.summary.clone())
                .map(|s| {
                    s.lines()
                        .next()
                        .unwrap_or_default()
                        .chars()
                        .take(60)
                        .collect()
                })
                .unwrap_or_else(dash),
            status.last_message.as_ref().map_or_else(dash, |m| {
                let excerpt: String = m.excerpt.chars().take(48).collect();
                format!("{} {}: {excerpt}", age(now, m.time.0), m.from)
            }),
        ];
        if wide {
            row.extend([
                status.runtime.map_or_else(dash, wire_name),
                status.pod_name.clone().unwrap_or_else(dash),
                status.attempt.map_or_else(dash, |a| a.to_string()),
                activity
                    .and_then(|a| a.usage.as_ref())
                    .map_or_else(dash, |u| u.total_tokens.to_string()),
                // A member its swarm spawned: the member that asked for it.
                self.labels()
                    .contains_key(crate::labels::PARENT)
                    .then(|| self.spec.overseer.clone())
                    .flatten()
                    .unwrap_or_else(dash),
            ]);
        }
        row
    }

    /// A swarm's agents together, agents of no swarm first.
    fn group(&self) -> Option<String> {
        self.spec.swarm.clone()
    }
}

/// `overseer ps`: the agents as `args` ask; with `watch`, then each agent that changes.
pub async fn run(namespace: Option<&str>, args: &ListArgs, watch: bool) -> Result<()> {
    if !watch {
        return output::list::<Agent>(namespace, args).await;
    }
    let api = output::api::<Agent>(namespace, args.all_namespaces).await?;
    let mut events = watcher(api, watcher::Config::default()).boxed();
    let mut initial = Vec::new();
    let mut listed = false;
    while let Some(event) = events.try_next().await.map_err(watch_failed)? {
        use std::io::Write;
        let text = match event {
            watcher::Event::Init => continue,
            watcher::Event::InitApply(agent) if !listed => {
                initial.push(agent);
                continue;
            }
            watcher::Event::InitDone if !listed => {
                listed = true;
                output::render(&std::mem::take(&mut initial), args, Timestamp::now())?
            }
            watcher::Event::InitDone => continue,
            watcher::Event::InitApply(agent)
            | watcher::Event::Apply(agent)
            | watcher::Event::Delete(agent) => {
                output::render_change(&agent, args, Timestamp::now())?
            }
        };
        print!("{text}");
        std::io::stdout().flush()?;
    }
    Ok(())
}

/// The watch's error; one of the API server's own as it is, so a server out of reach
/// is named.
fn watch_failed(error: watcher::Error) -> crate::Error {
    match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => e.into(),
        other => crate::Error::Watch(format!("watching agents failed: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::output::{Output, render};

    fn list_args(output: Option<Output>) -> ListArgs {
        ListArgs {
            all_namespaces: false,
            output,
            no_headers: false,
        }
    }

    fn wide(all_namespaces: bool) -> ListArgs {
        ListArgs {
            all_namespaces,
            ..list_args(Some(Output::Wide))
        }
    }

    #[test]
    fn escape_sequences_the_agent_wrote_never_reach_the_terminal() {
        let agents: Vec<Agent> = serde_json::from_value(serde_json::json!([{
            "metadata": {"name": "sly", "namespace": "team"},
            "spec": {"runtime": {"name": "claude", "image": "i"}},
            "status": {"attempt": 1, "podName": "sly-1\u{1b}[2J",
                "activity": {"state": "idle", "attempt": 1,
                    "summary": "done\u{1b}[1A\u{1b}[2K\rlead   Done   all good\u{9b}31m"},
                "lastMessage": {"from": "\u{1b}]0;owned\u{7}lead", "excerpt": "ok\u{8}\u{8}",
                    "time": "2026-12-01T10:00:30Z"}}
        }]))
        .unwrap();
        let now: Timestamp = "2026-12-01T10:01:30Z".parse().unwrap();
        let table = render(&agents, &wide(true), now).unwrap();
        assert!(
            !table.chars().any(|c| c.is_control() && c != '\n'),
            "{table:?}"
        );
        assert!(
            table.contains("done [1A [2K lead   Done   all good 31m"),
            "{table}"
        );
    }

    #[test]
    fn one_line_per_agent_current_attempt_only() {
        let agents: Vec<Agent> = serde_saphyr::from_str(
            r#"
- metadata: {name: scout, namespace: team}
  spec: {role: scout, runtime: {name: claude, image: i}}
  status:
    phase: Running
    attempt: 2
    activity: {state: idle, since: "2026-12-01T10:00:00Z", attempt: 2, summary: "mapping the repo\nsecond line"}
    escalations:
    - {id: 1, kind: Requested, severity: info, state: Acknowledged, attempt: 2, openedTime: "2026-12-01T10:00:00Z"}
    - {id: 2, kind: NudgesExhausted, severity: critical, state: Open, attempt: 2, openedTime: "2026-12-01T10:00:00Z"}
    mailbox:
    - {id: 4, from: lead, seq: 1, body: a, sentTime: "2026-12-01T10:00:00Z"}
    - {id: 5, from: lead, seq: 2, body: b, sentTime: "2026-12-01T10:00:00Z"}
    - {id: 6, from: lead, seq: 3, body: c, sentTime: "2026-12-01T10:00:00Z"}
    mailRead: 4
    loop: {nudges: 3}
    lastMessage: {from: lead, excerpt: "continue: map the tests directory too", time: "2026-12-01T10:00:30Z"}
- metadata: {name: billing-scout, namespace: team}
  spec: {role: scout, swarm: billing}
  status: {phase: Pending}
- metadata: {name: builder, namespace: team}
  spec: {runtime: {name: codex, image: i}}
  status:
    phase: Pending
    attempt: 2
    activity: {state: working, since: "2026-12-01T09:00:00Z", attempt: 1}
"#,
        )
        .unwrap();
        let now: Timestamp = "2026-12-01T10:01:30Z".parse().unwrap();
        insta::assert_snapshot!(render(&agents, &list_args(None), now).unwrap(), @r"
        SWARM     AGENT           ROLE      PHASE     ACTIVITY   SINCE   NUDGES   ESCALATIONS   MAIL       SUMMARY            LAST MESSAGE
        -         builder         builder   Pending   -          -       0        -             -          -                  -
        -         scout           scout     Running   idle       90s     3        1 critical    2 unread   mapping the repo   60s lead: continue: map the tests directory too
        billing   billing-scout   scout     Pending   -          -       0        -             -          -                  -
        ");
    }

    #[test]
    fn wide_adds_the_pod_attempt_runtime_and_tokens_and_json_is_a_list() {
        let agents: Vec<Agent> = serde_saphyr::from_str(
            r#"
- metadata: {name: builder, namespace: team, managedFields: [{manager: overseer-shim}]}
  spec: {runtime: {name: claude, image: i, mode: headless}}
  status:
    phase: Running
    runtime: claude
    attempt: 3
    podName: builder-3
    activity: {state: working, since: "2026-12-01T10:01:00Z", attempt: 3, usage: {runs: 2, inputTokens: 2000, cachedInputTokens: 1600, outputTokens: 100, totalTokens: 2100}}
- metadata: {name: worker, namespace: team, labels: {overseer.dev/parent: builder}}
  spec: {overseer: builder, runtime: {name: claude, image: i}}
"#,
        )
        .unwrap();
        let now: Timestamp = "2026-12-01T10:01:30Z".parse().unwrap();
        insta::assert_snapshot!(render(&agents, &list_args(Some(Output::Wide)), now).unwrap(), @r"
        SWARM   AGENT     ROLE      PHASE     ACTIVITY   SINCE   NUDGES   ESCALATIONS   MAIL   SUMMARY   LAST MESSAGE   RUNTIME   POD         ATTEMPT   TOKENS   PARENT
        -       builder   builder   Running   working    30s     0        -             -      -         -              claude    builder-3   3         2100     -
        -       worker    builder   -         -          -       0        -             -      -         -              -         -           -         -        builder
        ");
        let json: serde_json::Value =
            serde_json::from_str(&render(&agents, &list_args(Some(Output::Json)), now).unwrap())
                .unwrap();
        assert_eq!(
            (
                json["kind"].as_str(),
                json["items"][0]["metadata"]["name"].as_str()
            ),
            (Some("List"), Some("builder"))
        );
        assert!(
            json["items"][0]["metadata"].get("managedFields").is_none(),
            "as kubectl shows them"
        );
        let yaml = render(&agents, &list_args(Some(Output::Yaml)), now).unwrap();
        assert!(
            yaml.contains("kind: List") && yaml.contains("totalTokens: 2100"),
            "{yaml}"
        );
    }
}
