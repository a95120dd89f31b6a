//! `helm install` of the packaged chart from the image: two replicas Running, one
//! leader, probes green, /metrics read from the pod, the restricted namespace admits
//! every pod the operator makes (and refuses one that breaks the standard, so the check
//! can fail), and `helm upgrade` by the documented path over the objects it made, after
//! which the operator pods send their traces to the collector it names.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use overseer::agent::Agent;
use overseer::goal::{Goal, GoalPhase};

use crate::release::{
    POD_START, address_for_pods, agent_image, create, from_pod, install, install_with, is_ready,
    namespace, uninstall_with, upgrade, upgrade_with,
};
use crate::support::cluster::{TestNamespace, wait_in};
use crate::support::otlp::Collector;

#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn the_chart_runs_from_its_image_under_restricted_pod_security() {
    let ns = namespace("chart").await;
    let release = install(&ns).await;

    // Probes green: both Ready (waited for by install), and /healthz, /readyz answer
    // from the pods themselves; exactly one replica reports itself leader.
    let mut leaders = vec![];
    for pod in &release.pods {
        assert_eq!(
            from_pod(&ns, pod, "/healthz").trim(),
            "ok",
            "{pod} /healthz"
        );
        let metrics = from_pod(&ns, pod, "/metrics");
        // The leader gauge is there from the start, on the standby as on the leader.
        assert!(
            metrics.contains("# TYPE overseer_leader gauge"),
            "{metrics}"
        );
        if metrics.lines().any(|l| l.trim() == "overseer_leader 1") {
            leaders.push(pod.clone());
        }
    }
    assert_eq!(
        leaders,
        vec![release.leader.clone()],
        "one leader, the Lease holder"
    );
    let pods: Api<Pod> = ns.api();
    for name in &release.pods {
        let pod = pods.get(name).await.unwrap();
        let spec = pod.spec.unwrap();
        println!(
            "e2e[{}]: operator pod {name} on node {}",
            ns.name,
            spec.node_name.unwrap_or_default()
        );
    }

    // What the operator makes passes the restricted standard: an agent pod and a step pod run.
    let image = agent_image();
    create::<Agent>(
        &ns,
        &format!(
            "{{apiVersion: overseer.dev/v1alpha1, kind: Agent, metadata: {{name: solo}},
              spec: {{runtime: {{name: claude, image: '{image}'}}}}}}"
        ),
    )
    .await;
    one_step_goal(&ns, "one", "succeed: build it").await;
    let agent_pod = wait_in(&ns, "the agent's pod Ready", POD_START, || {
        let pods = pods.clone();
        async move {
            let pod = pods.get_opt("solo-1").await.ok()??;
            is_ready(&pod).then_some(pod)
        }
    })
    .await;
    crate::attach::attach_type_and_detach(&ns, "solo", "solo-1").await;
    crate::attach::attach_in_the_browser(&ns, "solo", "solo-1").await;
    let goals: Api<Goal> = ns.api();
    let goal = succeeded(&ns, "one").await;
    let init = &agent_pod.status.unwrap().init_container_statuses.unwrap()[0];
    let copied = init.state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(
        (init.name.as_str(), copied.exit_code),
        ("install-overseer", 0),
        "the init container copied the binary"
    );
    let result = goal.status.unwrap().steps[0]
        .result
        .clone()
        .unwrap_or_default();
    assert!(
        result.contains("build done on attempt 1"),
        "step result: {result}"
    );

    // An upgrade over live objects, by the documented path (CRDs first, then helm
    // upgrade): the goal that ran keeps its record, and the new operators run a new one,
    // sending its reconcile spans to the collector the upgrade names.
    let collector = Collector::start(address_for_pods(&ns).await).await;
    let tracing = format!("tracing.otlpEndpoint={}", collector.endpoint);
    upgrade(&ns, &["concurrency=4", &tracing]).await;
    let kept = goals.get("one").await.unwrap().status.unwrap();
    assert_eq!(
        kept.phase,
        Some(GoalPhase::Succeeded),
        "the record survives"
    );
    one_step_goal(&ns, "two", "succeed: build it again").await;
    succeeded(&ns, "two").await;
    let span = wait_in(&ns, "a reconcile span of goal two", POD_START, || {
        let found = collector.find(|s| s.name == "reconcile" && s.attribute("goal") == Some("two"));
        async move { found }
    })
    .await;
    assert_eq!(span.resource("service.name"), Some("overseer"), "{span:?}");
    assert_eq!(span.resource("k8s.namespace.name"), Some(ns.name.as_str()));
    let replica = span.resource("k8s.pod.name").unwrap_or_default();
    assert!(replica.starts_with("overseer-"), "{span:?}");
    println!(
        "e2e[{}]: goal two's reconcile span reached the collector at {} from {replica}",
        ns.name, collector.endpoint
    );

    // The standard is enforced here: a pod that breaks it is refused.
    let privileged: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "privileged"},
        "spec": {"containers": [{"name": "c", "image": image,
            "securityContext": {"privileged": true}}]}
    }))
    .unwrap();
    let refused = pods
        .create(&PostParams::default(), &privileged)
        .await
        .expect_err("a privileged pod is refused");
    assert!(
        refused
            .to_string()
            .contains("violates PodSecurity \"restricted"),
        "{refused}"
    );
}

/// Goal `name` of one step, `action`, run by the agent test image's scripted CLI.
async fn one_step_goal(ns: &TestNamespace, name: &str, action: &str) {
    let image = agent_image();
    create::<Goal>(
        ns,
        &format!(
            "{{apiVersion: overseer.dev/v1alpha1, kind: Goal, metadata: {{name: {name}}},
              spec: {{defaults: {{runtime: {{name: codex, image: '{image}'}}}},
                      steps: [{{name: build, action: '{action}'}}]}}}}"
        ),
    )
    .await;
}

/// Goal `name` once it has succeeded.
async fn succeeded(ns: &TestNamespace, name: &str) -> Goal {
    let goals: Api<Goal> = ns.api();
    wait_in(ns, &format!("goal {name} Succeeded"), POD_START, || {
        let goals = goals.clone();
        async move {
            let goal = goals.get(name).await.ok()?;
            (goal.status.as_ref()?.phase == Some(GoalPhase::Succeeded)).then_some(goal)
        }
    })
    .await
}

/// Helm 4 beside Helm 3: install, upgrade over objects the operator wrote (server-side
/// apply: Helm owns the chart's fields, the operator only status), and uninstall, which
/// leaves the CRDs and the users' objects. Helm 3 uninstalls its release the same way.
#[tokio::test]
#[ignore = "needs a real node: run by hack/e2e/run.sh (make test)"]
async fn the_chart_installs_upgrades_and_uninstalls_with_helm_4_and_helm_3() {
    for helm in ["helm4", "helm"] {
        let ns = namespace(&format!("chart-{helm}")).await;
        install_with(&ns, helm).await;
        one_step_goal(&ns, "one", "succeed: build it").await;
        succeeded(&ns, "one").await;
        upgrade_with(&ns, helm, &["concurrency=4"]).await;
        one_step_goal(&ns, "two", "succeed: build it again").await;
        succeeded(&ns, "two").await;
        uninstall_with(&ns, helm).await;
        let goals: Api<Goal> = ns.api();
        let kept = goals.get("one").await.unwrap().status.unwrap();
        assert_eq!(
            kept.phase,
            Some(GoalPhase::Succeeded),
            "{helm}: the record stays"
        );
        println!(
            "e2e[{}]: {helm} installed, upgraded and uninstalled the chart",
            ns.name
        );
    }
}
