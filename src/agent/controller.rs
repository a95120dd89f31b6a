//! The Agent reconciler: a thin shell that observes (agent, its pods, its overseer),
//! asks `decide::plan`, writes status, then acts: pods, events, and nudges or wakes
//! through exec input. Wakes are batched per overseer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action as Requeue, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use tracing::{info, instrument, warn};

use super::decide::{self, Action, AgentPod, Delivery, OverseerState, PodPhase, Verdict};
use super::message::{self, WakeItem};
use super::pod::{self, AGENT_LABEL, ATTEMPT_LABEL, CONTAINER};
use super::types::{ActivityState, Agent, AgentPhase, AgentStatus};
use crate::api::{CONTROLLER_MANAGER, MANAGED_BY, label_value};
use crate::metrics::DeliveryLabels;
use crate::operator::{Context, Shutdown};
use crate::{Error, Result, conditions};

const CONTROLLER: &str = "agent";

/// Runs the Agent controller until `shutdown`.
pub async fn run(ctx: Arc<Context>, shutdown: Shutdown) {
    let agents = ctx.api::<Agent>();
    let pods = ctx.api::<Pod>();
    let selector = format!("{}={},{AGENT_LABEL}", MANAGED_BY.0, MANAGED_BY.1);
    let controller = Controller::new(agents.clone(), watcher::Config::default().any_semantic());
    let store = controller.store();
    let overseen_store = store.clone();
    controller
        .owns(pods, watcher::Config::default().labels(&selector))
        // An overseer coming online (or going away) changes what its agents need.
        .watches(agents, watcher::Config::default(), move |changed: Agent| {
            overseen(&overseen_store, &changed)
        })
        .with_config(kube::runtime::controller::Config::default().concurrency(ctx.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(
            reconcile,
            error_policy,
            Arc::new(AgentContext {
                ctx,
                wake_locks: Mutex::default(),
            }),
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Per (namespace, overseer): held while a wake is built and delivered.
type WakeLocks = Mutex<HashMap<(String, String), Arc<tokio::sync::Mutex<()>>>>;

struct AgentContext {
    ctx: Arc<Context>,
    /// One wake at a time per overseer, so a batch is never sent twice.
    wake_locks: WakeLocks,
}

impl AgentContext {
    fn wake_lock(&self, namespace: &str, overseer: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.wake_locks.lock().unwrap_or_else(|e| e.into_inner());
        locks
            .entry((namespace.to_string(), overseer.to_string()))
            .or_default()
            .clone()
    }
}

fn overseen(store: &Store<Agent>, changed: &Agent) -> Vec<ObjectRef<Agent>> {
    let name = changed.name_any();
    store
        .state()
        .iter()
        .filter(|a| {
            a.namespace() == changed.namespace()
                && a.spec.overseer.as_deref() == Some(name.as_str())
        })
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}

fn error_policy(agent: Arc<Agent>, error: &Error, ac: Arc<AgentContext>) -> Requeue {
    warn!(agent = %agent.name_any(), %error, "reconcile failed");
    ac.ctx.metrics.observe_failure(CONTROLLER, error);
    Requeue::requeue(Duration::from_secs(5))
}

#[instrument(skip_all, fields(agent = %cached.name_any(), namespace = cached.namespace().unwrap_or_default()))]
async fn reconcile(cached: Arc<Agent>, ac: Arc<AgentContext>) -> Result<Requeue> {
    let started = Instant::now();
    let ctx = &ac.ctx;
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    let agents: Api<Agent> = Api::namespaced(ctx.client.clone(), &namespace);
    // Decide on the latest status (the shim writes it too), never on a stale cache.
    let Some(mut agent) = agents.get_opt(&name).await? else {
        return Ok(Requeue::await_change());
    };
    if agent.meta().deletion_timestamp.is_some() {
        return Ok(Requeue::await_change());
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let observed = observe_pods(&pods, &agent).await?;
    let overseer = overseer_state(&agents, &agent).await?;
    let plan = decide::plan(&decide::Input {
        name: &name,
        generation: agent.metadata.generation,
        spec: &agent.spec,
        status: agent.status.as_ref(),
        pods: &observed,
        overseer,
        now: jiff::Timestamp::now(),
    });

    if agent.status.as_ref() != Some(&plan.status) {
        apply_status(&agents, &name, &plan.status).await?;
        agent.status = Some(plan.status.clone());
    }
    let mut requeue = plan.requeue_after;
    for action in &plan.actions {
        match action {
            Action::CreatePod { attempt } => {
                ensure_identity(ctx, &agent).await?;
                let pod = pod::agent_pod(&agent, *attempt, &ctx.overseer_image);
                match pods.create(&PostParams::default(), &pod).await {
                    Ok(_) => info!(pod = pod.metadata.name.as_deref(), "created agent pod"),
                    Err(kube::Error::Api(status)) if status.code == 409 => {}
                    Err(error) => return Err(error.into()),
                }
            }
            Action::DeletePod { name } => match pods.delete(name, &DeleteParams::default()).await {
                Ok(_) => info!(pod = %name, "deleted agent pod"),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error.into()),
            },
            Action::Event {
                warning,
                reason,
                message,
            } => {
                if *reason == "StoppedEarly" {
                    ctx.metrics.premature_stops.inc();
                }
                publish(ctx, &agent, *warning, reason, message).await;
            }
            Action::Deliver(kind) => {
                let delivered = match kind {
                    Delivery::Nudge => nudge(ctx, &agents, &pods, &agent).await?,
                    Delivery::Wake => wake(&ac, &agents, &pods, &agent).await?,
                };
                if !delivered {
                    // Retried at the next heartbeat; the cooldown has not started.
                    let interval = decide::LoopTimes::of(&agent.spec.loop_)
                        .interval
                        .unwrap_or(Duration::from_secs(15));
                    requeue = Some(requeue.map_or(interval, |r| r.min(interval)));
                }
            }
        }
    }
    ctx.metrics.observe_reconcile(CONTROLLER, started.elapsed());
    Ok(requeue.map_or_else(Requeue::await_change, Requeue::requeue))
}

/// This agent's pods that are not being deleted.
async fn observe_pods(pods: &Api<Pod>, agent: &Agent) -> Result<Vec<AgentPod>> {
    let selector = format!("{AGENT_LABEL}={}", label_value(&agent.name_any()));
    let uid = agent.uid();
    Ok(pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .into_iter()
        .filter(|p| {
            p.owner_references()
                .iter()
                .any(|o| Some(&o.uid) == uid.as_ref() && o.controller == Some(true))
        })
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| {
            let attempt = p.labels().get(ATTEMPT_LABEL)?.parse().ok()?;
            let status = p.status.as_ref();
            let phase = match status.and_then(|s| s.phase.as_deref()) {
                Some("Running") => PodPhase::Running,
                Some("Succeeded" | "Failed") => PodPhase::Ended,
                _ => PodPhase::Pending,
            };
            let ready = status
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            Some(AgentPod {
                name: p.name_any(),
                attempt,
                phase,
                ready,
            })
        })
        .collect())
}

/// Whether this agent's overseer can take a wake now.
async fn overseer_state(agents: &Api<Agent>, agent: &Agent) -> Result<OverseerState> {
    let Some(name) = &agent.spec.overseer else {
        return Ok(OverseerState::Unset);
    };
    Ok(match agents.get_opt(name).await? {
        Some(overseer) if overseer_ready(&overseer) => OverseerState::Ready,
        _ => OverseerState::Offline,
    })
}

fn overseer_ready(overseer: &Agent) -> bool {
    overseer.status.as_ref().is_some_and(|s| {
        s.phase == Some(AgentPhase::Running)
            && s.pod_name.is_some()
            && conditions::is_true(&s.conditions, "Ready")
    })
}

/// Writes the operator's part of the status; `activity` and `exit` belong to the pod.
async fn apply_status(agents: &Api<Agent>, name: &str, status: &AgentStatus) -> Result<()> {
    let mut status = serde_json::to_value(status)?;
    if let Some(fields) = status.as_object_mut() {
        fields.remove("activity");
        fields.remove("exit");
    }
    let patch = json!({"apiVersion": "overseer.dev/v1alpha1", "kind": "Agent", "status": status});
    agents
        .patch_status(
            name,
            &PatchParams::apply(CONTROLLER_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

/// The agent's ServiceAccount, Role and RoleBinding (server-side applied: idempotent).
async fn ensure_identity(ctx: &Context, agent: &Agent) -> Result<()> {
    let namespace = agent.namespace().unwrap_or_default();
    let (account, role, binding) = pod::identity(agent);
    let params = PatchParams::apply(CONTROLLER_MANAGER).force();
    let name = pod::identity_name(&agent.name_any());
    Api::<ServiceAccount>::namespaced(ctx.client.clone(), &namespace)
        .patch(&name, &params, &Patch::Apply(&account))
        .await?;
    Api::<Role>::namespaced(ctx.client.clone(), &namespace)
        .patch(&name, &params, &Patch::Apply(&role))
        .await?;
    Api::<RoleBinding>::namespaced(ctx.client.clone(), &namespace)
        .patch(&name, &params, &Patch::Apply(&binding))
        .await?;
    Ok(())
}

/// Time from the agent crossing `idleAfter` to now (the delivery).
fn since_threshold(agent: &Agent, now: jiff::Timestamp) -> f64 {
    let status = agent.status.clone().unwrap_or_default();
    let input = decide::candidate_input(&agent.spec, &status, OverseerState::Unset, now);
    input
        .in_state_for
        .saturating_sub(input.idle_after)
        .as_secs_f64()
}

fn activity_word(agent: &Agent) -> &'static str {
    let exited = agent
        .status
        .as_ref()
        .and_then(decide::current_activity)
        .is_some_and(|a| a.state == ActivityState::Exited);
    if exited { "exited" } else { "idle" }
}

/// Sends the canned nudge into the agent's own pod; true once delivered.
async fn nudge(ctx: &Context, agents: &Api<Agent>, pods: &Api<Pod>, agent: &Agent) -> Result<bool> {
    let now = jiff::Timestamp::now();
    let status = agent.status.clone().unwrap_or_default();
    let input = decide::candidate_input(&agent.spec, &status, OverseerState::Unset, now);
    let text = message::nudge(activity_word(agent), input.in_state_for);
    let Some(pod) = status.pod_name.clone() else {
        return Ok(false);
    };
    let outcome = crate::exec::deliver(pods, &pod, CONTAINER, &ctx.input_command, &text).await;
    record(
        ctx,
        agents,
        agent,
        Delivery::Nudge,
        &outcome,
        &decide::stop_reason(&input),
        now,
    )
    .await
}

/// Wakes the overseer once for every candidate it oversees (the batch), under a lock
/// per overseer so that concurrent reconciles never send the same batch twice.
async fn wake(
    ac: &AgentContext,
    agents: &Api<Agent>,
    pods: &Api<Pod>,
    agent: &Agent,
) -> Result<bool> {
    let ctx = &ac.ctx;
    let namespace = agent.namespace().unwrap_or_default();
    let Some(overseer_name) = agent.spec.overseer.clone() else {
        return Ok(false);
    };
    let lock = ac.wake_lock(&namespace, &overseer_name);
    let _guard = lock.lock().await;
    let now = jiff::Timestamp::now();
    // Fresh reads: a batch sent while we waited for the lock has started their cooldowns.
    let Some(overseer) = agents.get_opt(&overseer_name).await?.filter(overseer_ready) else {
        return Ok(false);
    };
    let batch: Vec<Agent> = agents
        .list(&ListParams::default())
        .await?
        .into_iter()
        .filter(|a| a.spec.overseer.as_deref() == Some(overseer_name.as_str()))
        .filter(|a| {
            let status = a.status.clone().unwrap_or_default();
            status.phase == Some(AgentPhase::Running)
                && decide::candidate(&decide::candidate_input(
                    &a.spec,
                    &status,
                    OverseerState::Ready,
                    now,
                )) == Verdict::WakeOverseer
        })
        .collect();
    if !batch.iter().any(|a| a.name_any() == agent.name_any()) {
        return Ok(true);
    }
    let items: Vec<WakeItem> = batch
        .iter()
        .map(|a| {
            let status = a.status.clone().unwrap_or_default();
            let input = decide::candidate_input(&a.spec, &status, OverseerState::Ready, now);
            WakeItem {
                agent: a.name_any(),
                role: a.spec.role.clone(),
                state: activity_word(a),
                idle_for: input.in_state_for,
                idle_after: input.idle_after,
                nudges: input.nudges,
                max_nudges: input.max_nudges,
                attempt: status.attempt.unwrap_or(0),
                pod: status.pod_name.unwrap_or_default(),
            }
        })
        .collect();
    let text = message::wake(&namespace, &items);
    let overseer_pod = overseer
        .status
        .as_ref()
        .and_then(|s| s.pod_name.clone())
        .unwrap_or_default();
    let outcome =
        crate::exec::deliver(pods, &overseer_pod, CONTAINER, &ctx.input_command, &text).await;
    let mut delivered = true;
    for member in &batch {
        let status = member.status.clone().unwrap_or_default();
        let input = decide::candidate_input(&member.spec, &status, OverseerState::Ready, now);
        let reason = format!(
            "overseer {overseer_name} woken: {}",
            decide::stop_reason(&input)
        );
        delivered &= record(ctx, agents, member, Delivery::Wake, &outcome, &reason, now).await?;
    }
    Ok(delivered)
}

/// Records one delivery's outcome on `agent`: the loop status (only when delivered),
/// an Event and the metrics. Returns whether it was delivered.
async fn record(
    ctx: &Context,
    agents: &Api<Agent>,
    agent: &Agent,
    kind: Delivery,
    outcome: &Result<(), String>,
    reason: &str,
    now: jiff::Timestamp,
) -> Result<bool> {
    let kind_label = match kind {
        Delivery::Wake => "wake",
        Delivery::Nudge => "nudge",
    };
    let labels = |outcome: &'static str| DeliveryLabels {
        kind: kind_label,
        outcome,
    };
    match outcome {
        Ok(()) => {
            // The whole of the operator's status: a partial apply by the same field
            // manager would remove the fields it leaves out.
            let mut status = agent.status.clone().unwrap_or_default();
            status.loop_ = Some(decide::record_delivery(&status, kind, reason, now));
            apply_status(agents, &agent.name_any(), &status).await?;
            ctx.metrics
                .deliveries
                .get_or_create(&labels("delivered"))
                .inc();
            ctx.metrics.premature_stops.inc();
            ctx.metrics
                .stop_to_delivery
                .get_or_create(&labels("delivered"))
                .observe(since_threshold(agent, now));
            let event = match kind {
                Delivery::Wake => "OverseerWoken",
                Delivery::Nudge => "Nudged",
            };
            publish(ctx, agent, false, event, reason).await;
            Ok(true)
        }
        Err(error) => {
            ctx.metrics
                .deliveries
                .get_or_create(&labels("failed"))
                .inc();
            let event = match kind {
                Delivery::Wake => "WakeFailed",
                Delivery::Nudge => "NudgeFailed",
            };
            publish(
                ctx,
                agent,
                true,
                event,
                &format!("not delivered, retried at the next heartbeat: {error}"),
            )
            .await;
            Ok(false)
        }
    }
}

async fn publish(ctx: &Context, agent: &Agent, warning: bool, reason: &str, message: &str) {
    ctx.publish(&agent.object_ref(&()), warning, reason, message, None)
        .await;
}
