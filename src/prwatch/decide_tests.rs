use std::time::Duration;

use jiff::Timestamp;

use super::*;
use crate::prwatch::github::{Check, FeedbackKind};

const PR: &str = "https://github.com/acme/billing/pull/7";

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn spec(extra: &str) -> PRWatchSpec {
    serde_saphyr::from_str(&format!(
        "url: {PR}\nagent: builder\nquietPeriod: 90s\npollInterval: 60s\ngithub: {{tokenSecretRef: {{name: gh, key: token}}}}\n{extra}"
    ))
    .unwrap()
}

fn check(name: &str, complete: bool, failed: bool) -> Check {
    Check {
        name: name.into(),
        complete,
        failed,
    }
}

fn snapshot(sha: &str, rollup: Option<&str>, checks: Vec<Check>) -> Snapshot {
    Snapshot {
        viewer: "overseer-bot".into(),
        state: "OPEN".into(),
        head_sha: sha.into(),
        rollup_state: rollup.map(String::from),
        checks,
        more_checks: false,
        feedback: vec![],
        rate_limit_remaining: Some(4_999),
    }
}

fn fb(id: &str, author: &str, time: i64) -> Feedback {
    Feedback {
        id: id.into(),
        kind: FeedbackKind::Comment,
        author: Some(author.into()),
        time: at(time),
        location: None,
        url: format!("{PR}#issuecomment-{id}"),
    }
}

/// One poll from `status` with `snapshot` at `now`.
fn poll(spec: &PRWatchSpec, status: Option<&PRWatchStatus>, snapshot: &Snapshot, now: i64) -> Plan {
    plan(&Input {
        name: "pr7",
        generation: Some(1),
        spec,
        status,
        poll: Poll::Done(snapshot),
        agent_ready: true,
        now: at(now),
    })
}

#[test]
fn ci_settles_only_when_every_check_is_complete_and_on_the_first_page() {
    let done = || vec![check("build", true, false), check("lint", true, false)];
    let rows: Vec<(&str, Snapshot, Option<&str>)> = vec![
        ("no checks at all", snapshot("a", None, vec![]), None),
        (
            "rollup pending",
            snapshot("a", Some("PENDING"), done()),
            None,
        ),
        (
            "rollup expected",
            snapshot("a", Some("EXPECTED"), done()),
            None,
        ),
        (
            "success",
            snapshot("a", Some("SUCCESS"), done()),
            Some("success"),
        ),
        (
            "failure",
            snapshot("a", Some("FAILURE"), vec![check("build", true, true)]),
            Some("failure"),
        ),
        (
            "error",
            snapshot("a", Some("ERROR"), done()),
            Some("failure"),
        ),
        (
            "a check still running",
            snapshot(
                "a",
                Some("FAILURE"),
                vec![check("build", true, true), check("e2e", false, false)],
            ),
            None,
        ),
        (
            "more than one page",
            Snapshot {
                more_checks: true,
                ..snapshot("a", Some("SUCCESS"), done())
            },
            None,
        ),
    ];
    for (case, snapshot, expected) in rows {
        assert_eq!(ci_result(&snapshot), expected, "{case}");
    }
}

#[test]
fn each_sha_result_is_reported_once_and_a_rerun_again() {
    let spec = spec("");
    let pending = snapshot(
        "abc1234",
        Some("PENDING"),
        vec![check("build", false, false)],
    );
    let first = poll(&spec, None, &pending, 0);
    assert_eq!(first.wake, None);
    assert_eq!(first.status.phase, Some(PRWatchPhase::Watching));
    assert_eq!(first.requeue_after, Some(Duration::from_secs(60)));
    let failed = snapshot("abc1234", Some("FAILURE"), vec![check("build", true, true)]);
    let second = poll(&spec, Some(&first.status), &failed, 60);
    let wake = second.wake.clone().expect("failure reported");
    assert!(
        wake.contains("settled: failure; failed checks (1 of 1): \"build\""),
        "{wake}"
    );
    let again = poll(&spec, Some(&second.status), &failed, 120);
    assert_eq!(again.wake, None, "reported once");
    let green = snapshot(
        "abc1234",
        Some("SUCCESS"),
        vec![check("build", true, false)],
    );
    let rerun = poll(&spec, Some(&again.status), &green, 180);
    assert!(rerun.wake.clone().unwrap().contains("settled: success"));
    assert_eq!(
        rerun.status.reported,
        ["abc1234:failure", "abc1234:success"]
    );
    assert_eq!(rerun.status.wakes, 2);
    assert_eq!(poll(&spec, Some(&rerun.status), &green, 240).wake, None);
}

#[test]
fn feedback_is_batched_until_the_quiet_period_passes() {
    let spec = spec("");
    let mut seen = snapshot("a", None, vec![]);
    seen.feedback = vec![fb("old", "alice", -500)];
    let baseline = poll(&spec, None, &seen, 0);
    assert_eq!(
        baseline.wake, None,
        "what was there before the watch is not news"
    );
    assert_eq!(baseline.status.pending, None);

    seen.feedback.push(fb("r1", "alice", 100));
    let one = poll(&spec, Some(&baseline.status), &seen, 120);
    assert_eq!(one.wake, None);
    assert_eq!(one.status.pending.as_ref().unwrap().count, 1);
    seen.feedback.push(fb("c1", "bob", 140));
    seen.feedback.push(fb("mine", "Overseer-Bot", 150));
    let two = poll(&spec, Some(&one.status), &seen, 180);
    assert_eq!(two.wake, None, "quiet period not over");
    assert_eq!(
        two.status.pending.as_ref().unwrap().count,
        2,
        "the viewer's own comment is no news"
    );
    let quiet = poll(&spec, Some(&two.status), &seen, 240);
    let wake = quiet.wake.clone().expect("one wake for the batch");
    assert!(
        wake.contains("new feedback: 2")
            && wake.contains("comment by alice")
            && wake.contains("comment by bob"),
        "{wake}"
    );
    assert!(
        !wake.contains("old") && !wake.to_lowercase().contains("overseer-bot"),
        "{wake}"
    );
    assert_eq!(quiet.status.pending, None);
    assert_eq!(quiet.status.feedback_until, Some(Time(at(140))));
    assert_eq!(poll(&spec, Some(&quiet.status), &seen, 300).wake, None);
    // A comment in the same second as the last reported one is still news.
    seen.feedback.push(fb("c2", "carol", 140));
    let tie = poll(&spec, Some(&quiet.status), &seen, 360);
    assert!(tie.wake.unwrap().contains("comment by carol"));
}

#[test]
fn the_watch_ends_on_merge_close_stop_max_wakes_and_failed_polls() {
    let spec_default = spec("");
    let mut merged = snapshot("a", None, vec![]);
    merged.state = "MERGED".into();
    let plan_merged = poll(&spec_default, None, &merged, 0);
    assert_eq!(plan_merged.status.phase, Some(PRWatchPhase::Merged));
    assert_eq!(plan_merged.requeue_after, None, "polling stops");
    let mut closed = merged.clone();
    closed.state = "CLOSED".into();
    assert_eq!(
        poll(&spec_default, None, &closed, 0).status.phase,
        Some(PRWatchPhase::Closed)
    );

    let stopped = plan(&Input {
        name: "pr7",
        generation: Some(2),
        spec: &spec("stop: true"),
        status: None,
        poll: Poll::NotDue,
        agent_ready: true,
        now: at(0),
    });
    assert_eq!(stopped.status.phase, Some(PRWatchPhase::Stopped));
    assert_eq!(stopped.events[0].reason, "Stopped");

    let one_wake = spec("maxWakes: 1");
    let green = snapshot("a", Some("SUCCESS"), vec![check("build", true, false)]);
    let exhausted = poll(&one_wake, None, &green, 0);
    assert!(exhausted.wake.is_some());
    assert_eq!(exhausted.status.phase, Some(PRWatchPhase::Exhausted));

    let two_failures = spec("maxFailedPolls: 2");
    let error = PollError::Failed("GitHub answered HTTP 502".into());
    let fail = |status: Option<&PRWatchStatus>, now| {
        plan(&Input {
            name: "pr7",
            generation: Some(1),
            spec: &two_failures,
            status,
            poll: Poll::Error(&error),
            agent_ready: true,
            now: at(now),
        })
    };
    let once = fail(None, 0);
    assert_eq!((once.status.failed_polls, once.wake.is_none()), (1, true));
    let twice = fail(Some(&once.status), 60);
    assert_eq!(twice.status.phase, Some(PRWatchPhase::Failing));
    assert!(
        twice.wake.unwrap().contains("failed 2 polls in a row"),
        "the agent is told"
    );
    // A good poll in between resets the count.
    let reset = poll(&two_failures, Some(&once.status), &green, 60);
    assert_eq!(reset.status.failed_polls, 0);
}

#[test]
fn a_rate_limit_waits_and_is_not_a_failed_poll() {
    let spec = spec("");
    let limited = PollError::RateLimited {
        until: at(900),
        why: "primary rate limit exhausted".into(),
    };
    let plan = plan(&Input {
        name: "pr7",
        generation: Some(1),
        spec: &spec,
        status: None,
        poll: Poll::Error(&limited),
        agent_ready: true,
        now: at(0),
    });
    assert_eq!(plan.status.failed_polls, 0);
    assert_eq!(plan.status.next_poll_time, Some(Time(at(900))));
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(900)));
    assert!(conditions::is_true(&plan.status.conditions, "RateLimited"));
    assert!(!poll_due(Some(&plan.status), at(899)));
    assert!(poll_due(Some(&plan.status), at(900)));
}

#[test]
fn news_waits_for_an_agent_that_cannot_take_it() {
    let spec = spec("");
    let green = snapshot("a", Some("SUCCESS"), vec![check("build", true, false)]);
    let waiting = plan(&Input {
        name: "pr7",
        generation: Some(1),
        spec: &spec,
        status: None,
        poll: Poll::Done(&green),
        agent_ready: false,
        now: at(0),
    });
    assert_eq!(waiting.wake, None);
    assert!(waiting.status.reported.is_empty(), "kept for the next poll");
    let later = poll(&spec, Some(&waiting.status), &green, 60);
    assert!(later.wake.unwrap().contains("settled: success"));
}

#[test]
fn memory_is_bounded() {
    let spec = spec("maxWakes: 1000");
    let mut status = PRWatchStatus::default();
    for i in 0..80 {
        let green = snapshot(&format!("{i:07x}"), Some("SUCCESS"), vec![]);
        status = poll(&spec, Some(&status), &green, i * 60).status;
    }
    assert_eq!(status.reported.len(), 50);
    assert_eq!(
        status.reported.last().unwrap(),
        &format!("{:07x}:success", 79)
    );
    let mut many = snapshot("a", None, vec![]);
    many.feedback = (0..300)
        .map(|i| fb(&format!("c{i}"), "alice", 10_000 + i))
        .collect();
    let after = poll(&spec, Some(&status), &many, 20_000);
    assert!(
        after.status.seen_feedback.len() <= 1,
        "only the ids at the mark's second"
    );
}

#[test]
fn feedback_times_are_compared_by_the_second_as_status_keeps_them() {
    let spec = spec("");
    let mut seen = snapshot("a", None, vec![]);
    let baseline = poll(&spec, None, &seen, 0);
    let mut late = fb("c1", "alice", 100);
    late.time = at(100) + Duration::from_millis(750);
    seen.feedback.push(late);
    let woke = poll(&spec, Some(&baseline.status), &seen, 300);
    assert!(woke.wake.is_some());
    // Through a status round trip, which drops the fraction.
    let stored: PRWatchStatus =
        serde_json::from_value(serde_json::to_value(&woke.status).unwrap()).unwrap();
    assert_eq!(
        poll(&spec, Some(&stored), &seen, 360).wake,
        None,
        "reported once"
    );
}

/// A wake the agent's shim refused is taken back: the news (CI and feedback) stays
/// unreported, no wake is counted, and the next poll brings the same wake again.
#[test]
fn an_undelivered_wake_is_kept_for_the_next_poll() {
    let spec = spec("maxWakes: 1");
    let mut pending = snapshot("abc1234", Some("PENDING"), vec![]);
    pending.feedback = vec![fb("1", "alice", 0)];
    let first = poll(&spec, None, &pending, 0);
    let mut failed = snapshot("abc1234", Some("FAILURE"), vec![check("build", true, true)]);
    failed.feedback = vec![fb("1", "alice", 0), fb("2", "bob", 10)];
    let input = Input {
        name: "pr7",
        generation: Some(1),
        spec: &spec,
        status: Some(&first.status),
        poll: Poll::Done(&failed),
        agent_ready: true,
        now: at(200),
    };
    let claimed = plan(&input);
    let wake = claimed.wake.clone().expect("CI and bob's comment");
    assert_eq!(claimed.status.phase, Some(PRWatchPhase::Exhausted));
    // Claimed in the status written before the exec, under the wake's own number.
    assert_eq!(
        claimed.status.wake_in_flight,
        Some(WakeInFlight {
            id: "pr/pr7/1".into(),
            message: wake.clone()
        })
    );
    let delivered = wake_settled(&claimed.status);
    assert_eq!(delivered.wake_in_flight, None);
    assert_eq!(
        (delivered.wakes, &delivered.reported),
        (1, &claimed.status.reported)
    );

    let kept = kept_for_next_poll(&input);
    assert_eq!(kept.wake, None);
    assert_eq!(kept.status.wake_in_flight, None);
    assert_eq!(kept.status.reported, Vec::<String>::new());
    assert_eq!(kept.status.wakes, 0);
    assert_eq!(kept.status.feedback_until, first.status.feedback_until);
    assert_eq!(kept.status.pending.as_ref().map(|p| p.count), Some(1));
    assert_eq!(
        kept.status.phase,
        Some(PRWatchPhase::Watching),
        "the last allowed wake did not happen, so the watch goes on"
    );
    assert_eq!(kept.status.last_poll_time, claimed.status.last_poll_time);
    let reasons: Vec<&str> = kept.events.iter().map(|e| e.reason).collect();
    assert!(
        !reasons.contains(&"AgentWoken") && !reasons.contains(&"AgentNotReady"),
        "{reasons:?}"
    );

    let retried = poll(&spec, Some(&kept.status), &failed, 260);
    assert_eq!(
        retried.wake.as_deref(),
        Some(wake.as_str()),
        "the same wake"
    );
}

#[test]
fn a_failed_first_poll_does_not_make_old_feedback_news() {
    let spec = spec("");
    let failed = plan(&Input {
        name: "pr7",
        generation: Some(1),
        spec: &spec,
        status: None,
        poll: Poll::Error(&PollError::Failed("connection reset".into())),
        agent_ready: true,
        now: at(0),
    });
    assert!(failed.status.last_poll_time.is_some());
    let mut seen = snapshot("a", None, vec![]);
    seen.feedback = vec![fb("old", "alice", -500)];
    let baseline = poll(&spec, Some(&failed.status), &seen, 60);
    assert_eq!(
        baseline.status.pending, None,
        "old feedback is the baseline"
    );
    let later = poll(&spec, Some(&baseline.status), &seen, 300);
    assert_eq!(later.wake, None, "and never a wake");
}

#[test]
fn ready_holds_while_polls_answer_and_after_a_good_end() {
    let ready = |plan: &Plan| {
        let c = plan
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .expect("every plan sets Ready");
        assert_eq!(c.observed_generation, Some(1), "{c:?}");
        (c.status.clone(), c.reason.clone())
    };
    let want = |status: &str, reason: &str| (status.to_string(), reason.to_string());
    let default = spec("");
    let input = |spec, status, poll| Input {
        name: "pr7",
        generation: Some(1),
        spec,
        status,
        poll,
        agent_ready: true,
        now: at(0),
    };
    let not_polled = plan(&input(&default, None, Poll::NotDue));
    assert_eq!(ready(&not_polled), want("False", "NotPolledYet"));

    let green = snapshot("a", Some("SUCCESS"), vec![check("build", true, false)]);
    let watching = poll(&default, None, &green, 0);
    assert_eq!(ready(&watching), want("True", "Watching"));

    let error = PollError::Failed("GitHub answered HTTP 502".into());
    let failed = plan(&input(
        &default,
        Some(&watching.status),
        Poll::Error(&error),
    ));
    assert_eq!(ready(&failed), want("False", "PollFailed"));

    let limited = PollError::RateLimited {
        until: at(900),
        why: "primary rate limit exhausted".into(),
    };
    let waiting = plan(&input(
        &default,
        Some(&watching.status),
        Poll::Error(&limited),
    ));
    assert_eq!(ready(&waiting), want("False", "RateLimited"));
    assert_eq!(
        ready(&poll(&default, Some(&waiting.status), &green, 900)),
        want("True", "Watching"),
        "an answer after the wait"
    );

    let mut merged = snapshot("a", None, vec![]);
    merged.state = "MERGED".into();
    assert_eq!(
        ready(&poll(&default, None, &merged, 0)),
        want("True", "Merged")
    );
    let stopped = spec("stop: true");
    assert_eq!(
        ready(&plan(&input(&stopped, None, Poll::NotDue))),
        want("True", "Stopped")
    );
    let one_wake = spec("maxWakes: 1");
    assert_eq!(
        ready(&poll(&one_wake, None, &green, 0)),
        want("False", "Exhausted")
    );
    let one_failure = spec("maxFailedPolls: 1");
    assert_eq!(
        ready(&plan(&input(&one_failure, None, Poll::Error(&error)))),
        want("False", "Failing")
    );
}
