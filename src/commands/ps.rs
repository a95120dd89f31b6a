//! `overseer ps` (and `kubectl overseer ps`): what is everyone working on.

use jiff::Timestamp;
use kube::api::ListParams;
use kube::{Api, ResourceExt};

use crate::agent::types::Agent;
use crate::Result;
use crate::api::wire_name;

/// What `ps -o` prints, as kubectl's `-o`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Table,
    /// The table with each agent's runtime, pod, attempt and tokens.
    Wide,
    Json,
    Yaml,
}

pub async fn run(namespace: Option<&str>, all_namespaces: bool, output: Output) -> Result<()> {
    let client = crate::timeouts::client(crate::timeouts::ANSWER_DEADLINE).await?;
    let api: Api<Agent> = if all_namespaces {
        Api::all(client)
    } else {
        let ns = namespace.map_or_else(|| client.default_namespace().to_string(), String::from);
        Api::namespaced(client, &ns)
    };
    let agents = api.list(&ListParams::default()).await?.items;
    print!(
        "{}",
        render(&agents, all_namespaces, output, Timestamp::now())?
    );
    Ok(())
}

/// The agents as `output` asks: a table, or a kubectl `List` of them (without their
/// managed fields, as kubectl shows them).
pub fn render(
    agents: &[Agent],
    with_namespace: bool,
    output: Output,
    now: Timestamp,
) -> Result<String> {
    let list = || {
        let items: Vec<Agent> = agents
            .iter()
            .cloned()
            .map(|mut agent| {
                agent.metadata.managed_fields = None;
                agent
            })
            .collect();
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
    };
    Ok(match output {
        Output::Table => table(agents, with_namespace, false, now),
        Output::Wide => table(agents, with_namespace, true, now),
        Output::Json => format!("{}\n", serde_json::to_string_pretty(&list())?),
        Output::Yaml => crate::yaml::to_string(&list())?,
    })
}

/// One line per agent: agent, role, phase, activity, since, nudges, summary, and
/// the last message delivered to it (how long ago, who sent it, its first line);
/// `wide` adds its runtime, pod, attempt and tokens used.
pub fn table(agents: &[Agent], with_namespace: bool, wide: bool, now: Timestamp) -> String {
    let mut header = vec![
        "NAMESPACE",
        "SWARM",
        "AGENT",
        "ROLE",
        "PHASE",
        "ACTIVITY",
        "SINCE",
        "NUDGES",
        "SUMMARY",
        "LAST MESSAGE",
    ];
    if wide {
        header.extend(["RUNTIME", "POD", "ATTEMPT", "TOKENS"]);
    }
    let mut rows: Vec<Vec<String>> = vec![header.into_iter().map(String::from).collect()];
    let mut agents: Vec<&Agent> = agents.iter().collect();
    // Grouped by swarm: a swarm's agents together, agents of no swarm first.
    agents.sort_by_key(|a| (a.namespace(), a.spec.swarm.clone(), a.name_any()));
    for agent in agents {
        let status = agent.status.clone().unwrap_or_default();
        let activity = status
            .activity
            .as_ref()
            .filter(|a| a.attempt == status.attempt);
        let dash = || "-".to_string();
        let mut row = vec![
            agent.namespace().unwrap_or_default(),
            agent.spec.swarm.clone().unwrap_or_else(dash),
            agent.name_any(),
            agent.spec.role.clone(),
            status.phase.map_or_else(dash, |p| format!("{p:?}")),
            activity.map_or_else(dash, |a| wire_name(a.state)),
            activity
                .and_then(|a| a.since.as_ref())
                .map_or_else(dash, |since| age(now, since.0)),
            status
                .loop_
                .as_ref()
                .map_or_else(|| "0".into(), |l| l.nudges.to_string()),
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
            ]);
        }
        // Status is the agent's to write: no escape sequence of its reaches the
        // person's terminal (a cursor move or a cleared screen could forge the table).
        rows.push(row.into_iter().map(|cell| printable(&cell)).collect());
    }
    let skip = usize::from(!with_namespace);
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(c, cell)| format!("{cell:<width$}", width = widths[c]))
            .collect();
        out.push_str(cells.join("   ").trim_end());
        out.push('\n');
    }
    out
}

/// `cell` with every control character (ESC, CR, BEL, C1 controls) as a space.
fn printable(cell: &str) -> String {
    cell.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A short age such as `45s`, `12m` or `3h`.
fn age(now: Timestamp, then: Timestamp) -> String {
    let seconds = now.duration_since(then).as_secs().max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let table = table(&agents, true, true, now);
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
        insta::assert_snapshot!(table(&agents, false, false, now), @r"
        SWARM     AGENT           ROLE      PHASE     ACTIVITY   SINCE   NUDGES   SUMMARY            LAST MESSAGE
        -         builder         builder   Pending   -          -       0        -                  -
        -         scout           scout     Running   idle       90s     3        mapping the repo   60s lead: continue: map the tests directory too
        billing   billing-scout   scout     Pending   -          -       0        -                  -
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
"#,
        )
        .unwrap();
        let now: Timestamp = "2026-12-01T10:01:30Z".parse().unwrap();
        insta::assert_snapshot!(render(&agents, false, Output::Wide, now).unwrap(), @r"
        SWARM   AGENT     ROLE      PHASE     ACTIVITY   SINCE   NUDGES   SUMMARY   LAST MESSAGE   RUNTIME   POD         ATTEMPT   TOKENS
        -       builder   builder   Running   working    30s     0        -         -              claude    builder-3   3         2100
        ");
        let json: serde_json::Value =
            serde_json::from_str(&render(&agents, false, Output::Json, now).unwrap()).unwrap();
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
        let yaml = render(&agents, false, Output::Yaml, now).unwrap();
        assert!(
            yaml.contains("kind: List") && yaml.contains("totalTokens: 2100"),
            "{yaml}"
        );
    }
}
