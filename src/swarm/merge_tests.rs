use serde_json::json;

use super::*;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).unwrap()
}

fn sha(n: u8) -> String {
    format!("{n:x}").repeat(40)[..40].to_string()
}

fn swarm(queue: serde_json::Value, last_id: i64) -> Swarm {
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Swarm",
        "metadata": {"name": "team", "namespace": "ns", "uid": "u"},
        "spec": {
            "workspace": {"git": {"url": "https://git.example/r.git", "ref": "trunk"}},
            "coordination": {"merge": {"attempts": 2}},
            "agents": [{"name": "a", "role": "builder"}, {"name": "b", "role": "builder"}]
        },
        "status": {"mergeQueue": queue, "lastMergeId": last_id}
    }))
    .unwrap()
}

fn member(name: &str, requests: serde_json::Value) -> Agent {
    serde_json::from_value(json!({
        "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"role": "builder", "swarm": "team"},
        "status": {"mergeRequests": requests}
    }))
    .unwrap()
}

fn ask(member: &str, seq: i64, sha: &str, secs: i64) -> serde_json::Value {
    json!({"seq": seq, "branch": format!("overseer/{member}"), "sha": sha, "time": at(secs).to_string()})
}

fn entry(id: i64, member: &str, state: &str, attempts: i64) -> serde_json::Value {
    json!({"id": id, "member": member, "seq": id, "branch": "overseer/x", "sha": sha(id as u8),
           "state": state, "attempts": attempts, "requestedTime": at(id).to_string()})
}

fn states(plan: &MergePlan) -> Vec<(i64, MergeState, i64)> {
    plan.queue
        .iter()
        .map(|e| (e.id, e.state, e.attempts))
        .collect()
}

#[test]
fn requests_queue_first_come_first_served_one_at_a_time_and_a_newer_one_supersedes() {
    let a = member(
        "team-a",
        json!([ask("team-a", 1, &sha(1), 10), ask("team-a", 2, &sha(2), 30)]),
    );
    let b = member("team-b", json!([ask("team-b", 1, &sha(3), 20)]));
    let plan = plan(&swarm(json!([]), 0), &[a, b], |_| Attempt::Missing, at(40));
    assert_eq!(
        states(&plan),
        [
            (1, MergeState::Superseded, 0),
            (2, MergeState::Merging, 1),
            (3, MergeState::Queued, 0)
        ],
        "a's second came before its first had its turn: b's goes first"
    );
    assert_eq!(plan.start, Some((2, 1)));
    assert_eq!(plan.last_id, 3);
    let c = member("team-a", json!([ask("team-a", 3, &sha(4), 50)]));
    let later = super::plan(
        &swarm(serde_json::to_value(&plan.queue).unwrap(), 3),
        &[c],
        |_| Attempt::Running,
        at(60),
    );
    assert_eq!(
        states(&later),
        [
            (1, MergeState::Superseded, 0),
            (2, MergeState::Merging, 1),
            (3, MergeState::Superseded, 0),
            (4, MergeState::Queued, 0)
        ]
    );
    assert_eq!(later.start, None, "one at a time");
    let told: Vec<(i64, MergeState)> = later.answers["team-a"]
        .records
        .iter()
        .map(|(r, _)| (r.seq, r.state))
        .collect();
    assert_eq!(told, [(2, MergeState::Superseded), (3, MergeState::Queued)]);
}

/// (case, what the attempt reported, the entry after, its attempts, mail starts with, escalated)
#[test]
fn an_attempts_report_ends_the_entry_or_tries_again_until_the_attempts_run_out() {
    let conflict = Landing::Conflict {
        paths: vec!["src/a.rs".into(), "README.md".into()],
    };
    let failed = Landing::ChecksFailed {
        check: "test".into(),
        tail: "1 failed".into(),
    };
    type Row<'a> = (
        &'a str,
        i64,
        Attempt,
        MergeState,
        i64,
        Option<&'a str>,
        bool,
    );
    let rows: Vec<Row> = vec![
        (
            "merged",
            1,
            Attempt::Ended(Some(Landing::Merged { sha: sha(9) })),
            MergeState::Merged,
            1,
            Some("Your commit 111111111111 of overseer/x is merged onto trunk as 9999"),
            false,
        ),
        (
            "merged before a stop",
            1,
            Attempt::Ended(Some(Landing::AlreadyMerged { sha: sha(9) })),
            MergeState::Merged,
            1,
            Some("Your commit 111111111111 of overseer/x is merged onto trunk"),
            false,
        ),
        (
            "a conflict",
            1,
            Attempt::Ended(Some(conflict)),
            MergeState::Conflict,
            1,
            Some(
                "Your commit 111111111111 of overseer/x conflicts with trunk in: src/a.rs, README.md.",
            ),
            false,
        ),
        (
            "a failing check",
            1,
            Attempt::Ended(Some(failed)),
            MergeState::ChecksFailed,
            1,
            Some(
                "Your commit 111111111111 of overseer/x was not landed: the check test failed; trunk is unchanged. The end of its output:\n1 failed",
            ),
            false,
        ),
        (
            "the target moved",
            1,
            Attempt::Ended(Some(Landing::TargetMoved)),
            MergeState::Merging,
            2,
            None,
            false,
        ),
        (
            "no report",
            1,
            Attempt::Ended(None),
            MergeState::Merging,
            2,
            None,
            false,
        ),
        (
            "the last attempt",
            2,
            Attempt::Ended(Some(Landing::TargetMoved)),
            MergeState::Failed,
            2,
            Some(
                "Your commit 111111111111 of overseer/x was not landed: 2 attempts ran out; the last: trunk moved",
            ),
            true,
        ),
        (
            "not on the branch",
            1,
            Attempt::Ended(Some(Landing::NotOnBranch {
                reason: "gone".into(),
            })),
            MergeState::Refused,
            1,
            None,
            false,
        ),
        (
            "still running",
            1,
            Attempt::Running,
            MergeState::Merging,
            1,
            None,
            false,
        ),
    ];
    for (case, attempts, report, state, after, mail, escalated) in rows {
        let swarm = swarm(
            json!([
                entry(1, "team-a", "Merging", attempts),
                entry(2, "team-b", "Queued", 0)
            ]),
            2,
        );
        let plan = plan(&swarm, &[], |_| report.clone(), at(100));
        assert_eq!(
            (plan.queue[0].state, plan.queue[0].attempts),
            (state, after),
            "{case}"
        );
        let told = plan.answers.get("team-a");
        let said = told
            .and_then(|a| a.records.first())
            .and_then(|(_, m)| m.clone());
        assert_eq!(
            said.as_deref()
                .map(|m| &m[..mail.map_or(0, str::len).min(m.len())]),
            mail,
            "{case}"
        );
        assert_eq!(
            told.is_some_and(|a| a.escalation.is_some()),
            escalated,
            "{case}"
        );
        let next = match (state, after) {
            (MergeState::Merging, 1) => None,
            (MergeState::Merging, n) => Some((1, n)),
            _ => Some((2, 1)),
        };
        assert_eq!(
            plan.start, next,
            "{case}: the next attempt or the next entry"
        );
        if !matches!(report, Attempt::Running) {
            assert_eq!(plan.delete, [format!("team-merge-1-{attempts}")], "{case}");
        }
    }
}

#[test]
fn a_request_taken_before_a_stop_is_answered_as_the_queue_has_it_and_written_once() {
    let queued = swarm(json!([entry(1, "team-a", "Merging", 1)]), 1);
    let a = member(
        "team-a",
        json!([{"seq": 1, "branch": "overseer/x", "sha": sha(1), "time": at(1).to_string()}]),
    );
    let plan = plan(&queued, &[a], |_| Attempt::Missing, at(5));
    assert_eq!(
        states(&plan),
        [(1, MergeState::Merging, 1)],
        "not queued twice"
    );
    assert_eq!(plan.start, Some((1, 1)), "its pod made again");
    let answer = &plan.answers["team-a"];
    let (ledger, mail, escalate) = answered(None, answer).unwrap();
    assert_eq!(
        (ledger.answered, ledger.records[0].state),
        (1, MergeState::Merging)
    );
    assert!(mail.is_empty() && !escalate);
    assert_eq!(answered(Some(&ledger), answer), None);
}

#[test]
fn without_a_policy_a_request_is_refused_and_a_long_queue_keeps_what_is_pending() {
    let mut bare = swarm(json!([]), 0);
    bare.spec.coordination = None;
    let a = member("team-a", json!([ask("team-a", 1, &sha(1), 1)]));
    let plan = plan(&bare, &[a], |_| Attempt::Missing, at(5));
    assert!(plan.queue.is_empty() && plan.start.is_none());
    let (record, _) = &plan.answers["team-a"].records[0];
    assert_eq!(record.state, MergeState::Refused);
    let mut long: Vec<QueuedMerge> = (1..=120)
        .map(|id| {
            serde_json::from_value(entry(
                id,
                "team-a",
                if id % 2 == 0 { "Merged" } else { "Queued" },
                0,
            ))
            .unwrap()
        })
        .collect();
    prune(&mut long);
    assert_eq!(long.len(), QUEUE_KEPT);
    assert_eq!(
        long.iter()
            .filter(|e| e.state == MergeState::Queued)
            .count(),
        60
    );
}

#[test]
fn an_outcome_reached_before_the_request_was_answered_is_still_mailed() {
    let merging = swarm(json!([entry(1, "team-a", "Merging", 1)]), 1);
    let a = member(
        "team-a",
        json!([{"seq": 1, "branch": "overseer/x", "sha": sha(1), "time": at(1).to_string()}]),
    );
    let landed = Attempt::Ended(Some(Landing::Merged { sha: sha(9) }));
    let plan = plan(&merging, &[a], |_| landed.clone(), at(5));
    let answer = &plan.answers["team-a"];
    assert_eq!(answer.answered, 1);
    let (record, mail) = &answer.records[0];
    assert_eq!(record.state, MergeState::Merged);
    assert!(
        mail.as_deref()
            .is_some_and(|m| m.contains("is merged onto trunk")),
        "{mail:?}"
    );
}

#[test]
fn an_outcome_written_to_the_queue_but_not_to_its_author_is_told_later_once() {
    // A stop after the queue's write (Merged) and before the author's answer.
    let mut landed: serde_json::Value = entry(1, "team-a", "Merged", 1);
    landed["reason"] = json!(format!("merged onto trunk as {}", sha(9)));
    let queue = swarm(json!([landed]), 1);
    let shown = |state: &str| -> Agent {
        serde_json::from_value(json!({
            "apiVersion": "overseer.dev/v1alpha1", "kind": "Agent",
            "metadata": {"name": "team-a", "namespace": "ns"},
            "spec": {"role": "builder", "swarm": "team"},
            "status": {"merges": {"answered": 1, "records": [
                {"seq": 1, "sha": sha(1), "state": state, "time": at(1).to_string()}]}}
        }))
        .unwrap()
    };
    let plan = plan(&queue, &[shown("Merging")], |_| Attempt::Missing, at(5));
    let (record, mail) = &plan.answers["team-a"].records[0];
    assert_eq!(record.state, MergeState::Merged);
    assert_eq!(
        mail.as_deref(),
        Some(
            format!(
                "Your commit 111111111111 of overseer/x is merged onto trunk as {}.",
                sha(9)
            )
            .as_str()
        )
    );
    let told = super::plan(&queue, &[shown("Merged")], |_| Attempt::Missing, at(6));
    assert!(told.answers.is_empty(), "told once");
}

#[test]
fn a_member_lands_only_its_own_branch() {
    let b = member("team-b", json!([ask("team-a", 1, &sha(1), 1)]));
    let plan = plan(&swarm(json!([]), 0), &[b], |_| Attempt::Missing, at(5));
    assert!(plan.queue.is_empty());
    let (record, _) = &plan.answers["team-b"].records[0];
    assert_eq!(record.state, MergeState::Refused);
    assert_eq!(
        record.reason.as_deref(),
        Some("a member lands its own branch (overseer/team-b), not overseer/team-a")
    );
}

#[test]
fn the_guards_refuse_pushes_to_the_branch_the_queue_lands_on() {
    let swarm = swarm(json!([]), 0);
    let policy = swarm.spec.coordination.clone().unwrap().merge.unwrap();
    let workspace = swarm.spec.workspace.as_ref();
    assert_eq!(target(&swarm, &policy), "trunk");
    assert_eq!(
        crate::guard::targets(Some(&policy), workspace),
        [target(&swarm, &policy)]
    );
}
