//! `overseer swarms`: each swarm's state, overseer, members and goals, one line each.

use jiff::Timestamp;
use kube::ResourceExt;

use super::output::{Listed, age};
use crate::swarm::{MemberStatus, Swarm};

impl Listed for Swarm {
    /// Swarm, state, overseer (and whether it is ready), members running of all,
    /// working, blocked, goals succeeded of all, age; `wide` adds the members' names.
    fn header(wide: bool) -> Vec<&'static str> {
        let mut header = vec![
            "SWARM",
            "STATE",
            "OVERSEER",
            "AGENTS",
            "WORKING",
            "BLOCKED",
            "ESCALATIONS",
            "MAIL",
            "GOALS",
            "AGE",
        ];
        if wide {
            header.push("MEMBERS");
        }
        header
    }

    fn row(&self, wide: bool, now: Timestamp) -> Vec<String> {
        let status = self.status.clone().unwrap_or_default();
        let dash = || "-".to_string();
        let agents = &status.agents;
        let goals = &status.goals;
        let mut row = vec![
            self.name_any(),
            status.state().map_or_else(dash, |s| format!("{s:?}")),
            status.overseer.as_ref().map_or_else(dash, |o| {
                format!(
                    "{} ({})",
                    o.name,
                    if o.ready { "ready" } else { "not ready" }
                )
            }),
            match agents.queued {
                0 => format!("{}/{}", agents.running, agents.total),
                queued => format!("{}/{} +{queued} queued", agents.running, agents.total),
            },
            agents.working.to_string(),
            agents.blocked.to_string(),
            agents.escalations.to_string(),
            agents.unread_mail.to_string(),
            format!("{}/{}", goals.succeeded, goals.total),
            self.metadata
                .creation_timestamp
                .as_ref()
                .map_or_else(dash, |t| age(now, t.0)),
        ];
        if wide {
            let members = tree(&status.members, None);
            row.push(if members.is_empty() { dash() } else { members });
        }
        row
    }
}

/// The members spawned by `parent` (None: the roots), each followed by what it spawned
/// in brackets: `lead[a,b[c]],scout`. A member with open escalations or unread mail
/// says so: `scout(1!,2✉)`.
fn tree(members: &[MemberStatus], parent: Option<&str>) -> String {
    members
        .iter()
        .filter(|m| m.parent.as_deref() == parent)
        .map(|m| {
            let mark = match (m.escalations, m.unread_mail) {
                (0, 0) => String::new(),
                (e, 0) => format!("({e}!)"),
                (0, u) => format!("({u}✉)"),
                (e, u) => format!("({e}!,{u}✉)"),
            };
            let children = tree(members, Some(&m.name));
            if children.is_empty() {
                format!("{}{mark}", m.name)
            } else {
                format!("{}{mark}[{children}]", m.name)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::output::{ListArgs, Output, render};

    #[test]
    fn each_swarm_shows_its_state_members_and_goals() {
        let swarms: Vec<Swarm> = serde_saphyr::from_str(
            r#"
- metadata: {name: billing, namespace: team, creationTimestamp: "2026-12-01T09:00:00Z"}
  spec: {}
  status:
    overseer: {name: billing-lead, ready: true}
    agents: {total: 4, working: 2, pending: 0, running: 3, done: 1, blocked: 0, failed: 0, suspended: 0, escalations: 1, unreadMail: 2}
    goals: {total: 2, pending: 0, waiting: 0, running: 1, paused: 0, succeeded: 1, failed: 0}
    members: [{name: billing-lead, role: overseer}, {name: billing-scout, role: scout, escalations: 1, unreadMail: 2}, {name: billing-a, role: builder, parent: billing-lead}, {name: billing-b, role: builder, parent: billing-a, unreadMail: 1}]
    conditions:
      - {type: SpecValid, status: "True", reason: Valid, message: "", lastTransitionTime: "2026-12-01T09:00:00Z"}
      - {type: Ready, status: "True", reason: Ready, message: "", lastTransitionTime: "2026-12-01T09:00:00Z"}
"#,
        )
        .unwrap();
        let now: Timestamp = "2026-12-01T10:00:00Z".parse().unwrap();
        let args = ListArgs {
            all_namespaces: true,
            output: Some(Output::Wide),
            no_headers: true,
        };
        insta::assert_snapshot!(render(&swarms, &args, now).unwrap(), @"team   billing   Ready   billing-lead (ready)   3/4   2   0   1   2   1/2   60m   billing-lead[billing-a[billing-b(1✉)]],billing-scout(1!,2✉)");
    }
}
