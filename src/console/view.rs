//! What each page shows, as JSON, from a snapshot of the caches: pure, so a page's
//! content is table-tested. The tables are the CLI's own rows (`overseer swarms`,
//! `goals`, `ps`), so the console and the terminal never disagree.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Event;
use kube::ResourceExt;
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::commands::output::{Listed, age, sort};
use crate::goal::Goal;
use crate::kinds::messages::SendOutcome;
use crate::swarm::Swarm;

/// A page's address: which view, and of which object.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(tag = "view", rename_all = "lowercase")]
pub enum Page {
    Runs,
    Swarm { namespace: String, name: String },
    Agent { namespace: String, name: String },
    Goal { namespace: String, name: String },
}

/// The objects a page is made from.
pub struct Snapshot<'a> {
    pub swarms: &'a [Swarm],
    pub goals: &'a [Goal],
    pub agents: &'a [Agent],
    pub events: &'a [Event],
    /// Why a watch fails now, for the page to say.
    pub trouble: Option<&'a str>,
    pub now: Timestamp,
}

/// The page `page` as JSON: `found: false` when its object is not (or no longer) there.
pub fn page(page: &Page, snapshot: &Snapshot) -> Value {
    let mut view = match page {
        Page::Runs => runs(snapshot),
        Page::Swarm { namespace, name } => find(snapshot.swarms, namespace, name).map_or_else(
            || missing("Swarm", name),
            |swarm| swarm_page(swarm, snapshot),
        ),
        Page::Agent { namespace, name } => find(snapshot.agents, namespace, name).map_or_else(
            || missing("Agent", name),
            |agent| agent_page(agent, snapshot),
        ),
        Page::Goal { namespace, name } => find(snapshot.goals, namespace, name)
            .map_or_else(|| missing("Goal", name), |goal| goal_page(goal, snapshot)),
    };
    view["trouble"] = json!(snapshot.trouble);
    view
}

fn find<'a, K: ResourceExt>(objects: &'a [K], namespace: &str, name: &str) -> Option<&'a K> {
    objects
        .iter()
        .find(|o| o.namespace().as_deref() == Some(namespace) && o.name_any() == name)
}

fn missing(kind: &str, name: &str) -> Value {
    json!({"found": false, "title": format!("{kind} {name}"),
           "message": format!("There is no {kind} {name} here (deleted, or not yours to read).")})
}

/// A table of `objects` as the CLI prints it, with a NAMESPACE column first and each
/// row's link to its page (on the cell under `named`, the column of its name).
fn table<K: Listed>(
    objects: &[K],
    wide: bool,
    (view, named): (&str, &str),
    now: Timestamp,
) -> Value {
    let mut sorted = objects.to_vec();
    sort(&mut sorted);
    let mut header = vec!["NAMESPACE"];
    header.extend(K::header(wide));
    let rows: Vec<Value> = sorted
        .iter()
        .map(|o| {
            let namespace = o.namespace().unwrap_or_default();
            let mut cells = vec![namespace.clone()];
            cells.extend(o.row(wide, now));
            json!({"cells": cells, "href": format!("#/{view}/{namespace}/{}", o.name_any())})
        })
        .collect();
    let link = header.iter().position(|h| *h == named);
    json!({"header": header, "rows": rows, "link": link})
}

const SWARMS: (&str, &str) = ("swarm", "SWARM");
const GOALS: (&str, &str) = ("goal", "GOAL");
const AGENTS: (&str, &str) = ("agent", "AGENT");

/// Every Swarm (with the tokens its members' current attempts used) and Goal.
fn runs(snapshot: &Snapshot) -> Value {
    let mut swarms = table(snapshot.swarms, false, SWARMS, snapshot.now);
    with_tokens(&mut swarms, snapshot.agents);
    json!({
        "found": true,
        "title": "Runs",
        "swarms": swarms,
        "goals": table(snapshot.goals, false, GOALS, snapshot.now),
    })
}

/// Adds a TOKENS column to a table of swarms: what their members reported using in
/// their current attempts (headless runs report it; `-` when none did).
fn with_tokens(swarms: &mut Value, agents: &[Agent]) {
    let mut used: std::collections::BTreeMap<(String, String), i64> = Default::default();
    for agent in agents {
        let (Some(namespace), Some(swarm)) = (agent.namespace(), agent.spec.swarm.clone()) else {
            continue;
        };
        let tokens = agent
            .status
            .as_ref()
            .and_then(|s| s.activity.as_ref())
            .and_then(|a| a.usage.as_ref())
            .map(|u| u.total_tokens);
        if let Some(tokens) = tokens {
            *used.entry((namespace, swarm)).or_default() += tokens;
        }
    }
    if let Some(header) = swarms["header"].as_array_mut() {
        header.push(json!("TOKENS"));
    }
    for row in swarms["rows"].as_array_mut().into_iter().flatten() {
        let key = (
            row["cells"][0].as_str().unwrap_or_default().to_string(),
            row["cells"][1].as_str().unwrap_or_default().to_string(),
        );
        let cell = used.get(&key).map_or("-".to_string(), i64::to_string);
        if let Some(cells) = row["cells"].as_array_mut() {
            cells.push(json!(cell));
        }
    }
}

/// Those of `objects` that belong to the swarm `name` in `namespace`, by `swarm_of`.
fn in_swarm<K: ResourceExt + Clone>(
    objects: &[K],
    namespace: &str,
    name: &str,
    swarm_of: impl Fn(&K) -> Option<&str>,
) -> Vec<K> {
    objects
        .iter()
        .filter(|o| o.namespace().as_deref() == Some(namespace) && swarm_of(o) == Some(name))
        .cloned()
        .collect()
}

fn swarm_page(swarm: &Swarm, snapshot: &Snapshot) -> Value {
    let namespace = swarm.namespace().unwrap_or_default();
    let name = swarm.name_any();
    let members = in_swarm(snapshot.agents, &namespace, &name, |a| {
        a.spec.swarm.as_deref()
    });
    let goals = in_swarm(snapshot.goals, &namespace, &name, |g| {
        g.spec.swarm.as_deref()
    });
    let escalations: Vec<Value> = members
        .iter()
        .flat_map(|m| {
            let status = m.status.clone().unwrap_or_default();
            status
                .open_escalations()
                .map(|e| {
                    json!({"agent": m.name_any(), "id": e.id, "severity": e.severity.label(),
                       "kind": crate::api::wire_name(e.kind),
                       "reason": e.reason.clone().unwrap_or_default(),
                       "since": age(snapshot.now, e.opened_time.0)})
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let mut related: Vec<(&str, String)> = vec![("Swarm", name.clone())];
    related.extend(members.iter().map(|m| ("Agent", m.name_any())));
    json!({
        "found": true,
        "title": format!("Swarm {name}"),
        "namespace": namespace,
        "name": name,
        "summary": table(std::slice::from_ref(swarm), true, SWARMS, snapshot.now),
        "members": table(&members, false, AGENTS, snapshot.now),
        "goals": table(&goals, false, GOALS, snapshot.now),
        "escalations": escalations,
        "events": timeline(snapshot, &namespace, &related),
    })
}

fn agent_page(agent: &Agent, snapshot: &Snapshot) -> Value {
    let namespace = agent.namespace().unwrap_or_default();
    let name = agent.name_any();
    let status = agent.status.clone().unwrap_or_default();
    let sends = status.sends.clone().unwrap_or_default();
    // Each message a person or agent sent: queued, being delivered, then its outcome.
    let mut messages: Vec<Value> = status
        .inbox
        .iter()
        .map(|m| {
            let state = match Some(m.seq) == sends.in_flight_seq {
                true => "delivering",
                false => "queued",
            };
            json!({"seq": m.seq, "from": m.from, "state": state, "text": m.text,
                   "time": age(snapshot.now, m.sent_time.0)})
        })
        .collect();
    messages.extend(sends.results.iter().map(|r| {
        let state = match r.outcome {
            SendOutcome::Delivered => "delivered",
            SendOutcome::Failed => "failed",
        };
        json!({"seq": r.seq, "from": r.from, "state": state,
               "reason": r.reason.clone().unwrap_or_default(),
               "time": age(snapshot.now, r.time.0)})
    }));
    messages.sort_by_key(|m| std::cmp::Reverse(m["seq"].as_i64()));
    let headless = agent.spec.runtime.mode == Some(crate::api::RuntimeMode::Headless);
    json!({
        "found": true,
        "title": format!("Agent {name}"),
        "namespace": namespace,
        "name": name,
        "swarm": agent.spec.swarm,
        "summary": table(std::slice::from_ref(agent), true, AGENTS, snapshot.now),
        "progress": status.activity.as_ref().and_then(|a| a.summary.clone()),
        "loopEnded": status.current_exit().map(|e| crate::api::wire_name(e.outcome)),
        "headless": headless,
        "pod": status.pod_name,
        "messages": messages,
        "events": timeline(snapshot, &namespace, &[("Agent", name.clone())]),
    })
}

fn goal_page(goal: &Goal, snapshot: &Snapshot) -> Value {
    let namespace = goal.namespace().unwrap_or_default();
    let name = goal.name_any();
    let status = goal.status.clone().unwrap_or_default();
    let dash = || "-".to_string();
    // Before its first status, the steps of its spec, none begun.
    let planned: Vec<Value> = goal
        .spec
        .steps
        .iter()
        .map(|s| {
            json!({"cells": [s.name.clone(), s.role.clone().unwrap_or_else(dash), "Pending",
                             "0", dash(), dash(), dash()]})
        })
        .collect();
    let steps: Vec<Value> = status
        .steps
        .iter()
        .map(|s| {
            let duration = match (&s.started_at, &s.finished_at) {
                (Some(start), Some(end)) => format_span(end.0.duration_since(start.0)),
                (Some(start), None) => format!("{} so far", age(snapshot.now, start.0)),
                _ => dash(),
            };
            let step = match &s.item {
                Some(item) => format!("{} [{item}]", s.name),
                None => s.name.clone(),
            };
            json!({"cells": [step, s.role.clone().unwrap_or_else(dash), format!("{:?}", s.phase),
                             s.attempts.to_string(), duration,
                             s.result.clone().unwrap_or_else(dash),
                             s.message.clone().unwrap_or_else(dash)]})
        })
        .collect();
    json!({
        "found": true,
        "title": format!("Goal {name}"),
        "namespace": namespace,
        "name": name,
        "swarm": goal.spec.swarm,
        "paused": goal.spec.paused,
        "summary": table(std::slice::from_ref(goal), true, GOALS, snapshot.now),
        "steps": {"header": ["STEP", "ROLE", "PHASE", "ATTEMPTS", "DURATION", "RESULT", "MESSAGE"],
                  "rows": if status.steps.is_empty() { planned } else { steps }},
        "message": status.message,
        "events": timeline(snapshot, &namespace, &[("Goal", name.clone())]),
    })
}

fn format_span(span: jiff::SignedDuration) -> String {
    let seconds = span.as_secs().max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m{}s", s / 60, s % 60),
        s => format!("{}h{}m", s / 3600, (s % 3600) / 60),
    }
}

/// The Events of `objects` (kind, name) in `namespace`, newest first, at most 100.
fn timeline(snapshot: &Snapshot, namespace: &str, objects: &[(&str, String)]) -> Value {
    let mut events: Vec<(&Event, Timestamp)> = snapshot
        .events
        .iter()
        .filter(|e| e.metadata.namespace.as_deref() == Some(namespace))
        .filter(|e| {
            let of = &e.involved_object;
            objects.iter().any(|(kind, name)| {
                of.kind.as_deref() == Some(kind) && of.name.as_deref() == Some(name)
            })
        })
        .filter_map(|e| event_time(e).map(|t| (e, t)))
        .collect();
    events.sort_by_key(|(_, time)| std::cmp::Reverse(*time));
    let rows: Vec<Value> = events
        .iter()
        .take(100)
        .map(|(e, time)| {
            let of = &e.involved_object;
            json!({"cells": [
                age(snapshot.now, *time),
                e.type_.clone().unwrap_or_default(),
                e.reason.clone().unwrap_or_default(),
                format!("{}/{}", of.kind.clone().unwrap_or_default().to_lowercase(),
                        of.name.clone().unwrap_or_default()),
                e.message.clone().unwrap_or_default(),
            ]})
        })
        .collect();
    json!({"header": ["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"], "rows": rows})
}

/// When an Event last happened, whichever of its times the writer set.
fn event_time(event: &Event) -> Option<Timestamp> {
    event
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref().map(|t| t.0))
        .or_else(|| event.last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0))
}
