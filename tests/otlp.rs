//! The `otlp` feature: an operator started with `OTEL_EXPORTER_OTLP_ENDPOINT` sends its
//! reconcile spans, and the spans of the reconcile's steps inside them, to that
//! collector over OTLP/HTTP (tests/support/otlp.rs receives them). Run by `make test`: `cargo test --features otlp --test otlp -- --ignored`;
//! the e2e suite checks the same from the chart's operator pods on the real node.

mod support;

use std::time::Duration;

use support::cluster::{Operator, create_agent, kubeconfig_path, setup, wait_until};
use support::otlp::Collector;

#[tokio::test]
#[ignore = "needs the test cluster: run by `make test`"]
async fn reconcile_spans_reach_the_collector_named_by_the_environment() {
    let collector = Collector::start([127, 0, 0, 1].into()).await;
    let ns = setup("otlp").await;
    let _operator = Operator::start_with_env(
        &kubeconfig_path(),
        &["--namespace", &ns.name],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.endpoint),
            // Batches leave every 200 ms instead of every 5 s.
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ],
    );
    create_agent(&ns, "traced", serde_json::json!({})).await;

    let span = wait_until(
        "a reconcile span of agent traced at the collector",
        Duration::from_secs(60),
        || {
            let found = collector.find(|s| {
                s.name == "reconcile"
                    && s.attribute("agent") == Some("traced")
                    && s.attribute("namespace") == Some(ns.name.as_str())
            });
            async move { found }
        },
    )
    .await;
    assert_eq!(span.resource("service.name"), Some("overseer"), "{span:?}");
    assert_eq!(span.trace_id.len(), 16, "{span:?}");
    assert!(span.trace_id.iter().any(|b| *b != 0), "{span:?}");

    // A reconcile's steps are its children in one trace: the pod is created inside
    // `apply`, which runs inside the reconcile of agent traced.
    let create_pod = wait_until(
        "a create_pod span at the collector",
        Duration::from_secs(60),
        || {
            let found = collector.find(|s| s.name == "create_pod");
            async move { found }
        },
    )
    .await;
    let apply = collector.parent_of(&create_pod).await;
    assert_eq!(apply.name, "apply", "{apply:?}");
    let reconcile = collector.parent_of(&apply).await;
    assert_eq!(reconcile.name, "reconcile", "{reconcile:?}");
    assert_eq!(
        reconcile.attribute("agent"),
        Some("traced"),
        "{reconcile:?}"
    );
    // Above it, kube's controller span names the object and why it was reconciled.
    let runtime = collector.parent_of(&reconcile).await;
    assert_eq!(runtime.name, "reconciling object", "{runtime:?}");
    let object = runtime.attribute("object.ref").unwrap_or_default();
    assert!(
        object.starts_with("Agent.v1alpha1.overseer.dev/traced."),
        "{runtime:?}"
    );
    assert!(
        runtime.parent_span_id.is_empty(),
        "it starts the trace: {runtime:?}"
    );
    wait_until(
        "the reconcile's observe span, before it applied",
        Duration::from_secs(30),
        || {
            let found =
                collector.find(|s| s.name == "observe" && s.parent_span_id == reconcile.span_id);
            async move { found }
        },
    )
    .await;
}
