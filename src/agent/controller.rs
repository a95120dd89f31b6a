//! The Agent reconciler: a thin shell that observes (agent, its pods, its overseer),
//! asks `decide::plan`, writes status, then acts: pods, events, and nudges or wakes
//! through exec input. Wakes are batched per overseer.
//!
//! A quiet agent's reconcile sends nothing to the API server: the Agent, its pods,
//! its overseer and its swarm are read from caches (the Agent fresh only when the
//! cache has not seen this operator's last write: src/kubernetes/fresh.rs), and its Role and
//! instructions are compared with what this operator last applied.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::DeleteParams;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use tracing::{info, instrument};

use super::candidate::OverseerState;
use super::decide;
use super::pod::RoleSummary;
use super::{oversight, pod};
use crate::api::{MANAGED_BY, label_value};
use crate::controller::naming_swarm;
use crate::controller::{Context, Shutdown, deferred, listed, related_trigger, run_controller};
use crate::delivery::inbox::{self, SendStep};
use crate::delivery::{escalation, mail};
use crate::kinds::agent::{Agent, AgentPhase, AgentStatus, Delivery};
use crate::kinds::agent_pod::{self, AgentPod, PodPhase, PodSummary};
use crate::kinds::swarm::MailPolicy;
use crate::kinds::swarm::Swarm;
use crate::kubernetes::caches::Subscription;
use crate::kubernetes::fresh::{Applied, Deleting};
use crate::kubernetes::guard::Guarded;
use crate::kubernetes::index::Index;
use crate::labels;
use crate::reasons;
use crate::{Result, conditions, duration};
use children::{
    ensure_identity, ensure_sandbox, instruction_file, sync_instructions, sync_pr_watches,
    sync_role,
};
use context::{
    AgentContext, Effective, Unusable, apply_status, overseer_state, owning_swarm, resolve,
};
use delivery::in_flight;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use roles_at_start::RolesAtStart;

mod children;
mod context;
mod delivery;
mod dispatch;
mod mailroom;
mod patrol;
pub mod roles_at_start;

const CONTROLLER: &str = "agent";

/// Runs the Agent controller on its shares of the Agent and Swarm watches until
/// `shutdown`.
pub async fn run(
    ctx: Arc<Context>,
    agents: Subscription<Guarded<Agent>>,
    swarms: Subscription<Guarded<Swarm>>,
    shutdown: Shutdown,
) {
    let selector = format!("{}={},{}", MANAGED_BY.0, MANAGED_BY.1, labels::AGENT);
    // Agents, their pods and swarms are read from these caches, never listed in a
    // reconcile; an agent's pods and an overseer's agents are found by index.
    let pods_of = Index::default();
    let by_label = watcher::Config::default().labels(&selector);
    let pod_watch = watcher(ctx.api::<PodSummary>(), by_label.clone()).default_backoff();
    let (pods, pod_events) = cache_pods(pod_watch, pods_of.clone());
    let roles =
        RolesAtStart::listing(watcher(ctx.api::<RoleSummary>(), by_label).default_backoff());
    let store = agents.store.clone();
    let overseen = Index::default();
    let noted = overseen.clone();
    // Swarm members by swarm (a monitor's fleet), and apart the monitors among them (whom
    // a member's change concerns), so that no Agent event scans a swarm's members.
    let (members, monitors) = (Index::default(), Index::default());
    let (noted_members, noted_monitors) = (members.clone(), monitors.clone());
    // Its share of the Agent watch serves two triggers: each change reconciles the agent, and
    // (through `related_changes`) its overseer and the agents it oversees, deletions
    // included: an overseer coming online or going away changes what its agents need,
    // and an agent naming its overseer changes what the overseer may write.
    let (related_store, related_index) = (store.clone(), overseen.clone());
    let (notify_related, related_changes) = related_trigger(move |changed: &Agent| {
        let mut refs = related(&related_store, &related_index, changed);
        refs.extend(patrol::monitors_of(&related_store, &monitors, changed));
        refs
    });
    let versions = agents.versions.clone();
    let agent_events = agents
        .touched()
        .inspect_ok(move |agent: &Guarded<Agent>| {
            if let Ok(agent) = &agent.0 {
                note_overseer(&noted, agent);
                patrol::note_member((&noted_members, &noted_monitors), agent);
            }
        })
        .inspect_ok(notify_related);
    let swarm_cache = swarms.store.clone();
    let swarm_events = swarms.touched();
    let swarm_store = store.clone();
    // A delivery task that ends asks for its agent again (src/agent/controller/dispatch.rs).
    let (again, delivered) = futures::channel::mpsc::unbounded();
    let controller = Controller::for_stream(agent_events, store.clone())
        .owns_stream(pod_events)
        .reconcile_on(related_changes)
        .reconcile_on(delivered)
        // A swarm's defaults, roles and prompt layers shape its agents.
        .watches_stream(swarm_events, move |swarm: Guarded<Swarm>| {
            swarm
                .0
                .map(|swarm| {
                    naming_swarm(&swarm_store, &swarm, |a: &Agent| a.spec.swarm.as_deref())
                })
                .unwrap_or_default()
        });
    let context = Arc::new(AgentContext {
        ctx,
        store,
        overseen,
        members,
        pods,
        pods_of,
        roles,
        swarms: swarm_cache,
        versions,
        applied: Applied::default(),
        deleting: Deleting::default(),
        wake_locks: Mutex::default(),
        dispatch: crate::delivery::slots::Running::new(again),
    });
    run_controller(controller, CONTROLLER, context, shutdown, reconcile).await;
}

/// The agents' pods, from their `watch`: their cache (`PodSummary`: only what a decision
/// reads), noted in `pods_of` by agent, and their changes.
pub fn cache_pods(
    watch: impl futures::Stream<Item = WatchItem<PodSummary>> + Send + 'static,
    pods_of: Index,
) -> (
    Store<PodSummary>,
    impl futures::Stream<Item = std::result::Result<PodSummary, watcher::Error>>,
) {
    let (pods, pod_writer) = reflector::store();
    let events = watch
        .modify(move |pod| {
            if let (Some(namespace), Some(agent)) = (&pod.metadata.namespace, &pod.agent) {
                pods_of.note(namespace, agent, &pod.name_any());
            }
        })
        .reflect(pod_writer)
        .touched_objects();
    (pods, events)
}

/// What a watch of `K` yields.
type WatchItem<K> = std::result::Result<watcher::Event<K>, watcher::Error>;

/// The agents `changed` oversees, and its own overseer.
fn related(
    store: &Store<Guarded<Agent>>,
    overseen: &Index,
    changed: &Agent,
) -> Vec<ObjectRef<Guarded<Agent>>> {
    let namespace = changed.namespace().unwrap_or_default();
    let mut refs: Vec<ObjectRef<Guarded<Agent>>> =
        overseen_by(store, overseen, &namespace, &changed.name_any())
            .into_iter()
            .map(|name| ObjectRef::new(&name).within(&namespace))
            .collect();
    if let Some(overseer) = &changed.spec.overseer {
        refs.push(ObjectRef::new(overseer).within(&namespace));
    }
    refs
}

/// Notes in `overseen` the overseer `agent` names, if any.
fn note_overseer(overseen: &Index, agent: &Agent) {
    if let (Some(namespace), Some(overseer)) = (&agent.metadata.namespace, &agent.spec.overseer) {
        overseen.note(namespace, overseer, &agent.name_any());
    }
}

/// Names of the agents that name `overseer` as theirs (sorted): those noted in the
/// index whose cached Agent still does.
fn overseen_by(
    store: &Store<Guarded<Agent>>,
    overseen: &Index,
    namespace: &str,
    overseer: &str,
) -> Vec<String> {
    overseen
        .named(namespace, overseer)
        .into_iter()
        .filter(|name| {
            let cached = store.get(&ObjectRef::new(name).within(namespace));
            cached.as_deref().is_some_and(|a| {
                a.0.as_ref().is_ok_and(|a| {
                    a.spec.overseer.as_deref() == Some(overseer)
                        && a.meta().deletion_timestamp.is_none()
                })
            })
        })
        .collect()
}

/// The agents `overseer` oversees (sorted): those that name it, as cached, and that it
/// agreed to oversee (`oversight::accepts`), each with the pod the operator made for its
/// current attempt. The pod is one the operator verified as its own (controller owner
/// uid and labels), never a name taken from the attempt alone: the agent writes its
/// own status, and a forged attempt would name another workload's pod in the
/// overseer's Role.
async fn accepted_overseen(
    ac: &AgentContext,
    pods: &Api<Pod>,
    overseer: &Agent,
) -> Result<Vec<pod::Overseen>> {
    let namespace = overseer.namespace().unwrap_or_default();
    let mut accepted = Vec::new();
    for name in overseen_by(&ac.store, &ac.overseen, &namespace, &overseer.name_any()) {
        let Some(cached) = ac.store.get(&ObjectRef::new(&name).within(&namespace)) else {
            continue;
        };
        let Ok(agent) = cached.0.as_ref() else {
            continue;
        };
        let swarm = owning_swarm(&ac.swarms, agent);
        if !oversight::accepts(overseer, agent, swarm.as_deref()) {
            continue;
        }
        accepted.push(pod::Overseen {
            pod: verified_pod(ac, pods, agent).await?,
            agent: name,
        });
    }
    Ok(accepted)
}

/// The pod of `agent`'s recorded attempt, when it is the operator's pod of that agent
/// (`observe_pods`: its controller owner is the Agent's uid, its labels the operator's).
async fn verified_pod(ac: &AgentContext, pods: &Api<Pod>, agent: &Agent) -> Result<Option<String>> {
    let Some(attempt) = agent.status.as_ref().and_then(|s| s.attempt) else {
        return Ok(None);
    };
    Ok(observe_pods(ac, pods, agent)
        .await?
        .into_iter()
        .find(|p| p.attempt == attempt)
        .map(|p| p.name))
}

#[instrument(skip_all, fields(agent = %cached.name_any(), namespace = cached.namespace().unwrap_or_default()))]
async fn reconcile(cached: Arc<Agent>, ac: Arc<AgentContext>) -> Result<Action> {
    match reconcile_agent(cached.clone(), ac.clone()).await {
        // An object the agent needs is another owner's: said on the agent, looked at
        // again now and then (nothing watches that object going away).
        Err(taken @ crate::Error::NameTaken { .. }) => {
            let agents = Api::namespaced(
                ac.ctx.client.clone(),
                &cached.namespace().unwrap_or_default(),
            );
            let message = taken.to_string();
            report_unusable(&ac, &agents, &cached, reasons::NAME_TAKEN, &message).await?;
            Ok(Action::requeue(NAME_TAKEN_RECHECK))
        }
        outcome => outcome,
    }
}

/// How often an agent blocked by another owner's object looks again.
const NAME_TAKEN_RECHECK: Duration = Duration::from_secs(60);

async fn reconcile_agent(cached: Arc<Agent>, ac: Arc<AgentContext>) -> Result<Action> {
    // Decisions read the pod and swarm caches: never before their first full list,
    // or a restarted operator would take every pod for lost and every swarm for gone;
    // nor before the Roles' first list, or each agent's Role would be read one by one.
    if !listed(&ac.pods) || !listed(&ac.swarms) || !ac.roles.listed() {
        return Ok(deferred(&ac.ctx, CONTROLLER));
    }
    let namespace = cached.namespace().unwrap_or_default();
    // Its delivery task writes its status, and asks for it again when it ends.
    if ac.dispatch.running(&namespace, &cached.name_any()) {
        return Ok(Action::await_change());
    }
    let shell = Shell {
        agents: Api::namespaced(ac.ctx.client.clone(), &namespace),
        pods: Api::namespaced(ac.ctx.client.clone(), &namespace),
        ac: &ac,
    };
    let Some(agent) = current_agent(&shell, &cached).await? else {
        return Ok(Action::await_change());
    };
    // A delivery an operator left claimed is settled first, out of the reconcile.
    if in_flight(&agent).is_some() {
        let work = dispatch::Work {
            settle: true,
            ..Default::default()
        };
        return Ok(match dispatch::start(&ac, agent, work) {
            true => Action::await_change(),
            false => Action::requeue(crate::delivery::slots::RETRY),
        });
    }
    let mut agent = agent;
    let observed = match observe(&shell, &agent).await? {
        Ok(observed) => observed,
        Err(Unusable { reason, message }) => {
            report_unusable(&ac, &shell.agents, &agent, reason, &message).await?;
            return Ok(Action::await_change());
        }
    };
    let plan = decide::plan(&decide::Input {
        name: &agent.name_any(),
        generation: agent.metadata.generation,
        spec: &observed.effective.spec,
        status: agent.status.as_ref(),
        pods: &observed.pods,
        overseer: observed.overseer,
        pod_retention: ac.ctx.pod_retention,
        now: jiff::Timestamp::now(),
    });
    let Some((requeue, deliver)) = apply(&shell, &mut agent, &observed, &plan).await? else {
        return Ok(Action::await_change());
    };
    let requeue = in_the_pod(&ac, agent, &observed, requeue, deliver).await?;
    Ok(duration::requeue(requeue))
}

/// What runs in a ready pod once the status is written: the overseer's Role, then
/// what is typed into a pod (a nudge or wake the plan asked for, the inbox), in a
/// delivery task out of this reconcile. Returns when to look again.
async fn in_the_pod(
    ac: &Arc<AgentContext>,
    agent: Agent,
    observed: &Observed,
    mut requeue: Option<Duration>,
    deliver: Option<Delivery>,
) -> Result<Option<Duration>> {
    let pod_ready = agent.status.as_ref().is_some_and(|s| {
        observed
            .pods
            .iter()
            .any(|p| Some(p.attempt) == s.attempt && p.ready && p.phase == PodPhase::Running)
    });
    if pod_ready {
        sync_role(ac, &agent, (&observed.overseen, observed.fleet())).await?;
    }
    // A message that waits for a pod is looked at again then.
    let status = agent.status.clone().unwrap_or_default();
    let next = inbox::next_send(
        &status,
        pod_ready,
        ac.ctx.send_expiry,
        jiff::Timestamp::now(),
    );
    let mut work = dispatch::Work {
        deliver: deliver.map(|kind| (kind, observed.effective.spec.clone())),
        // Its overseer hears of its escalations once it can take input.
        tell: observed.overseer == OverseerState::Ready
            && overseer_between_turns(&ac.store, &agent)
            && !escalation::untold(&status).is_empty(),
        route: !mail::unrouted(&status).is_empty(),
        ..Default::default()
    };
    let spec = &observed.effective.spec;
    let monitor = observed.fleet.is_some() && pod_ready;
    match patrol::due(&agent, spec, monitor, jiff::Timestamp::now()) {
        Some(Ok(())) => work.patrol = true,
        Some(Err(wait)) => requeue = Some(requeue.map_or(wait, |r| r.min(wait))),
        None => {}
    }
    if !status.mailbox.is_empty() {
        let expiry = mailroom::policy(ac, &agent).map_or_else(
            || MailPolicy::default().expiry.get(),
            |(_, p)| p.expiry.get(),
        );
        let now = jiff::Timestamp::now();
        work.mailroom = !mail::mailroom(&agent.name_any(), &status, expiry, now).is_empty();
        if let Some(expires) = mailroom::next_expiry(&status, expiry, now) {
            requeue = Some(requeue.map_or(expires, |r| r.min(expires)));
        }
    }
    match next {
        SendStep::Idle => {}
        SendStep::Wait { retry_after } => {
            requeue = Some(requeue.map_or(retry_after, |r| r.min(retry_after)));
        }
        _ => work.inbox = Some(pod_ready),
    }
    if !work.is_empty() && !dispatch::start(ac, agent, work) {
        let retry = crate::delivery::slots::RETRY;
        requeue = Some(requeue.map_or(retry, |r| r.min(retry)));
    }
    Ok(requeue)
}

/// What one reconcile acts through: the controller's context and the APIs of the
/// agent's namespace.
struct Shell<'a> {
    ac: &'a AgentContext,
    agents: Api<Agent>,
    pods: Api<Pod>,
}

/// The agent to decide on: the cached one when it holds this operator's last write,
/// else read fresh; None when it is gone or being deleted.
async fn current_agent(shell: &Shell<'_>, cached: &Agent) -> Result<Option<Agent>> {
    let ac = shell.ac;
    let (namespace, name) = (cached.namespace().unwrap_or_default(), cached.name_any());
    // Status holds the claims and counts of deliveries: decide on a cached Agent only
    // when it holds this operator's last write (src/kubernetes/fresh.rs); one the shim or a sender
    // wrote since is read again.
    let agent = if ac.versions.is_current(cached) {
        cached.clone()
    } else {
        let Some(fresh) = read_fresh(ac, &shell.agents, &name).await? else {
            return Ok(None);
        };
        fresh
    };
    if agent.meta().deletion_timestamp.is_some() {
        ac.versions.forget(&namespace, &name);
        return Ok(None);
    }
    Ok(Some(agent))
}

impl Observed {
    fn fleet(&self) -> &[pod::Overseen] {
        self.fleet.as_deref().unwrap_or_default()
    }
}

/// What the plan reads besides the agent, from caches and indexes.
struct Observed {
    /// What it runs with: its effective spec and its swarm.
    effective: Effective,
    pods: Vec<AgentPod>,
    /// The agents that name this one their overseer.
    overseen: Vec<pod::Overseen>,
    /// The members it watches as its swarm's monitor (None: it is none).
    fleet: Option<Vec<pod::Overseen>>,
    /// It oversees some agent, or its role is one that does: its instructions say how.
    acts_as_overseer: bool,
    overseer: OverseerState,
}

/// Resolves the agent's effective spec (its swarm's defaults and role) beside it and
/// observes the rest, writing nothing; Err when the agent cannot run.
#[instrument(skip_all)]
async fn observe(shell: &Shell<'_>, agent: &Agent) -> Result<Result<Observed, Unusable>> {
    let ac = shell.ac;
    let effective = match resolve(&ac.swarms, agent) {
        Ok(effective) => effective,
        Err(unusable) => return Ok(Err(unusable)),
    };
    let overseen = accepted_overseen(ac, &shell.pods, agent).await?;
    let fleet = patrol::fleet(ac, &shell.pods, agent, effective.swarm.as_deref()).await?;
    Ok(Ok(Observed {
        fleet,
        pods: observe_pods(ac, &shell.pods, agent).await?,
        acts_as_overseer: pod::acts_as_overseer(agent, &overseen),
        overseen,
        overseer: cached_overseer_state(&ac.store, &ac.swarms, agent),
        effective,
    }))
}

/// Acts on the plan: the pod first, then the status that records its attempt, then
/// deletions, Events and deliveries. Returns when to come back, or None when the
/// API server refused the pod (reported; the agent waits for its next change).
#[instrument(skip_all)]
async fn apply(
    shell: &Shell<'_>,
    agent: &mut Agent,
    observed: &Observed,
    plan: &decide::Plan,
) -> Result<Option<(Option<Duration>, Option<Delivery>)>> {
    let (ac, ctx) = (shell.ac, &shell.ac.ctx);
    // The children the pod reads come first: its instructions, and the PR watches it
    // asked for.
    let digest =
        sync_instructions(ac, agent, &observed.effective, observed.acts_as_overseer).await?;
    sync_pr_watches(ac, agent).await?;
    // A crash between the pod and the status leaves a pod that the next reconcile
    // adopts, never a recorded attempt without one (which would pass for a lost pod),
    // and a refused pod changes no attempt.
    for action in &plan.actions {
        if let decide::Action::CreatePod { attempt } = action
            && !create_pod(shell, agent, observed, *attempt).await?
        {
            return Ok(None);
        }
    }
    let status = AgentStatus {
        instructions_digest: Some(digest),
        ..plan.status.clone()
    };
    if agent.status.as_ref() != Some(&status) {
        if !apply_status(&ac.versions, &shell.agents, agent, &status).await? {
            return Ok(None);
        }
        agent.status = Some(status);
    }
    let requeue = plan.requeue_after;
    let mut deliver = None;
    for action in &plan.actions {
        match action {
            decide::Action::CreatePod { .. } => {}
            decide::Action::DeletePod { name } => delete_pod(shell, agent, name).await?,
            decide::Action::Event {
                warning,
                reason,
                message,
            } => {
                if *reason == reasons::STOPPED_EARLY {
                    ctx.metrics.premature_stops.inc();
                }
                ctx.publish_about(agent, *warning, reason, message);
            }
            decide::Action::Notify { event, reason } => {
                if let Some(notify) = &observed.effective.spec.notify {
                    crate::notify::send(ctx, agent, notify, &notify_payload(agent, event, reason))
                        .await;
                }
            }
            decide::Action::EscalationOpened(opened) => {
                let labels = crate::metrics::EscalationLabels {
                    kind: opened.kind.label(),
                    severity: opened.severity.label(),
                };
                ctx.metrics.escalations_opened.get_or_create(&labels).inc();
                let message = format!(
                    "escalation #{} opened: {}, severity {}",
                    opened.id, labels.kind, labels.severity
                );
                ctx.publish_about(agent, true, reasons::ESCALATED, &message);
            }
            decide::Action::NotifyEscalation(escalation) => {
                if let Some(notify) = &observed.effective.spec.notify {
                    let payload = escalation_payload(agent, escalation);
                    crate::notify::send(ctx, agent, notify, &payload).await;
                }
            }
            // Typed by a delivery task, once the status above is written.
            decide::Action::Deliver(kind) => deliver = Some(*kind),
        }
    }
    Ok(Some((requeue, deliver)))
}

/// What the webhook hears of an agent's end: names and the condition's reason, in
/// fixed words. The agent's own `--reason` stays in its status and Events.
fn notify_payload(agent: &Agent, event: &str, reason: &str) -> serde_json::Value {
    let name = agent.name_any();
    let namespace = agent.namespace().unwrap_or_default();
    serde_json::json!({
        "kind": "Agent",
        "namespace": namespace,
        "name": name,
        "event": event,
        "reason": reason,
        "swarm": agent.spec.swarm,
        "message": format!("agent {name} in namespace {namespace} is {event} ({reason}); kubectl -n {namespace} describe agent {name}"),
    })
}

/// What the webhook hears of an escalation: names, kind, severity and id, in fixed
/// words; the agent's reason stays in its status (`overseer escalations`).
fn escalation_payload(
    agent: &Agent,
    escalation: &crate::kinds::agent::Escalation,
) -> serde_json::Value {
    let name = agent.name_any();
    let namespace = agent.namespace().unwrap_or_default();
    let (id, kind, severity) = (
        escalation.id,
        escalation.kind.label(),
        escalation.severity.label(),
    );
    serde_json::json!({
        "kind": "Agent",
        "namespace": namespace,
        "name": name,
        "event": "Escalated",
        "escalation": {"id": id, "kind": kind, "severity": severity, "attempt": escalation.attempt},
        "swarm": agent.spec.swarm,
        "message": format!("agent {name} in namespace {namespace} escalated (#{id}, {kind}, severity {severity}), not acknowledged yet; overseer escalations {name} -n {namespace}"),
    })
}

/// Creates the pod of `attempt`; false when the API server refused it as built from
/// the user's spec, which is then reported.
#[instrument(skip_all)]
async fn create_pod(
    shell: &Shell<'_>,
    agent: &Agent,
    observed: &Observed,
    attempt: i64,
) -> Result<bool> {
    let ac = shell.ac;
    ensure_identity(ac, agent, (&observed.overseen, observed.fleet())).await?;
    let Effective { spec, swarm } = &observed.effective;
    ensure_sandbox(ac, agent, swarm.as_deref()).await?;
    let guards = crate::guard::of_agent(spec, swarm.as_deref().map(|s| &s.spec), pod::WORKSPACE);
    let shape = pod::PodShape {
        overseer: pod::acts_as_overseer(agent, &observed.overseen),
        read_only: crate::roles::role(swarm.as_deref().map(|s| &s.spec), &spec.role).read_only,
        instructions_file: instruction_file(spec),
        guards: guards.as_ref(),
    };
    let pod = pod::agent_pod(agent, spec, attempt, &ac.ctx.overseer_image, shape);
    let claim = spec.workspace.as_ref().and_then(|w| {
        crate::workspace::claim(
            w,
            pod::owned_meta(agent),
            &agent.name_any(),
            pod::labels(agent),
        )
    });
    let uid = agent.uid().unwrap_or_default();
    match crate::kubernetes::pods::create(&shell.pods, claim, &pod, &uid).await {
        Ok(()) => info!(pod = pod.metadata.name.as_deref(), "created agent pod"),
        Err(error) => {
            let Some(message) = crate::kubernetes::pods::refusal(&error) else {
                return Err(error);
            };
            report_unusable(ac, &shell.agents, agent, reasons::POD_REFUSED, &message).await?;
            return Ok(false);
        }
    }
    Ok(true)
}

/// Deletes pod `name`, and hides it from the next reconciles until the cache shows it
/// going (src/kubernetes/fresh.rs `Deleting`).
async fn delete_pod(shell: &Shell<'_>, agent: &Agent, name: &str) -> Result<()> {
    match shell.pods.delete(name, &DeleteParams::default()).await {
        Ok(_) => {
            let namespace = agent.namespace().unwrap_or_default();
            shell.ac.deleting.deleted(&namespace, name);
            info!(pod = %name, "deleted agent pod");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Reads agent `name` from the API server, and remembers the version read.
async fn read_fresh(ac: &AgentContext, agents: &Api<Agent>, name: &str) -> Result<Option<Agent>> {
    let fresh = agents.get_opt(name).await?;
    match &fresh {
        Some(agent) => ac.versions.saw(agent),
        None => ac
            .versions
            .forget(agents.namespace().unwrap_or_default(), name),
    }
    Ok(fresh)
}

/// Records why the agent cannot run (Pending, Ready=False with the reason) and an
/// Event the first time; a change of the agent or its swarm brings it back.
async fn report_unusable(
    ac: &AgentContext,
    agents: &Api<Agent>,
    agent: &Agent,
    reason: &'static str,
    message: &str,
) -> Result<()> {
    let before = agent.status.clone().unwrap_or_default();
    let mut status = before.clone();
    let (generation, now) = (agent.metadata.generation, Time(jiff::Timestamp::now()));
    status.phase = Some(AgentPhase::Pending);
    status.observed_generation = generation;
    let changed = conditions::set(
        &mut status.conditions,
        conditions::READY,
        false,
        reason,
        message,
        generation,
        &now,
    );
    crate::health::settle_agent(
        &agent.name_any(),
        &mut status,
        &before.conditions,
        generation,
        &now,
    );
    if (changed || status != before) && apply_status(&ac.versions, agents, agent, &status).await? {
        ac.ctx.publish_about(agent, true, reason, message);
    }
    Ok(())
}

/// This agent's pods that are not being deleted, from the cache (found by index). The
/// pod of the recorded attempt, when the cache does not hold it, is read fresh: the
/// status that records an attempt is written after its pod is created, and its watch
/// event can come before the pod's, which must not pass for a lost pod.
async fn observe_pods(ac: &AgentContext, pods: &Api<Pod>, agent: &Agent) -> Result<Vec<AgentPod>> {
    let namespace = agent.namespace().unwrap_or_default();
    let mut observed: Vec<AgentPod> = ac
        .pods_of
        .named(&namespace, &label_value(&agent.name_any()))
        .iter()
        .filter_map(|name| ac.pods.get(&ObjectRef::new(name).within(&namespace)))
        .filter(|p| !ac.deleting.hides(&**p))
        .filter_map(|p| agent_pod::own_pod(agent, &p))
        .collect();
    let attempt = agent.status.as_ref().and_then(|s| s.attempt).unwrap_or(0);
    if attempt > 0 && !observed.iter().any(|p| p.attempt == attempt) {
        let name = agent_pod::pod_name(&agent.name_any(), attempt);
        if let Some(fresh) = pods.get_opt(&name).await?
            && !ac.deleting.hides(&fresh)
        {
            observed.extend(agent_pod::own_pod(agent, &(&fresh).into()));
        }
    }
    Ok(observed)
}

/// Whether this agent's overseer can take a wake now, as cached (a wake reads the
/// overseer fresh before it is sent).
/// Whether `agent`'s overseer, as cached, is between turns (its CLI idle or exited):
/// escalations are told then, never typed into a turn in progress. Its change to idle
/// brings the agents it oversees back (`related`).
fn overseer_between_turns(agents: &Store<Guarded<Agent>>, agent: &Agent) -> bool {
    let Some(name) = &agent.spec.overseer else {
        return false;
    };
    let reference = ObjectRef::new(name).within(&agent.namespace().unwrap_or_default());
    agents
        .get(&reference)
        .and_then(|o| o.0.as_ref().ok().and_then(|o| o.status.clone()))
        .is_some_and(|s| s.between_turns())
}

fn cached_overseer_state(
    agents: &Store<Guarded<Agent>>,
    swarms: &Store<Guarded<Swarm>>,
    agent: &Agent,
) -> OverseerState {
    let Some(name) = &agent.spec.overseer else {
        return OverseerState::Unset;
    };
    let reference = ObjectRef::new(name).within(&agent.namespace().unwrap_or_default());
    match agents.get(&reference).as_deref().map(|o| o.0.as_ref()) {
        Some(Ok(overseer))
            if !oversight::accepts(overseer, agent, owning_swarm(swarms, agent).as_deref()) =>
        {
            OverseerState::NotAccepted
        }
        Some(Ok(overseer)) => overseer_state(overseer),
        _ => OverseerState::Offline,
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
