//! The Goal controller on the real control plane: each test runs its own operator
//! scoped to its own namespace, and finishes step pods through kwok's Stages.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use overseer::goal::pod::RESULTS_ANNOTATION;
use overseer::goal::{Goal, GoalPhase, GoalStatus, StepPhase};
use serde_json::json;

use crate::support::cluster::{
    Operator, TestNamespace, create_object, kubeconfig_path, kubectl, setup, wait_in,
};
use crate::support::health::assert_readers;
use crate::support::webhook::{Webhook, url_secret};

const WAIT: Duration = Duration::from_secs(30);

struct Fixture {
    ns: TestNamespace,
    goals: Api<Goal>,
    pods: Api<Pod>,
    operator: Option<Operator>,
}

impl Fixture {
    async fn new(test: &str) -> Fixture {
        Fixture::with_operator_env(test, &[]).await
    }

    async fn with_operator_env(test: &str, env: &[(&str, &str)]) -> Fixture {
        let ns = setup(test).await;
        let operator = Some(Operator::start_with_env(
            &kubeconfig_path(),
            &["--namespace", &ns.name],
            env,
        ));
        Fixture {
            goals: ns.api(),
            pods: ns.api(),
            ns,
            operator,
        }
    }

    async fn create(&self, name: &str, spec: serde_json::Value) {
        create_object::<Goal>(
            &self.ns,
            json!({
                "apiVersion": "overseer.dev/v1alpha1", "kind": "Goal",
                "metadata": {"name": name}, "spec": spec
            }),
        )
        .await;
    }

    async fn status_where(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&GoalStatus) -> bool,
    ) -> GoalStatus {
        wait_in(&self.ns, &format!("goal {name}: {what}"), WAIT, || async {
            let status = written(self.goals.get(name).await.ok()?)?;
            check(&status).then_some(status)
        })
        .await
    }

    /// Starts watching goal `name` now and returns the first status `check` accepts,
    /// however briefly it held: a state that lasts a second (a retry's backoff) can fall
    /// between two polls of `status_where` on a loaded machine.
    fn first_status_where(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&GoalStatus) -> bool + Send + 'static,
    ) -> tokio::task::JoinHandle<GoalStatus> {
        use futures::StreamExt;
        use kube::runtime::{WatchStreamExt, watcher};
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let statuses = watcher(self.goals.clone(), config)
            .applied_objects()
            .filter_map(|goal| async move { written(goal.ok()?) })
            .filter(move |status| std::future::ready(check(status)));
        let what = format!("goal {name}: {what}");
        tokio::spawn(async move {
            let mut statuses = Box::pin(statuses);
            match tokio::time::timeout(WAIT, statuses.next()).await {
                Ok(Some(status)) => status,
                _ => panic!("timed out after {WAIT:?} watching for {what}"),
            }
        })
    }

    async fn running_pod(&self, name: &str) -> Pod {
        wait_in(&self.ns, &format!("pod {name} Running"), WAIT, || async {
            let pod = self.pods.get_opt(name).await.ok()??;
            (pod.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(pod)
        })
        .await
    }

    /// Waits for the pod, then has kwok finish it.
    async fn finish(&self, name: &str, outcome: &str, message: &str) {
        self.running_pod(name).await;
        let patch = json!({"metadata": {"annotations": {
            "kwok.overseer.dev/outcome": outcome, "kwok.overseer.dev/message": message
        }}});
        self.pods
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    async fn pod_names(&self) -> BTreeSet<String> {
        self.pods
            .list(&ListParams::default())
            .await
            .unwrap()
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect()
    }

    async fn events(&self, reason: &str) -> Vec<Event> {
        let events: Api<Event> = self.ns.api();
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .collect()
    }
}

fn steps(names: &[&str]) -> serde_json::Value {
    json!(
        names
            .iter()
            .map(|n| json!({"name": n, "action": format!("Implement {n}")}))
            .collect::<Vec<_>>()
    )
}

/// The goal's status once the operator has written one (until then the API server
/// gives the schema's default, `observedGeneration: 0`).
fn written(goal: Goal) -> Option<GoalStatus> {
    goal.status.filter(|s| s.observed_generation != Some(0))
}

fn runtime() -> serde_json::Value {
    json!({"name": "codex", "mode": "headless", "image": "example.com/codex:1"})
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn three_steps_succeed_in_order_with_results_passed_on() {
    let f = Fixture::new("goal-order").await;
    f.create(
        "ship",
        json!({"defaults": {"runtime": runtime()}, "steps": steps(&["a", "b", "c"])}),
    )
    .await;
    for (i, step) in ["a", "b", "c"].iter().enumerate() {
        let pod = f.running_pod(&format!("ship-s{i}-a1")).await;
        // One pod at a time: the next one does not exist yet.
        assert!(
            f.pods
                .get_opt(&format!("ship-s{}-a1", i + 1))
                .await
                .unwrap()
                .is_none()
        );
        let env = pod.spec.as_ref().unwrap().containers[0]
            .env
            .clone()
            .unwrap();
        let value = |name: &str| {
            env.iter()
                .find(|e| e.name == name)
                .and_then(|e| e.value.clone())
        };
        assert_eq!(value("OVERSEER_STEP").as_deref(), Some(*step));
        assert_eq!(value("OVERSEER_STEP_INDEX"), Some(i.to_string()));
        if i == 2 {
            // The earlier results travel in the pod itself, mounted as the file it
            // reads: starting a step writes nothing but the pod and the status.
            let results = pod.metadata.annotations.clone().unwrap()[RESULTS_ANNOTATION].clone();
            assert!(
                results.contains("result of a") && results.contains("result of b"),
                "{results}"
            );
            let cms: Api<ConfigMap> = f.ns.api();
            assert!(cms.get_opt("ship-results").await.unwrap().is_none());
        }
        f.finish(
            &format!("ship-s{i}-a1"),
            "Succeeded",
            &format!("result of {step}"),
        )
        .await;
    }
    let status = f
        .status_where("ship", "Succeeded", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    assert_eq!(status.completed_steps, 3);
    assert_eq!(
        status
            .steps
            .iter()
            .map(|s| s.result.clone().unwrap())
            .collect::<Vec<_>>(),
        ["result of a", "result of b", "result of c"]
    );
    assert!(status.started_at.is_some() && status.finished_at.is_some());
    // GitOps tools see it done: kubectl wait on Ready, and Argo CD's health check.
    let waited = kubectl(
        &[
            "wait",
            "-n",
            &f.ns.name,
            "--for=condition=Ready",
            "goal/ship",
            "--timeout=30s",
        ],
        "",
    );
    assert!(waited.status.success(), "kubectl wait: {waited:?}");
    assert_readers(
        "Goal",
        "succeeded",
        &f.goals.get("ship").await.unwrap(),
        "Healthy",
    );
    // Events go out behind the reconcile, one goal's in the order queued.
    let note = wait_in(&f.ns, "the GoalSucceeded Event", WAIT, || async {
        f.events("GoalSucceeded").await.pop()?.message
    })
    .await;
    // Step progress Events are folded (at most one per goal every 30 s): the ones
    // published, each related to its step's pod, and the count the goal's last Event
    // gives of those folded, account for all six (three started, three succeeded).
    let mut published = f.events("StepStarted").await;
    published.extend(f.events("StepSucceeded").await);
    for event in &published {
        let pod = event.related.as_ref().and_then(|r| r.name.clone());
        let step = event.message.as_deref().unwrap_or_default();
        let index = ["a", "b", "c"]
            .iter()
            .position(|s| step.starts_with(&format!("step {s} ")))
            .unwrap_or_else(|| panic!("{event:?}"));
        assert_eq!(pod, Some(format!("ship-s{index}-a1")), "{event:?}");
    }
    let folded: usize = note
        .split_once("(and ")
        .and_then(|(_, rest)| rest.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert_eq!(published.len() + folded, 6, "{published:?} {note}");
    assert!(published.len() < 6, "quick steps are folded: {published:?}");
    assert_eq!(
        f.pod_names().await,
        names(&["ship-s0-a1", "ship-s1-a1", "ship-s2-a1"])
    );
}

/// Results too large for an annotation (control characters take six bytes each in
/// JSON) travel in the ConfigMap `<goal>-results` instead, which the pod mounts; a
/// ConfigMap of that name that is another owner's is never taken over.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn results_too_large_for_the_pod_travel_in_a_config_map_never_another_owners() {
    let f = Fixture::new("goal-big-results").await;
    let cms: Api<ConfigMap> = f.ns.api();
    let theirs = serde_json::from_value(json!({
        "metadata": {"name": "squatted-results", "labels": {"owner": "someone-else"}},
        "data": {"theirs": "kept"}
    }))
    .unwrap();
    cms.create(&PostParams::default(), &theirs).await.unwrap();
    let names = ["s0", "s1", "s2", "s3", "s4", "s5", "s6"];
    let spec = json!({"defaults": {"runtime": runtime()}, "steps": steps(&names)});
    f.create("big", spec.clone()).await;
    f.create("squatted", spec).await;
    let result = "\u{1}".repeat(4096);
    for goal in ["big", "squatted"] {
        for i in 0..6 {
            f.finish(&format!("{goal}-s{i}-a1"), "Succeeded", &result)
                .await;
        }
    }
    let pod = f.running_pod("big-s6-a1").await;
    let volumes = pod.spec.unwrap().volumes.unwrap();
    let volume = volumes.iter().find(|v| v.name == "results").unwrap();
    assert_eq!(
        volume.config_map.as_ref().map(|c| c.name.as_str()),
        Some("big-results"),
        "{volume:?}"
    );
    let json = cms.get("big-results").await.unwrap().data.unwrap()["results.json"].clone();
    let results: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(results.len(), 6);
    assert_eq!(results[5]["result"], result.as_str());

    let progressing = f
        .status_where("squatted", "NameTaken", |s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Progressing" && c.reason == "NameTaken")
        })
        .await;
    let condition = progressing
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap();
    assert!(
        condition.message.contains("ConfigMap squatted-results"),
        "{condition:?}"
    );
    assert!(f.pods.get_opt("squatted-s6-a1").await.unwrap().is_none());
    let theirs = cms.get("squatted-results").await.unwrap();
    assert!(theirs.metadata.owner_references.is_none(), "{theirs:?}");
    assert_eq!(
        theirs.data.unwrap(),
        std::collections::BTreeMap::from([("theirs".to_string(), "kept".to_string())])
    );
    assert!(
        theirs
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .all(|m| m.manager.as_deref() != Some("overseer-controller")),
        "the operator wrote to a foreign ConfigMap"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_step_fails_twice_then_succeeds_with_backoff() {
    let f = Fixture::new("goal-retry").await;
    let defaults = json!({"runtime": runtime(), "maxRetries": 2, "backoff": {"initial": "1s", "factor": 2, "max": "5s"}});
    f.create(
        "retry",
        json!({"defaults": defaults, "steps": steps(&["flaky"])}),
    )
    .await;
    let failure = f.first_status_where("retry", "first failure recorded", |s| {
        s.steps[0].next_retry_time.is_some()
    });
    f.finish("retry-s0-a1", "Failed", "boom").await;
    let failed = failure.await.expect("the watch for the first failure");
    let first = &failed.steps[0];
    let backoff = first
        .next_retry_time
        .as_ref()
        .unwrap()
        .0
        .duration_since(first.finished_at.as_ref().unwrap().0);
    assert!(
        backoff.as_secs_f64() >= 0.99,
        "backoff honoured: {backoff:?}"
    );
    f.finish("retry-s0-a2", "Failed", "boom again").await;
    f.finish("retry-s0-a3", "Succeeded", "third time lucky")
        .await;
    let status = f
        .status_where("retry", "Succeeded", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    assert_eq!(status.steps[0].attempts, 3);
    assert_eq!(status.steps[0].result.as_deref(), Some("third time lucky"));
    assert_eq!(
        f.pod_names().await,
        names(&["retry-s0-a1", "retry-s0-a2", "retry-s0-a3"])
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn retries_run_out_the_goal_pauses_and_resumes_from_the_checkpoint() {
    let f = Fixture::new("goal-pause").await;
    let defaults = json!({"runtime": runtime(), "maxRetries": 0});
    f.create(
        "pause",
        json!({"defaults": defaults, "steps": steps(&["done", "hard"])}),
    )
    .await;
    f.finish("pause-s0-a1", "Succeeded", "ok").await;
    f.finish("pause-s1-a1", "Failed", "nope").await;
    let paused = f
        .status_where("pause", "Paused", |s| s.phase == Some(GoalPhase::Paused))
        .await;
    let condition = paused
        .conditions
        .iter()
        .find(|c| c.type_ == "Paused")
        .unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("True", "StepFailed")
    );
    assert_readers(
        "Goal",
        "paused by its failed step",
        &f.goals.get("pause").await.unwrap(),
        "Degraded",
    );
    let warnings = f.events("StepFailed").await;
    assert!(
        warnings
            .iter()
            .any(|e| e.type_.as_deref() == Some("Warning")),
        "a Warning Event"
    );

    let patch = json!({"metadata": {"annotations": {"overseer.dev/resume": "now-1"}}});
    f.goals
        .patch("pause", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    f.finish("pause-s1-a2", "Succeeded", "fixed").await;
    let status = f
        .status_where("pause", "Succeeded", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    assert_eq!(status.resume_token.as_deref(), Some("now-1"));
    assert_eq!(status.steps[1].attempt_base, 1);
    // The completed step never ran again.
    assert_eq!(
        f.pod_names().await,
        names(&["pause-s0-a1", "pause-s1-a1", "pause-s1-a2"])
    );
}

/// A pod made under the step pod's name before the operator's: the Goal says so in one
/// condition, written once (its status does not flip between NameTaken and StepRunning),
/// and the step's timeout and retries still hold: the retry's pod has a name of its own.
/// The squatter's pod is never counted, changed or deleted.
#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_squatted_step_pod_name_is_one_refusal_and_the_step_still_times_out() {
    use futures::StreamExt;
    let f = Fixture::new("goal-squat").await;
    let squatter: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "squat-s0-a1"},
        "spec": {"containers": [{"name": "app", "image": "example.com/squatter:1"}]}
    }))
    .unwrap();
    f.pods
        .create(&PostParams::default(), &squatter)
        .await
        .unwrap();
    // Every status the goal goes through, from before it exists.
    let goals = f.goals.clone();
    let statuses = tokio::spawn(async move {
        let config = kube::runtime::watcher::Config::default().fields("metadata.name=squat");
        let mut seen: Vec<(String, String)> = Vec::new();
        use kube::runtime::WatchStreamExt;
        let stream = kube::runtime::watcher(goals, config).default_backoff();
        let mut stream = std::pin::pin!(stream.applied_objects());
        let until = tokio::time::Instant::now() + Duration::from_secs(4);
        while let Ok(Some(Ok(goal))) = tokio::time::timeout_at(until, stream.next()).await {
            let progressing = goal
                .status
                .iter()
                .flat_map(|s| &s.conditions)
                .find(|c| c.type_ == "Progressing")
                .map(|c| c.reason.clone())
                .unwrap_or_default();
            seen.push((
                goal.metadata.resource_version.unwrap_or_default(),
                progressing,
            ));
        }
        seen
    });
    let defaults = json!({"runtime": runtime(), "maxRetries": 1, "timeout": "6s", "backoff": {"initial": "1s"}});
    f.create(
        "squat",
        json!({"defaults": defaults, "steps": steps(&["build"])}),
    )
    .await;
    let seen = statuses.await.unwrap();
    let taken = seen.iter().filter(|(_, r)| r == "NameTaken").count();
    let running = seen.iter().filter(|(_, r)| r == "StepRunning").count();
    assert!(taken >= 1, "the refusal is said: {seen:?}");
    assert!(
        running <= 1 && seen.len() <= 5,
        "the status flips instead of holding one refusal: {seen:?}"
    );
    // The attempt times out without a pod of its own, and the retry runs.
    f.finish("squat-s0-a2", "Succeeded", "built").await;
    let done = f
        .status_where("squat", "Succeeded", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    assert_eq!(done.steps[0].attempts, 2);
    let kept = f.pods.get("squat-s0-a1").await.unwrap();
    assert!(
        kept.metadata.deletion_timestamp.is_none(),
        "the squatter's pod is left alone"
    );
    assert!(
        kept.metadata.owner_references.is_none(),
        "and never adopted"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_step_past_its_timeout_is_stopped_and_retried() {
    let f = Fixture::new("goal-timeout").await;
    let defaults = json!({"runtime": runtime(), "maxRetries": 1, "timeout": "2s", "backoff": {"initial": "1s"}});
    f.create(
        "slow",
        json!({"defaults": defaults, "steps": steps(&["slow"])}),
    )
    .await;
    f.running_pod("slow-s0-a1").await;
    let timed_out = f
        .status_where("slow", "step TimedOut", |s| {
            s.steps[0].phase == StepPhase::TimedOut
        })
        .await;
    assert!(
        timed_out.steps[0]
            .message
            .as_deref()
            .unwrap()
            .contains("timeout")
    );
    f.finish("slow-s0-a2", "Succeeded", "quick this time").await;
    f.status_where("slow", "Succeeded", |s| {
        s.phase == Some(GoalPhase::Succeeded)
    })
    .await;
    let first = f.pods.get_opt("slow-s0-a1").await.unwrap();
    assert!(
        first.is_none_or(|p| p.metadata.deletion_timestamp.is_some()),
        "the timed-out pod was stopped"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_restarted_operator_continues_from_status_alone() {
    let mut f = Fixture::new("goal-restart").await;
    f.create(
        "crash",
        json!({"defaults": {"runtime": runtime()}, "steps": steps(&["a", "b", "c"])}),
    )
    .await;
    f.running_pod("crash-s0-a1").await;
    // Killed while step a runs; step a finishes while no operator is there.
    drop(f.operator.take());
    f.finish("crash-s0-a1", "Succeeded", "a done").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    f.operator = Some(Operator::start(&["--namespace", &f.ns.name]));
    f.finish("crash-s1-a1", "Succeeded", "b done").await;
    // Killed again right after it created step c's pod; restarted at once.
    f.running_pod("crash-s2-a1").await;
    drop(f.operator.take());
    f.operator = Some(Operator::start(&["--namespace", &f.ns.name]));
    f.finish("crash-s2-a1", "Succeeded", "c done").await;
    let status = f
        .status_where("crash", "Succeeded", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    assert_eq!(
        status.steps.iter().map(|s| s.attempts).collect::<Vec<_>>(),
        [1, 1, 1]
    );
    assert_eq!(
        f.pod_names().await,
        names(&["crash-s0-a1", "crash-s1-a1", "crash-s2-a1"]),
        "no pod twice"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn spec_paused_stops_new_steps_and_clearing_it_continues() {
    let f = Fixture::new("goal-specpause").await;
    f.create(
        "hold",
        json!({"defaults": {"runtime": runtime()}, "steps": steps(&["a", "b"])}),
    )
    .await;
    f.running_pod("hold-s0-a1").await;
    let pause = json!({"spec": {"paused": true}});
    f.goals
        .patch("hold", &PatchParams::default(), &Patch::Merge(&pause))
        .await
        .unwrap();
    f.finish("hold-s0-a1", "Succeeded", "a").await;
    f.status_where("hold", "Paused after the running step finished", |s| {
        s.phase == Some(GoalPhase::Paused) && s.completed_steps == 1
    })
    .await;
    assert!(
        f.pods.get_opt("hold-s1-a1").await.unwrap().is_none(),
        "no new step while paused"
    );
    assert_readers(
        "Goal",
        "paused by spec.paused",
        &f.goals.get("hold").await.unwrap(),
        "Suspended",
    );
    let unpause = json!({"spec": {"paused": false}});
    f.goals
        .patch("hold", &PatchParams::default(), &Patch::Merge(&unpause))
        .await
        .unwrap();
    f.finish("hold-s1-a1", "Succeeded", "b").await;
    f.status_where("hold", "Succeeded", |s| {
        s.phase == Some(GoalPhase::Succeeded)
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn depends_on_waits_and_blocks_with_reasons() {
    let f = Fixture::new("goal-deps").await;
    let spec = |deps: &[&str]| json!({"defaults": {"runtime": runtime(), "maxRetries": 0}, "steps": steps(&["x"]), "dependsOn": deps});
    f.create("second", spec(&["first"])).await;
    let waiting = f
        .status_where("second", "Waiting", |s| s.phase == Some(GoalPhase::Waiting))
        .await;
    assert!(waiting.message.as_deref().unwrap().contains("first"));
    f.create("first", spec(&[])).await;
    f.finish("first-s0-a1", "Succeeded", "done").await;
    f.running_pod("second-s0-a1").await;

    f.create("loop-a", spec(&["loop-b"])).await;
    f.create("loop-b", spec(&["loop-a"])).await;
    let blocked = |reason: &'static str| {
        move |s: &GoalStatus| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Blocked" && c.status == "True" && c.reason == reason)
        }
    };
    f.status_where("loop-a", "Blocked Deadlock", blocked("Deadlock"))
        .await;

    f.create("stuck", spec(&[])).await;
    f.create("after-stuck", spec(&["stuck"])).await;
    f.finish("stuck-s0-a1", "Failed", "no").await;
    f.status_where(
        "after-stuck",
        "Blocked PredecessorStalled",
        blocked("PredecessorStalled"),
    )
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn deleting_a_goal_deletes_its_pods() {
    let f = Fixture::new("goal-gc").await;
    f.create(
        "gone",
        json!({"defaults": {"runtime": runtime()}, "steps": steps(&["a"])}),
    )
    .await;
    f.running_pod("gone-s0-a1").await;
    f.goals
        .delete("gone", &DeleteParams::background())
        .await
        .unwrap();
    wait_in(
        &f.ns,
        "garbage collection of the step pod",
        Duration::from_secs(60),
        || async {
            let pod = f.pods.get_opt("gone-s0-a1").await.ok()?;
            pod.is_none_or(|p| p.metadata.deletion_timestamp.is_some())
                .then_some(())
        },
    )
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn edited_completed_steps_conflict_and_appended_steps_run() {
    let f = Fixture::new("goal-edit").await;
    f.create(
        "grow",
        json!({"defaults": {"runtime": runtime()}, "steps": steps(&["a"])}),
    )
    .await;
    f.finish("grow-s0-a1", "Succeeded", "a").await;
    let done = f
        .status_where("grow", "Succeeded", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;

    let edit = json!({"spec": {"steps": [{"name": "a", "action": "Implement something else"}]}});
    f.goals
        .patch("grow", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    let conflict = f
        .status_where("grow", "SpecConflict", |s| {
            s.conditions.iter().any(|c| c.reason == "SpecConflict")
        })
        .await;
    assert_eq!(conflict.steps, done.steps, "nothing else changed");
    assert_eq!(conflict.completed_steps, 1);
    // Git says one thing, the cluster did another: Argo CD shows it.
    assert_readers(
        "Goal",
        "a completed step edited (SpecConflict)",
        &f.goals.get("grow").await.unwrap(),
        "Degraded",
    );

    let append = json!({"spec": {"steps": [{"name": "a", "action": "Implement a"}, {"name": "b", "action": "Implement b"}]}});
    f.goals
        .patch("grow", &PatchParams::default(), &Patch::Merge(&append))
        .await
        .unwrap();
    f.finish("grow-s1-a1", "Succeeded", "b").await;
    f.status_where("grow", "Succeeded again", |s| {
        s.phase == Some(GoalPhase::Succeeded) && s.completed_steps == 2
    })
    .await;
    assert_eq!(
        f.pod_names().await,
        names(&["grow-s0-a1", "grow-s1-a1"]),
        "only the new step ran"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_webhook_hears_of_completion_and_pause_and_an_unreachable_one_is_an_event() {
    let f = Fixture::new("goal-notify").await;
    let mut hook = Webhook::start().await;
    url_secret(&f.ns, "hook", &hook.url).await;
    url_secret(&f.ns, "dead-hook", "http://127.0.0.1:9/hook").await;
    let spec = |secret: &str, retries: i32| {
        json!({
            "defaults": {"runtime": runtime(), "maxRetries": retries},
            "steps": steps(&["a"]),
            "notify": {"urlSecretRef": {"name": secret, "key": "url"}}
        })
    };
    f.create("told", spec("hook", 0)).await;
    f.finish("told-s0-a1", "Succeeded", "ok").await;
    let request = hook.next("on completion", WAIT).await;
    assert!(
        request.starts_with("POST /hook") && request.contains("\"event\":\"Succeeded\""),
        "{request}"
    );

    f.create("told-pause", spec("hook", 0)).await;
    f.finish("told-pause-s0-a1", "Failed", "no").await;
    let request = hook.next("on pause", WAIT).await;
    assert!(request.contains("\"event\":\"Paused\""), "{request}");

    // A notify step is sent with its delivery id, then the next step runs.
    let mut with_step = spec("hook", 0);
    with_step["steps"] = json!([{"name": "tell", "action": "Notify the team"},
        {"name": "b", "action": "Implement b"}]);
    f.create("told-step", with_step).await;
    let request = hook.next("for the notify step", WAIT).await;
    assert!(
        request.contains("\"event\":\"Step\"")
            && request.contains("\"delivery\":\"goal/told-step/0\""),
        "{request}"
    );
    f.finish("told-step-s1-a1", "Succeeded", "ok").await;
    let status = f
        .status_where("told-step", "Succeeded after its notify step", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    assert_eq!(status.completed_steps, 2);

    f.create("untold", spec("dead-hook", 0)).await;
    f.finish("untold-s0-a1", "Succeeded", "ok").await;
    let status = f
        .status_where("untold", "Succeeded despite the dead webhook", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    assert_eq!(status.completed_steps, 1);
    wait_in(&f.ns, "NotifyFailed event", WAIT, || async {
        let failed = f.events("NotifyFailed").await;
        failed
            .iter()
            .find(|e| e.type_.as_deref() == Some("Warning"))
            .map(|e| e.message.clone())
    })
    .await;

    // The gauges count from the operator's cache: three succeeded, one paused.
    let operator = f.operator.as_ref().unwrap();
    let expected = [
        "overseer_goals{phase=\"Succeeded\"} 3",
        "overseer_goals{phase=\"Paused\"} 1",
    ];
    wait_in(&f.ns, "goals by phase in /metrics", WAIT, || async {
        let metrics = operator.metrics().await?;
        expected
            .iter()
            .all(|line| metrics.lines().any(|l| l == *line))
            .then_some(())
    })
    .await;
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_webhook_inside_the_cluster_is_refused_alike_whether_it_answers_or_not() {
    // The operator's default rule: no internal range is open (the suite's operators open
    // loopback for their receivers; this one opens only a documentation range).
    let f = Fixture::with_operator_env(
        "goal-notify-internal",
        &[("OVERSEER_NOTIFY_ALLOWED_CIDRS", "192.0.2.0/24")],
    )
    .await;
    let mut hook = Webhook::start().await;
    let dead = "http://127.0.0.1:9/hook";
    let metadata = "http://169.254.169.254/latest/meta-data/";
    let named = hook.url.replace("127.0.0.1", "localhost");
    for (name, url) in [
        ("live", hook.url.as_str()),
        ("dead", dead),
        ("metadata", metadata),
        ("named", &named),
    ] {
        url_secret(&f.ns, name, url).await;
        f.create(
            name,
            json!({
                "defaults": {"runtime": runtime(), "maxRetries": 0},
                "steps": steps(&["a"]),
                "notify": {"urlSecretRef": {"name": name, "key": "url"}}
            }),
        )
        .await;
        f.finish(&format!("{name}-s0-a1"), "Succeeded", "ok").await;
    }
    let messages = wait_in(
        &f.ns,
        "a NotifyFailed event for each goal",
        WAIT,
        || async {
            let failed = f.events("NotifyFailed").await;
            let objects: BTreeSet<_> = failed
                .iter()
                .filter_map(|e| e.involved_object.name.clone())
                .collect();
            (objects.len() == 4).then(|| {
                failed
                    .into_iter()
                    .filter_map(|e| e.message)
                    .collect::<BTreeSet<_>>()
            })
        },
    )
    .await;
    // One wording for the receiver that answers, the closed port, the metadata address
    // and a name that resolves to loopback: the Event maps nothing of the network.
    assert_eq!(
        messages,
        BTreeSet::from([overseer::notify::REFUSED.to_string()])
    );
    assert!(
        hook.requests.try_recv().is_err(),
        "the receiver on loopback was posted to"
    );
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn finished_step_pods_go_after_the_retention_and_the_status_keeps_the_results() {
    let ns = setup("goal-retention").await;
    let operator = Some(Operator::start(&[
        "--namespace",
        &ns.name,
        "--pod-retention",
        "3s",
    ]));
    let f = Fixture {
        goals: ns.api(),
        pods: ns.api(),
        ns,
        operator,
    };
    f.create(
        "kept",
        json!({"defaults": {"runtime": runtime()}, "steps": steps(&["a", "b"])}),
    )
    .await;
    f.finish("kept-s0-a1", "Succeeded", "result a").await;
    f.finish("kept-s1-a1", "Succeeded", "result b").await;
    let status = f
        .status_where("kept", "Succeeded", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    assert_eq!(status.completed_steps, 2);
    wait_in(&f.ns, "both step pods deleted", WAIT, || async {
        f.pod_names().await.is_empty().then_some(())
    })
    .await;
    let status = f.goals.get("kept").await.unwrap().status.unwrap();
    let results: Vec<_> = status.steps.iter().map(|s| s.result.clone()).collect();
    assert_eq!(
        results,
        [Some("result a".to_string()), Some("result b".to_string())],
        "the checkpoint keeps the results"
    );
    assert_eq!(status.phase, Some(GoalPhase::Succeeded));
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn the_steps_of_a_goal_share_its_persistent_workspace_claim() {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    let f = Fixture::new("goal-workspace").await;
    // A volume for the claim to bind to, so that the step pods are scheduled.
    let volumes: Api<PersistentVolume> = Api::all(f.ns.client.clone());
    let volume_name = format!("{}-pv", f.ns.name);
    let volume: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": volume_name},
        "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/overseer-test-pv"},
            "claimRef": {"namespace": f.ns.name, "name": "ship-workspace"}
        }
    }))
    .unwrap();
    volumes
        .create(&PostParams::default(), &volume)
        .await
        .unwrap();
    f.create(
        "ship",
        json!({
            "defaults": {"runtime": runtime()},
            "workspace": {
                "git": {"url": "https://github.com/acme/widgets.git", "ref": "main"},
                "storage": {"persistent": {"size": "1Gi"}}
            },
            "steps": steps(&["a", "b"])
        }),
    )
    .await;
    f.finish("ship-s0-a1", "Succeeded", "a done").await;
    f.running_pod("ship-s1-a1").await;
    for name in ["ship-s0-a1", "ship-s1-a1"] {
        let spec = f.pods.get(name).await.unwrap().spec.unwrap();
        let claim = spec
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == "workspace")
            .and_then(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.clone());
        assert_eq!(claim.as_deref(), Some("ship-workspace"), "{name}");
        let sync = &spec.init_containers.unwrap()[1];
        assert_eq!(
            sync.name, "workspace",
            "{name}: the clone runs before the agent"
        );
        assert_eq!(
            spec.containers[0].working_dir.as_deref(),
            Some("/workspace")
        );
    }
    let claims: Api<PersistentVolumeClaim> = f.ns.api();
    let claim = claims.get("ship-workspace").await.unwrap();
    let owner = &claim.metadata.owner_references.unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Goal", "ship"));
    volumes
        .delete(&volume_name, &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn a_deploy_step_is_followed_by_a_guardians_review_with_its_instructions() {
    let f = Fixture::new("goal-review").await;
    f.create(
        "ship",
        json!({
            "defaults": {"runtime": runtime()},
            "steps": [{"name": "deploy", "action": "Deploy to staging"}]
        }),
    )
    .await;
    f.finish("ship-s0-a1", "Succeeded", "deployed").await;
    let review = f.running_pod("ship-s1-a1").await;
    let labels = review.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("overseer.dev/step").map(String::as_str),
        Some("deploy-review")
    );
    assert_eq!(
        labels.get("overseer.dev/role").map(String::as_str),
        Some("guardian")
    );
    let env = review.spec.unwrap().containers[0]
        .env
        .clone()
        .unwrap_or_default();
    let instructions = env
        .iter()
        .find(|e| e.name == "OVERSEER_STEP_INSTRUCTIONS")
        .and_then(|e| e.value.clone())
        .unwrap_or_default();
    assert!(instructions.contains("## Role: guardian"), "{instructions}");
    f.finish("ship-s1-a1", "Succeeded", "looks right").await;
    let status = f
        .status_where("ship", "Succeeded after its review", |s| {
            s.phase == Some(GoalPhase::Succeeded)
        })
        .await;
    let steps: Vec<(&str, Option<&str>)> = status
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.result.as_deref()))
        .collect();
    assert_eq!(
        steps,
        [
            ("deploy", Some("deployed")),
            ("deploy-review", Some("looks right"))
        ]
    );
    assert_eq!(status.progress.as_deref(), Some("2/2"));
}

mod graph;
