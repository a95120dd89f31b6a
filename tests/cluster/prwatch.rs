//! The PRWatch controller on the real control plane, polling a local stand-in for
//! GitHub's GraphQL endpoint (tests/support/github.rs) and waking a real shim that
//! stands in for the agent's pod.

use std::time::Duration;

use kube::api::{Api, Patch, PatchParams, PostParams};
use overseer::prwatch::{PRWatch, PRWatchPhase, PRWatchStatus};
use serde_json::json;

use crate::agent::{WAIT, agent, wait_events};
use crate::support::cluster::{TestNamespace, create_agent, operator, setup, wait_in};
use crate::support::github::{FakeGitHub, Reply, create_watch, fixture};
use crate::support::health::assert_readers;
use crate::support::shim::{Shim, pod_shim};

const PR: &str = "https://github.com/acme/billing/pull/7";

/// The agent (a real shim), the token Secret, the fake GitHub and the watch.
async fn watch(ns: &TestNamespace, github: &FakeGitHub, extra: serde_json::Value) -> Shim {
    watch_with_cli(ns, github, "tui-works-then-idles.sh", extra).await
}

/// As `watch`, with the agent's fake CLI `script`.
async fn watch_with_cli(
    ns: &TestNamespace,
    github: &FakeGitHub,
    script: &str,
    extra: serde_json::Value,
) -> Shim {
    let shim = pod_shim(ns, "builder", 1, "pi", script).await;
    create_agent(ns, "builder", json!({})).await;
    wait_in(ns, "the agent Running", WAIT, || async {
        let status = agent(ns, "builder").await.status?;
        status.ready_pod().map(|_| ())
    })
    .await;
    create_watch(ns, github, "pr7", PR, "builder", extra).await;
    shim
}

fn now_fixture(name: &str) -> Reply {
    Reply::json(&fixture(name, jiff::Timestamp::now()))
}

/// The wakes the agent's CLI read (their first lines).
fn wakes(shim: &Shim) -> Vec<String> {
    shim.fake_log()
        .lines()
        .filter(|l| l.starts_with("[overseer] pr:"))
        .map(String::from)
        .collect()
}

async fn wait_polls(ns: &TestNamespace, github: &FakeGitHub, count: usize) {
    wait_in(
        ns,
        &format!("{count} polls"),
        Duration::from_secs(90),
        || async { (github.polls() >= count).then_some(()) },
    )
    .await;
}

async fn phase(ns: &TestNamespace) -> Option<PRWatchPhase> {
    ns.api::<PRWatch>().get("pr7").await.ok()?.status?.phase
}

/// The status of the watch `pr7` (it must have one).
async fn watch_status(ns: &TestNamespace) -> PRWatchStatus {
    let watch = ns.api::<PRWatch>().get("pr7").await.expect("get pr7");
    watch.status.expect("pr7 has a status")
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn ci_results_are_reported_once_per_sha_and_result_even_across_a_restart() {
    let ns = setup("prw-ci").await;
    let github = FakeGitHub::start().await;
    github.then([
        now_fixture("pending"),
        now_fixture("failing"),
        now_fixture("failing"),
    ]);
    let first = operator(&ns);
    let shim = watch(&ns, &github, json!({})).await;
    wait_in(
        &ns,
        "the failure reported, read to its end",
        Duration::from_secs(60),
        || async { shim.fake_log().contains("Read it on GitHub").then_some(()) },
    )
    .await;
    assert!(
        shim.fake_log()
            .contains("settled: failure; failed checks (3 of 11)"),
        "{}",
        shim.fake_log()
    );
    // A new operator picks up from status: the same failure is not reported again.
    drop(first);
    let _second = operator(&ns);
    wait_polls(&ns, &github, 3).await;
    github.then([now_fixture("rerun"), now_fixture("rerun")]);
    wait_in(
        &ns,
        "the rerun's success reported",
        Duration::from_secs(60),
        || async { shim.fake_log().contains("settled: success").then_some(()) },
    )
    .await;
    wait_polls(&ns, &github, 5).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        wakes(&shim).len(),
        2,
        "each sha:result once: {}",
        shim.fake_log()
    );
    let status = watch_status(&ns).await;
    assert_eq!(status.wakes, 2);
    assert_eq!(status.reported.len(), 2);
    assert!(github.refused().is_empty(), "{:?}", github.refused());
    wait_events(&ns, "pr7", "AgentWoken").await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn feedback_inside_the_quiet_period_is_one_wake_and_the_viewers_own_is_none() {
    let ns = setup("prw-feedback").await;
    let github = FakeGitHub::start().await;
    let quiet = |mut reply: serde_json::Value| {
        // No checks: this test is about feedback only.
        reply["data"]["repository"]["pullRequest"]["commits"]["nodes"][0]["commit"]["statusCheckRollup"] =
            serde_json::Value::Null;
        Reply::json(&reply)
    };
    let empty = quiet(fixture("merged", jiff::Timestamp::now()))
        .body
        .replace("\"MERGED\"", "\"OPEN\"");
    github.then([Reply {
        status: 200,
        headers: vec![],
        body: empty,
    }]);
    let _operator = operator(&ns);
    let shim = watch(&ns, &github, json!({})).await;
    wait_polls(&ns, &github, 1).await;
    // A review and its inline comments arrive, and a comment by the token's own account.
    let mut news = fixture("review_threads", jiff::Timestamp::now());
    news["data"]["repository"]["pullRequest"]["comments"]["nodes"] = json!([{
        "id": "IC_own", "author": {"login": "overseer-bot"}, "createdAt": jiff::Timestamp::now().to_string(),
        "url": format!("{PR}#issuecomment-1")}]);
    github.then([quiet(news.clone()), quiet(news)]);
    wait_in(
        &ns,
        "one wake for the batch, read to its end",
        Duration::from_secs(90),
        || async { shim.fake_log().contains("Read it on GitHub").then_some(()) },
    )
    .await;
    let log = shim.fake_log();
    assert!(
        log.contains("- new feedback: 38"),
        "2 reviews and 36 inline comments, not the viewer's: {log}"
    );
    assert!(!log.contains("overseer-bot"), "{log}");
    wait_polls(&ns, &github, 4).await;
    assert_eq!(wakes(&shim).len(), 1, "{log}");
    // One kept connection serves the polls: no TLS handshake and root store per poll.
    assert!(
        github.connections() < github.polls(),
        "{} connections for {} polls",
        github.connections(),
        github.polls()
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_wake_the_agent_could_not_take_comes_again_at_the_next_poll() {
    let ns = setup("prw-refused").await;
    let github = FakeGitHub::start().await;
    github.then([now_fixture("failing")]);
    let _operator = operator(&ns);
    // Typed text does not show on the agent's screen, so the shim refuses it.
    let shim = watch_with_cli(&ns, &github, "tui-echo-later.sh", json!({})).await;
    let refused = wait_events(&ns, "pr7", "WakeFailed").await;
    assert!(
        refused[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("kept for the next poll"),
        "{refused:?}"
    );
    let kept = watch_status(&ns).await;
    assert_eq!(kept.wakes, 0);
    assert!(kept.reported.is_empty(), "{:?}", kept.reported);
    // The agent can take input again: the next poll delivers the same news, once.
    std::fs::write(shim.dir.join("echo-on"), "").unwrap();
    wait_in(&ns, "the failure delivered", WAIT, || async {
        shim.fake_log().contains("Read it on GitHub").then_some(())
    })
    .await;
    let polls = github.polls();
    wait_polls(&ns, &github, polls + 1).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(wakes(&shim).len(), 1, "{}", shim.fake_log());
    let status = watch_status(&ns).await;
    assert_eq!(status.wakes, 1);
    assert_eq!(status.reported.len(), 1, "{:?}", status.reported);
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn merge_ends_the_watch_and_polling_stops_and_stop_ends_it_too() {
    let ns = setup("prw-merge").await;
    let github = FakeGitHub::start().await;
    github.then([now_fixture("merged")]);
    let operator = operator(&ns);
    let _shim = watch(&ns, &github, json!({})).await;
    wait_in(&ns, "Merged", WAIT, || async {
        (phase(&ns).await == Some(PRWatchPhase::Merged)).then_some(())
    })
    .await;
    let merged: PRWatch = ns.api().get("pr7").await.unwrap();
    assert_readers("PRWatch", "merged", &merged, "Healthy");
    // The watches by phase, and the token's rate limit as GitHub gave it (the fixture's).
    let metrics = operator.metrics().await.expect("/metrics answers");
    let origin = github.url.trim_end_matches("/graphql");
    for line in [
        "overseer_prwatches{phase=\"Merged\"} 1".to_string(),
        format!("overseer_github_rate_limit_remaining{{origin=\"{origin}\"}} 4873"),
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
    let polls = github.polls();
    wait_events(&ns, "pr7", "Merged").await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert_eq!(github.polls(), polls, "no poll after the merge");

    // A second watch on the same namespace, stopped by hand while it polls an open PR.
    github.then([now_fixture("pending")]);
    let api: Api<PRWatch> = ns.api();
    let mut stopped = api.get("pr7").await.unwrap();
    stopped.metadata = kube::api::ObjectMeta {
        name: Some("pr8".into()),
        ..Default::default()
    };
    stopped.status = None;
    api.create(&PostParams::default(), &stopped).await.unwrap();
    let watching = wait_in(&ns, "pr8 polled and Watching", WAIT, || async {
        let watch = api.get("pr8").await.ok()?;
        let status = watch.status.as_ref()?;
        (status.phase == Some(PRWatchPhase::Watching) && status.last_poll_time.is_some())
            .then_some(watch)
    })
    .await;
    assert_readers(
        "PRWatch",
        "watching, its last poll good",
        &watching,
        "Healthy",
    );
    api.patch(
        "pr8",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"stop": true}})),
    )
    .await
    .unwrap();
    wait_in(&ns, "Stopped", WAIT, || async {
        (api.get("pr8").await.ok()?.status?.phase == Some(PRWatchPhase::Stopped)).then_some(())
    })
    .await;
    let polls = github.polls();
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert_eq!(github.polls(), polls, "no poll after the stop");
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn failed_polls_in_a_row_end_the_watch_and_the_agent_is_told() {
    let ns = setup("prw-failing").await;
    let github = FakeGitHub::start().await;
    github.then([Reply {
        status: 502,
        headers: vec![],
        body: "bad gateway".into(),
    }]);
    let _operator = operator(&ns);
    let shim = watch(&ns, &github, json!({"maxFailedPolls": 2})).await;
    wait_in(&ns, "Failing", Duration::from_secs(60), || async {
        (phase(&ns).await == Some(PRWatchPhase::Failing)).then_some(())
    })
    .await;
    let failing: PRWatch = ns.api().get("pr7").await.unwrap();
    assert_readers("PRWatch", "failing", &failing, "Degraded");
    wait_in(&ns, "the agent told", WAIT, || async {
        shim.fake_log()
            .contains("failed 2 polls in a row")
            .then_some(())
    })
    .await;
    let failed = wait_events(&ns, "pr7", "PollFailed").await;
    assert!(
        failed[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("HTTP 502")
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_rate_limited_answer_backs_off_instead_of_hammering() {
    let ns = setup("prw-ratelimit").await;
    let github = FakeGitHub::start().await;
    let reset = jiff::Timestamp::now().as_second() + 120;
    github.then([Reply {
        status: 403,
        headers: vec![
            ("x-ratelimit-remaining".into(), "0".into()),
            ("x-ratelimit-reset".into(), reset.to_string()),
        ],
        body: r#"{"message":"API rate limit exceeded"}"#.into(),
    }]);
    let _operator = operator(&ns);
    let _shim = watch(&ns, &github, json!({})).await;
    let limited = wait_in(&ns, "RateLimited", WAIT, || async {
        let status = ns.api::<PRWatch>().get("pr7").await.ok()?.status?;
        overseer::conditions::is_true(&status.conditions, "RateLimited").then_some(status)
    })
    .await;
    assert_eq!(limited.failed_polls, 0, "a rate limit is not a failed poll");
    assert_eq!(limited.next_poll_time.unwrap().0.as_second(), reset);
    wait_events(&ns, "pr7", "RateLimited").await;
    tokio::time::sleep(Duration::from_secs(15)).await;
    assert_eq!(
        github.polls(),
        1,
        "no poll before the reset, though pollInterval is 10s"
    );
}
