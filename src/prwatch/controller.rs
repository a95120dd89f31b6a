//! The PRWatch reconciler: when a poll is due it reads the token, makes the one
//! GraphQL request, asks `decide::plan`, writes status (which counts any wake and
//! claims it as `wakeInFlight`), then types the wake into the agent through exec
//! input and releases the claim. A delivery that fails is taken back in status, so
//! the next poll brings the same news again; a claim left by an operator that
//! stopped is delivered again under its id, which the shim confirms without typing.
//! Both deliveries run in a task out of the reconcile (src/delivery/slots.rs), so an agent
//! whose exec hangs holds no reconcile slot of this controller.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use tracing::{info, instrument, warn};

use super::decide::{self, Poll};
use super::github::{self, PollError, PullRequest};
use crate::agent::Agent;
use crate::api::{CONTROLLER_MANAGER, apply_status};
use crate::controller::{Context, Shutdown, readable, run_controller};
use crate::kinds::prwatch::{PRWatch, WakeInFlight};
use crate::kubernetes::caches::Subscription;
use crate::kubernetes::guard::Guarded;
use crate::metrics::{OriginLabels, PollLabels};
use crate::reasons;
use crate::{Result, duration};

const CONTROLLER: &str = "prwatch";

/// Runs the PRWatch controller on its share of the Agent watch until `shutdown`.
pub async fn run(ctx: Arc<Context>, agents: Subscription<Guarded<Agent>>, shutdown: Shutdown) {
    let controller = Controller::new(
        ctx.api::<Guarded<PRWatch>>(),
        watcher::Config::default().any_semantic(),
    );
    let store = controller.store();
    let _ = ctx
        .metrics
        .by_phase
        .prwatches
        .set(crate::metrics::phase_count(store.clone(), |w: &PRWatch| {
            w.status.as_ref().and_then(|s| s.phase)
        }));
    // A wake's delivery task that ends asks for its watch again.
    let (again, delivered) = futures::channel::mpsc::unbounded();
    let controller = controller
        // An agent coming online lets news held for it through at the next poll.
        .watches_stream(agents.touched(), move |agent: Guarded<Agent>| {
            agent
                .0
                .map(|agent| watching(&store, &agent))
                .unwrap_or_default()
        })
        .reconcile_on(delivered);
    let context = Arc::new(WatchContext {
        ctx,
        github: github::GitHub::new(),
        delivering: crate::delivery::slots::Running::new(again),
    });
    run_controller(controller, CONTROLLER, context, shutdown, reconcile).await;
}

struct WatchContext {
    ctx: Arc<Context>,
    /// One HTTPS client for every watch's polls.
    github: github::GitHub,
    /// The watches whose wake is being delivered.
    delivering: Arc<crate::delivery::slots::Running<Guarded<PRWatch>>>,
}

impl crate::controller::ControllerContext for WatchContext {
    fn shared(&self) -> &Arc<Context> {
        &self.ctx
    }
}

fn watching(store: &Store<Guarded<PRWatch>>, agent: &Agent) -> Vec<ObjectRef<Guarded<PRWatch>>> {
    let name = agent.name_any();
    readable(&store.state())
        .filter(|w| w.namespace() == agent.namespace() && w.spec.agent == name)
        .map(|w| ObjectRef::new(&w.name_any()).within(&w.namespace().unwrap_or_default()))
        .collect()
}

/// The Secret annotation that names the API origins its token may be sent to
/// (comma-separated `https://HOST[:PORT]`).
pub const TOKEN_ORIGINS_ANNOTATION: &str = "overseer.dev/github-origins";

/// The token from the Secret the spec names, only when the Secret is marked for the
/// watch's API origin: whoever may create a PRWatch may name any Secret of the
/// namespace, and the Secret's owner says where its token may go. Its value is never
/// logged.
async fn token(ctx: &Context, watch: &PRWatch) -> std::result::Result<String, PollError> {
    let namespace = watch.namespace().unwrap_or_default();
    let reference = &watch.spec.github.token_secret_ref;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(ctx.client.clone(), &namespace);
    let marked = secrets
        .get_opt(&reference.name)
        .await
        .map_err(|e| PollError::Failed(format!("reading Secret {}: {e}", reference.name)))?
        .and_then(|s| s.metadata.annotations)
        .and_then(|a| a.get(TOKEN_ORIGINS_ANNOTATION).cloned())
        .unwrap_or_default();
    let origins: Vec<String> = marked.split(',').map(|o| o.trim().to_string()).collect();
    if github::allowed_endpoint(&watch.spec.github.api_url, &origins).is_err() {
        return Err(PollError::Failed(format!(
            "Secret {} is not marked for the origin of apiURL {:?}: annotate it with {TOKEN_ORIGINS_ANNOTATION}=<origin> (for example https://api.github.com)",
            reference.name, watch.spec.github.api_url
        )));
    }
    ctx.secret_text(&namespace, reference)
        .await
        .map_err(PollError::Failed)
}

async fn poll(
    wc: &WatchContext,
    watch: &PRWatch,
) -> std::result::Result<github::Snapshot, PollError> {
    let ctx = &wc.ctx;
    let pr = PullRequest::parse(&watch.spec.url)
        .ok_or_else(|| PollError::Failed(format!("not a pull request URL: {}", watch.spec.url)))?;
    // Before the Secret is read: the token goes nowhere the operator was not told of.
    github::allowed_endpoint(&watch.spec.github.api_url, &ctx.github_api_origins)
        .and_then(|()| github::served_by(&watch.spec.url, &watch.spec.github.api_url))
        .map_err(PollError::Failed)?;
    let token = token(ctx, watch).await?;
    wc.github
        .poll(&watch.spec.github.api_url, &token, &pr)
        .await
}

#[instrument(skip_all, fields(prwatch = %cached.name_any(), namespace = cached.namespace().unwrap_or_default()))]
async fn reconcile(cached: Arc<PRWatch>, wc: Arc<WatchContext>) -> Result<Action> {
    let ctx = wc.ctx.clone();
    let started = Instant::now();
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    // Its wake's delivery writes its status, and asks for it again when it ends.
    if wc.delivering.running(&namespace, &name) {
        return Ok(Action::await_change());
    }
    let watches: Api<PRWatch> = Api::namespaced(ctx.client.clone(), &namespace);
    let Some(watch) = current_watch(&wc, &watches, &name).await? else {
        return Ok(Action::await_change());
    };
    let now = jiff::Timestamp::now();
    let outcome = poll_if_due(&wc, &watch, now).await;
    let agents: Api<Agent> = Api::namespaced(ctx.client.clone(), &namespace);
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let agent_pod = crate::delivery::input::target_named(&agents, &pods, &watch.spec.agent).await?;
    let input = decide::Input {
        name: &name,
        generation: watch.metadata.generation,
        spec: &watch.spec,
        status: watch.status.as_ref(),
        poll: match &outcome {
            None => Poll::NotDue,
            Some(Ok(snapshot)) => Poll::Done(snapshot),
            Some(Err(error)) => Poll::Error(error),
        },
        agent_ready: agent_pod.is_some(),
        now,
    };
    let plan = decide::plan(&input);
    if watch.status.as_ref() != Some(&plan.status) {
        apply_status(&watches, &name, CONTROLLER_MANAGER, &plan.status).await?;
    }
    let requeue = duration::requeue(plan.requeue_after);
    let (Some(text), Some(pod)) = (plan.wake.clone(), agent_pod) else {
        for event in &plan.events {
            ctx.publish_about(&watch, event.warning, event.reason, &event.message);
        }
        return Ok(requeue);
    };
    // Typed in a task; its Events follow the delivery, which may keep the news.
    let kept = decide::kept_for_next_poll(&input);
    let Some(mut task) = wc.delivering.begin(&namespace, &name) else {
        return Ok(Action::requeue(crate::delivery::slots::RETRY));
    };
    let wake = Wake {
        watches,
        pods,
        watch,
        pod,
        started,
    };
    let spawned = ctx.deliveries.clone().spawn(&namespace, async move {
        let task = &mut task;
        match deliver_wake(&ctx, &wake, plan, kept, &text).await {
            Ok(settled) => {
                for event in &settled.events {
                    ctx.publish_about(&wake.watch, event.warning, event.reason, &event.message);
                }
                task.after = None;
            }
            Err(error) => warn!(prwatch = %wake.watch.name_any(), %error, "settling a wake failed; looked at again shortly"),
        }
    });
    Ok(match spawned {
        true => Action::await_change(),
        false => Action::requeue(crate::delivery::slots::RETRY),
    })
}

/// The watch to decide on, read fresh (what was reported, never a stale cache), with a
/// wake a stopped operator left claimed delivered first; None when it is gone, being
/// deleted or ended.
async fn current_watch(
    wc: &WatchContext,
    watches: &Api<PRWatch>,
    name: &str,
) -> Result<Option<PRWatch>> {
    let Some(watch) = watches.get_opt(name).await? else {
        return Ok(None);
    };
    if watch.meta().deletion_timestamp.is_some() {
        return Ok(None);
    }
    if let Some(claimed) = watch.status.as_ref().and_then(|s| s.wake_in_flight.clone()) {
        // Settled in a task, which asks for the watch again when it is done.
        let namespace = watch.namespace().unwrap_or_default();
        if let Some(mut task) = wc.delivering.begin(&namespace, name) {
            let (ctx, watches) = (wc.ctx.clone(), watches.clone());
            wc.ctx.deliveries.clone().spawn(&namespace, async move {
                let task = &mut task;
                match deliver_claimed(&ctx, &watches, &watch, &claimed).await {
                    Ok(()) => task.after = None,
                    Err(error) => warn!(prwatch = %watch.name_any(), %error, "settling a claimed wake failed; looked at again shortly"),
                }
            });
        }
        return Ok(None);
    }
    if decide::ended(watch.status.as_ref().and_then(|s| s.phase)) {
        return Ok(None);
    }
    Ok(Some(watch))
}

/// Polls GitHub when the poll is due (and the watch not stopped), counted by result.
async fn poll_if_due(
    wc: &WatchContext,
    watch: &PRWatch,
    now: jiff::Timestamp,
) -> Option<std::result::Result<github::Snapshot, PollError>> {
    if watch.spec.stop || !decide::poll_due(watch.status.as_ref(), now) {
        return None;
    }
    let outcome = poll(wc, watch).await;
    let result = match &outcome {
        Ok(_) => "ok",
        Err(PollError::RateLimited { .. }) => "rate_limited",
        Err(PollError::Failed(_)) => "failed",
    };
    let metrics = &wc.ctx.metrics;
    metrics.pr_polls.get_or_create(&PollLabels { result }).inc();
    if let Ok(snapshot) = &outcome
        && let Some(remaining) = snapshot.rate_limit_remaining
    {
        let origin = github::origin(&watch.spec.github.api_url);
        metrics
            .github_rate_limit_remaining
            .get_or_create(&OriginLabels { origin })
            .set(remaining);
    }
    Some(outcome)
}

/// Where a planned wake goes, and when the reconcile that plans it started.
struct Wake {
    watches: Api<PRWatch>,
    pods: Api<Pod>,
    watch: PRWatch,
    /// The agent's ready pod, by name.
    pod: String,
    started: Instant,
}

/// Types the planned wake `text` into the agent's pod under the wake's number (counted
/// in the status already written) and settles it; one not delivered keeps the news for
/// the next poll (`kept`, the plan for that), then says so. Returns the plan as settled.
async fn deliver_wake(
    ctx: &Context,
    wake: &Wake,
    mut plan: decide::Plan,
    kept: decide::Plan,
    text: &str,
) -> Result<decide::Plan> {
    let (watch, name) = (&wake.watch, wake.watch.name_any());
    let ids = [decide::wake_id(&name, plan.status.wakes)];
    let delivered =
        crate::delivery::input::deliver(&ctx.input_command, &wake.pods, &wake.pod, text, &ids)
            .await;
    ctx.metrics.count_delivery("pr", &delivered);
    match delivered {
        Ok(()) => {
            info!(agent = %watch.spec.agent, "woke the agent");
            plan.status = decide::wake_settled(&plan.status);
            apply_status(&wake.watches, &name, CONTROLLER_MANAGER, &plan.status).await?;
            if plan.status.reported.len() > watch.status.as_ref().map_or(0, |s| s.reported.len()) {
                ctx.metrics
                    .pr_settle_to_wake
                    .observe(wake.started.elapsed().as_secs_f64());
            }
        }
        Err(error) => {
            let message = format!(
                "the wake was not delivered to agent {} (the news is kept for the next poll): {error}",
                watch.spec.agent
            );
            // Kept first, then told: whoever reads the Event finds the news kept.
            plan = kept;
            apply_status(&wake.watches, &name, CONTROLLER_MANAGER, &plan.status).await?;
            ctx.publish_about(watch, true, reasons::WAKE_FAILED, &message);
        }
    }
    Ok(plan)
}

/// Delivers the wake that an operator claimed in status and stopped before it knew the
/// outcome, under the same id: the agent's shim confirms it without typing it again
/// when it was delivered. Settled either way; one that cannot be delivered now is
/// given up with a Warning (its news was counted as reported when it was claimed).
async fn deliver_claimed(
    ctx: &Context,
    watches: &Api<PRWatch>,
    watch: &PRWatch,
    claimed: &WakeInFlight,
) -> Result<()> {
    let namespace = watch.namespace().unwrap_or_default();
    let agents: Api<Agent> = Api::namespaced(ctx.client.clone(), &namespace);
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let ids = [claimed.id.clone()];
    let delivered = match crate::delivery::input::target_named(&agents, &pods, &watch.spec.agent)
        .await?
    {
        Some(pod) => {
            crate::delivery::input::deliver(&ctx.input_command, &pods, &pod, &claimed.message, &ids)
                .await
        }
        None => Err(format!(
            "agent {} has no pod that takes input",
            watch.spec.agent
        )),
    };
    ctx.metrics.count_delivery("pr", &delivered);
    let status = decide::wake_settled(&watch.status.clone().unwrap_or_default());
    apply_status(watches, &watch.name_any(), CONTROLLER_MANAGER, &status).await?;
    match &delivered {
        Ok(()) => info!(id = %claimed.id, "delivered the wake claimed before a restart"),
        Err(error) => {
            let message = format!(
                "the wake claimed before the operator restarted was not delivered: {error}"
            );
            ctx.publish_about(watch, true, reasons::WAKE_FAILED, &message);
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
