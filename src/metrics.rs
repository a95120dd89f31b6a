//! Prometheus metrics of the operator, served at `/metrics`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    pub controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub controller: &'static str,
    pub error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepResultLabels {
    /// `succeeded` or `failed`.
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabels {
    /// wake, nudge, send, goal or pr
    pub kind: &'static str,
    /// delivered or failed
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PollLabels {
    /// ok, failed or rate_limited
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// Writes: create, update, patch, delete or exec; reads: read or watch
    pub verb: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OriginLabels {
    /// The GitHub API origin, `scheme://host[:port]` (one of `--github-api-origin`).
    pub origin: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    pub version: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    /// The object's `status.phase`; `None` before its first status, `Invalid` when it
    /// does not match the schema the operator reads.
    pub phase: String,
}

/// Counts the objects of one kind by phase, from the operator's cache.
pub type PhaseCount = Box<dyn Fn() -> BTreeMap<String, i64> + Send + Sync>;

/// Counts the objects of `store` by `phase` at each call: `None` before the first
/// status, `Invalid` for an object the operator cannot read (a cache of guarded
/// objects: `kubernetes::guard`).
pub fn phase_count<G, K, E, P>(
    store: kube::runtime::reflector::Store<G>,
    phase: fn(&K) -> Option<P>,
) -> PhaseCount
where
    G: AsRef<Result<K, E>> + kube::runtime::reflector::Lookup + Clone + Send + Sync + 'static,
    G::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
    K: 'static,
    E: 'static,
    P: std::fmt::Debug + 'static,
{
    Box::new(move || {
        let mut counts = BTreeMap::new();
        for object in store.state() {
            let phase = match (*object).as_ref() {
                Ok(object) => phase(object).map_or("None".to_string(), |p| format!("{p:?}")),
                Err(_) => "Invalid".to_string(),
            };
            *counts.entry(phase).or_insert(0) += 1;
        }
        counts
    })
}

/// `overseer_agents{phase}`, `overseer_goals{phase}`, `overseer_prwatches{phase}` and
/// `overseer_swarms{phase}` (a swarm's `SwarmState`), counted from the operator's caches
/// at each scrape (so they never drift from what it sees), once the caches exist.
#[derive(Default)]
pub struct ByPhase {
    pub agents: OnceLock<PhaseCount>,
    pub goals: OnceLock<PhaseCount>,
    pub prwatches: OnceLock<PhaseCount>,
    pub swarms: OnceLock<PhaseCount>,
    /// Open escalations by severity (a count of the agents' status, not of objects).
    pub escalations: OnceLock<PhaseCount>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SeverityLabels {
    pub severity: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MailLabels {
    pub state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EscalationLabels {
    pub kind: &'static str,
    pub severity: &'static str,
}

impl std::fmt::Debug for ByPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ByPhase")
    }
}

impl Collector for ByPhase {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let kinds = [
            (
                "agents",
                "Agents by phase, from the operator's cache",
                &self.agents,
            ),
            (
                "goals",
                "Goals by phase, from the operator's cache",
                &self.goals,
            ),
            (
                "prwatches",
                "PR watches by phase, from the operator's cache",
                &self.prwatches,
            ),
            (
                "swarms",
                "Swarms by state (Ready, NotReady, SpecInvalid), from the operator's cache",
                &self.swarms,
            ),
        ];
        for (name, help, count) in kinds {
            let Some(count) = count.get() else {
                continue;
            };
            let family = Family::<PhaseLabels, Gauge>::default();
            for (phase, n) in count() {
                family.get_or_create(&PhaseLabels { phase }).set(n);
            }
            family.encode(encoder.encode_descriptor(name, help, None, family.metric_type())?)?;
        }
        if let Some(count) = self.escalations.get() {
            let family = Family::<SeverityLabels, Gauge>::default();
            for (severity, n) in count() {
                family.get_or_create(&SeverityLabels { severity }).set(n);
            }
            let help = "Open escalations of agents by severity, from the operator's cache";
            let descriptor = encoder.encode_descriptor(
                "agent_escalations_open",
                help,
                None,
                family.metric_type(),
            )?;
            family.encode(descriptor)?;
        }
        Ok(())
    }
}

/// All metrics, registered once at start-up and shared through the `Context`.
pub struct Metrics {
    registry: Registry,
    pub reconciliations: Family<ControllerLabels, Counter>,
    /// Reconciles that found a cache not yet listed and came back later (deciding nothing).
    pub reconciles_deferred: Family<ControllerLabels, Counter>,
    pub failures: Family<ErrorLabels, Counter>,
    pub reconcile_duration: Family<ControllerLabels, Histogram>,
    pub leader: Gauge,
    /// Goal steps by result (StepSucceeded, StepFailed).
    pub step_results: Family<StepResultLabels, Counter>,
    /// Step attempts that failed with retries left.
    pub step_retries: Counter,
    /// Previous step pod seen Succeeded → next step pod created.
    pub step_advance: Histogram,
    /// Nudges and wakes by kind and outcome.
    pub deliveries: Family<DeliveryLabels, Counter>,
    /// In-loop agents found stopped before declaring done or blocked.
    pub premature_stops: Counter,
    /// From an agent crossing `idleAfter` to the delivered nudge or wake.
    pub stop_to_delivery: Family<DeliveryLabels, Histogram>,
    /// Escalations opened, by kind and severity.
    pub escalations_opened: Family<EscalationLabels, Counter>,
    /// From an escalation opening to its line typed into the overseer.
    pub escalation_to_told: Histogram,
    /// Mail routed, by the receipt it got (queued, undeliverable, refused).
    pub mail: Family<MailLabels, Counter>,
    /// From a message sent to its notice typed into the recipient.
    pub mail_to_notice: Histogram,
    /// Spawn requests answered, by what became of them (running, queued, refused, ...).
    pub spawns: Family<MailLabels, Counter>,
    /// Merge attempts ended, by what the queue made of them (merged, conflict, retried, ...).
    pub merges: Family<MailLabels, Counter>,
    /// PR watch polls by result.
    pub pr_polls: Family<PollLabels, Counter>,
    /// From the poll that saw CI settle to the delivered wake.
    pub pr_settle_to_wake: Histogram,
    /// Writes the operator sent to the API server, by verb (src/kubernetes/writes.rs).
    pub api_writes: Family<RequestLabels, Counter>,
    pub api_reads: Family<RequestLabels, Counter>,
    /// Events dropped because their publisher's queue was full (src/kubernetes/events.rs).
    pub events_dropped: Counter,
    /// Goal step progress Events folded into the goal's next Event (src/goal/progress.rs).
    pub step_events_folded: Counter,
    /// GitHub's GraphQL points left for the token, by API origin, at the last poll.
    pub github_rate_limit_remaining: Family<OriginLabels, Gauge>,
    /// Agents and goals by phase (set once the caches exist).
    pub by_phase: Arc<ByPhase>,
}

impl Default for Metrics {
    fn default() -> Self {
        let build_info = Family::<BuildLabels, Gauge>::default();
        build_info
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        let mut metrics = Metrics {
            registry: Registry::with_prefix("overseer"),
            by_phase: Arc::new(ByPhase::default()),
            reconciliations: Family::default(),
            reconciles_deferred: Family::default(),
            failures: Family::default(),
            reconcile_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 14))
            }),
            leader: Gauge::default(),
            step_results: Family::default(),
            step_retries: Counter::default(),
            step_advance: Histogram::new(exponential_buckets(0.0005, 2.0, 16)),
            deliveries: Family::default(),
            premature_stops: Counter::default(),
            stop_to_delivery: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.05, 2.0, 14))
            }),
            escalations_opened: Family::default(),
            escalation_to_told: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
            mail: Family::default(),
            mail_to_notice: Histogram::new(exponential_buckets(0.05, 2.0, 16)),
            spawns: Family::default(),
            merges: Family::default(),
            pr_polls: Family::default(),
            pr_settle_to_wake: Histogram::new(exponential_buckets(0.05, 2.0, 14)),
            api_writes: Family::default(),
            api_reads: Family::default(),
            events_dropped: Counter::default(),
            step_events_folded: Counter::default(),
            github_rate_limit_remaining: Family::default(),
        };
        metrics.register_controller_metrics(build_info);
        metrics.register_kind_metrics();
        metrics.register_swarm_metrics();
        metrics.start_at_zero();
        metrics
    }
}

impl Metrics {
    /// The reconciler's, the leader's, the API requests' and the build's.
    fn register_controller_metrics(&mut self, build_info: Family<BuildLabels, Gauge>) {
        let r = &mut self.registry;
        r.register_collector(Box::new(self.by_phase.clone()));
        r.register(
            "reconciliations",
            "Reconciliations started",
            self.reconciliations.clone(),
        );
        r.register(
            "reconciles_deferred",
            "Reconciliations that found a cache not yet listed and decided nothing",
            self.reconciles_deferred.clone(),
        );
        r.register(
            "reconcile_failures",
            "Reconciliations that failed",
            self.failures.clone(),
        );
        r.register(
            "reconcile_duration_seconds",
            "Time one reconciliation took",
            self.reconcile_duration.clone(),
        );
        r.register(
            "leader",
            "1 while this replica holds the leader Lease",
            self.leader.clone(),
        );
        r.register(
            "api_writes",
            "Writes sent to the API server (create, update, patch, delete, exec), by verb",
            self.api_writes.clone(),
        );
        r.register(
            "api_reads",
            "Reads sent to the API server: read (a get or a list) or watch",
            self.api_reads.clone(),
        );
        r.register(
            "events_dropped",
            "Events dropped because the queue to the API server was full",
            self.events_dropped.clone(),
        );
        r.register(
            "build_info",
            "1, labelled with the operator's version",
            build_info,
        );
    }

    /// The swarms' own: spawning and the merge queue.
    fn register_swarm_metrics(&mut self) {
        let r = &mut self.registry;
        r.register(
            "swarm_spawns",
            "Spawn requests answered, by state (queued, running, refused, cancelled, ended)",
            self.spawns.clone(),
        );
        r.register(
            "swarm_merges",
            "Merge queue attempts ended, by what became of the request (merged, conflict, checksfailed, failed, refused, merging: tried again)",
            self.merges.clone(),
        );
    }

    /// The agents', goals' and PR watches' own.
    fn register_kind_metrics(&mut self) {
        let r = &mut self.registry;
        r.register(
            "agent_deliveries",
            "Nudges and wakes delivered through exec input, by kind and outcome",
            self.deliveries.clone(),
        );
        r.register(
            "agent_premature_stops",
            "In-loop agents found stopped before declaring done or blocked",
            self.premature_stops.clone(),
        );
        r.register(
            "agent_stop_to_delivery_seconds",
            "From an agent crossing idleAfter to the delivered nudge or wake",
            self.stop_to_delivery.clone(),
        );
        r.register(
            "agent_escalations_opened",
            "Escalations of agents to their overseer opened, by kind and severity",
            self.escalations_opened.clone(),
        );
        r.register(
            "agent_escalation_to_told_seconds",
            "From an escalation opening to its line typed into the overseer",
            self.escalation_to_told.clone(),
        );
        r.register(
            "agent_mail",
            "Mail routed between swarm members, by receipt (queued, undeliverable, refused)",
            self.mail.clone(),
        );
        r.register(
            "agent_mail_to_notice_seconds",
            "From a message sent to its notice typed into the recipient",
            self.mail_to_notice.clone(),
        );
        r.register(
            "goal_steps",
            "Goal steps finished, by result",
            self.step_results.clone(),
        );
        r.register(
            "goal_step_events_folded",
            "Step progress Events folded into the goal's next Event (status.steps has each step)",
            self.step_events_folded.clone(),
        );
        r.register(
            "goal_step_retries",
            "Goal step attempts that failed with retries left",
            self.step_retries.clone(),
        );
        r.register(
            "goal_step_advance_seconds",
            "From the previous step pod seen Succeeded to the next step pod created",
            self.step_advance.clone(),
        );
        r.register(
            "prwatch_polls",
            "PR watch polls of GitHub, by result",
            self.pr_polls.clone(),
        );
        r.register(
            "prwatch_ci_settled_to_wake_seconds",
            "From the poll that saw CI settle on the head to the delivered wake",
            self.pr_settle_to_wake.clone(),
        );
        r.register(
            "github_rate_limit_remaining",
            "GitHub GraphQL points left for the token at the last poll, by API origin",
            self.github_rate_limit_remaining.clone(),
        );
    }
}

/// A reconcile under way: observed into `reconcile_duration` when dropped, so one that
/// fails, returns early or panics is timed as well.
pub struct ReconcileTimer<'a> {
    metrics: &'a Metrics,
    controller: &'static str,
    started: std::time::Instant,
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        let labels = ControllerLabels {
            controller: self.controller,
        };
        self.metrics
            .reconcile_duration
            .get_or_create(&labels)
            .observe(self.started.elapsed().as_secs_f64());
    }
}

/// The `kind` label of `overseer_agent_deliveries_total`.
pub const DELIVERY_KINDS: [&str; 5] = ["nudge", "wake", "send", "goal", "pr"];
/// The `result` label of `overseer_prwatch_polls_total`.
pub const POLL_RESULTS: [&str; 3] = ["ok", "failed", "rate_limited"];
/// The controllers, as their `controller` label.
pub const CONTROLLERS: [&str; 4] = ["agent", "goal", "prwatch", "swarm"];

impl Metrics {
    /// Creates at zero every series an alert or a dashboard panel compares over time
    /// (deliveries, polls, reconcile failures, stop-to-delivery times): a counter born
    /// at 1 shows no increase to `rate()`, so the first failure would fire no alert.
    fn start_at_zero(&self) {
        for kind in DELIVERY_KINDS {
            for outcome in ["delivered", "failed"] {
                let _ = self
                    .deliveries
                    .get_or_create(&DeliveryLabels { kind, outcome });
            }
        }
        for kind in ["nudge", "wake"] {
            let _ = self.stop_to_delivery.get_or_create(&DeliveryLabels {
                kind,
                outcome: "delivered",
            });
        }
        for result in POLL_RESULTS {
            let _ = self.pr_polls.get_or_create(&PollLabels { result });
        }
        for controller in CONTROLLERS {
            for error in crate::Error::METRIC_LABELS {
                let _ = self.failures.get_or_create(&ErrorLabels {
                    controller,
                    error: error.to_string(),
                });
            }
        }
    }

    /// Counts a reconcile of `controller` as it starts; the timer observes its duration.
    pub fn start_reconcile(&self, controller: &'static str) -> ReconcileTimer<'_> {
        let labels = ControllerLabels { controller };
        self.reconciliations.get_or_create(&labels).inc();
        ReconcileTimer {
            metrics: self,
            controller,
            started: std::time::Instant::now(),
        }
    }

    /// Counts one delivery through exec input of `kind` by its outcome.
    pub fn count_delivery(&self, kind: &'static str, outcome: &Result<(), String>) {
        let outcome = if outcome.is_ok() {
            "delivered"
        } else {
            "failed"
        };
        self.deliveries
            .get_or_create(&DeliveryLabels { kind, outcome })
            .inc();
    }

    pub fn observe_failure(&self, controller: &'static str, error: &crate::Error) {
        let labels = ErrorLabels {
            controller,
            error: error.metric_label().to_string(),
        };
        self.failures.get_or_create(&labels).inc();
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Metrics;

    #[test]
    fn the_series_alerts_compare_start_at_zero() {
        let scrape = Metrics::default().encode();
        for line in [
            r#"overseer_agent_deliveries_total{kind="nudge",outcome="failed"} 0"#,
            r#"overseer_agent_deliveries_total{kind="pr",outcome="delivered"} 0"#,
            r#"overseer_prwatch_polls_total{result="rate_limited"} 0"#,
            r#"overseer_reconcile_failures_total{controller="swarm",error="panicked"} 0"#,
            concat!(
                r#"overseer_build_info{version=""#,
                env!("CARGO_PKG_VERSION"),
                r#""} 1"#
            ),
        ] {
            assert!(scrape.lines().any(|l| l == line), "{line} in:\n{scrape}");
        }
    }
}
