//! The layer every controller shares: the `Context` they run with, one wrapper around
//! each reconcile (counted, timed, panic-contained, unreadable objects set aside), one
//! error policy with per-object backoff, and cache readiness. The controllers import
//! this, never `operator`, which only wires them up.

use std::future::Future;
use std::sync::Arc;

use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};
use kube::{Api, Client, Resource};
use tracing::{debug, warn};

use crate::kubernetes::guard::Guarded;
use crate::metrics::Metrics;
use crate::reasons;
use crate::{Error, Result};

/// What every controller shares, by `Arc`.
pub struct Context {
    pub client: Client,
    pub metrics: Arc<Metrics>,
    /// Where Events are queued for publishing (src/kubernetes/events.rs).
    pub events: crate::kubernetes::events::EventQueue,
    /// The one namespace watched, or all when `None`.
    pub namespace: Option<String>,
    pub concurrency: u16,
    /// Image holding the `overseer` binary for the pods' init containers.
    pub overseer_image: String,
    /// The `overseer` binary as exec finds it inside agent pods.
    pub input_command: String,
    /// How long an inbox message waits for a pod that can take it.
    pub send_expiry: std::time::Duration,
    /// How long finished step pods and ended agents' pods are kept (None: until their
    /// owner is deleted).
    pub pod_retention: Option<std::time::Duration>,
    /// The API origins a PRWatch may poll (and send its token to).
    pub github_api_origins: Vec<String>,
    /// Where a notify webhook may be posted.
    pub notify_destinations: Arc<crate::https::Destinations>,
    /// Each object's run of reconcile failures, for its error backoff.
    pub failures: Failures,
    /// The exec slots of the operator and of each namespace.
    pub deliveries: Arc<crate::delivery::slots::Deliveries>,
    /// The egress sandbox of agent and step pods (src/egress.rs).
    pub sandbox: crate::egress::Sandbox,
}

impl Context {
    /// An `Api` of `K` over the watched scope.
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        scoped_api(&self.client, self.namespace.as_deref())
    }
}

impl Context {
    /// The text at `reference` in a Secret of `namespace`, trimmed; Err says what is
    /// missing in words for a condition or Event, never the value.
    pub async fn secret_text(
        &self,
        namespace: &str,
        reference: &crate::api::SecretKeyRef,
    ) -> std::result::Result<String, String> {
        let secrets: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(self.client.clone(), namespace);
        let (name, key) = (&reference.name, &reference.key);
        let secret = secrets
            .get_opt(name)
            .await
            .map_err(|e| format!("reading Secret {name}: {e}"))?
            .ok_or_else(|| format!("Secret {name} not found"))?;
        let value = secret
            .data
            .and_then(|d| d.get(key).cloned())
            .ok_or_else(|| format!("Secret {name} has no key {key}"))?;
        String::from_utf8(value.0)
            .map(|text| text.trim().to_string())
            .map_err(|_| format!("Secret {name} key {key} is not text"))
    }
}

impl Context {
    /// `publish` about one of the operator's own objects, related to nothing else.
    pub fn publish_about<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        warning: bool,
        reason: &str,
        message: &str,
    ) {
        self.publish(&object.object_ref(&()), warning, reason, message, None);
    }

    /// Queues an Event about `regarding` (optionally related to another object) for
    /// publishing behind the reconcile; a failure is logged, never fatal: Events are a
    /// courtesy, not the record.
    pub fn publish(
        &self,
        regarding: &ObjectReference,
        warning: bool,
        reason: &str,
        message: &str,
        related: Option<ObjectReference>,
    ) {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.into(),
            note: Some(message.chars().take(1000).collect()),
            action: "Reconcile".into(),
            secondary: related,
        };
        self.events.send(event, regarding.clone());
    }
}

/// An `Api` of `K` in one namespace, or in all when `namespace` is None.
pub fn scoped_api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Resolves once SIGTERM or SIGINT arrives; cloned into every task that must stop.
pub type Shutdown = Shared<BoxFuture<'static, ()>>;

/// Runs one reconcile, turning a panic into an error: kube's controller re-raises a
/// reconcile's panic, so one bad object would otherwise crash-loop the whole operator.
/// The object is then retried by the error policy, and every other object goes on.
pub async fn contained<T>(reconcile: impl Future<Output = Result<T>>) -> Result<T> {
    match std::panic::AssertUnwindSafe(reconcile).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Err(Error::Panicked(message))
        }
    }
}

/// The reconcile of every controller, for the object `key` names: counted as it
/// starts and timed to its end, failures and panics included; `contained`; and a
/// success ends the object's run of failures (its error backoff starts again at 1 s).
pub async fn reconcile_object<T>(
    ctx: Arc<Context>,
    controller: &'static str,
    key: String,
    reconcile: impl Future<Output = Result<T>>,
) -> Result<T> {
    let timer = ctx.metrics.start_reconcile(controller);
    let result = contained(reconcile).await;
    drop(timer);
    if result.is_ok() {
        ctx.failures.succeeded(&key);
    }
    result
}

/// `reconcile_object` for an object as its controller's watch read it: one that does
/// not deserialise (a value its schema lets through that this build cannot read, such
/// as one stored under an older or hand-edited CRD) gets a Warning Event and waits for
/// its next change, while its controller goes on with every other object. Without the
/// guard, that one object failed every list and watch of its kind, for everyone.
pub async fn reconcile_guarded<K, Fut>(
    ctx: Arc<Context>,
    controller: &'static str,
    object: Arc<Guarded<K>>,
    reconcile: impl FnOnce(Arc<K>) -> Fut,
) -> Result<kube::runtime::controller::Action>
where
    K: Resource<DynamicType = ()> + Clone,
    Fut: Future<Output = Result<kube::runtime::controller::Action>>,
{
    let key = object_key(&*object);
    match &object.0 {
        Ok(valid) => {
            let reconcile = reconcile(Arc::new(valid.clone()));
            reconcile_object(ctx, controller, key, reconcile).await
        }
        Err(invalid) => {
            const MAX_REASON: usize = 400;
            let error: String = invalid.error.chars().take(MAX_REASON).collect();
            warn!(object = %key, %error, "an object the operator cannot read");
            let message = format!(
                "the operator cannot read this object ({error}); it is left as it is until it changes"
            );
            let regarding = object.object_ref(&());
            ctx.publish(&regarding, true, reasons::UNREADABLE, &message, None);
            Ok(kube::runtime::controller::Action::await_change())
        }
    }
}

/// The objects of a guarded store's state that deserialised, borrowed: a reconcile or
/// a watch mapper that cloned every object of the store each time spent most of the
/// operator's CPU on copies at 1,000 Goals.
pub fn readable<K>(objects: &[Arc<Guarded<K>>]) -> impl Iterator<Item = &K> {
    objects.iter().filter_map(|o| o.0.as_ref().ok())
}

/// Whether `cache` holds its first full list. Never awaited in a reconcile: kube's
/// readiness signal wakes only the last task that waited on it, so two reconciles
/// waiting together left one asleep for good. A reconcile that finds a cache not yet
/// listed comes back after `CACHE_NOT_LISTED_RETRY`.
pub fn listed<K>(cache: &kube::runtime::reflector::Store<K>) -> bool
where
    K: kube::runtime::reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    use futures::FutureExt;
    cache
        .wait_until_ready()
        .now_or_never()
        .is_some_and(|ready| ready.is_ok())
}

/// When a reconcile that found a cache not yet listed comes back.
pub const CACHE_NOT_LISTED_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// The answer of a reconcile of `controller` that found a cache it reads not yet
/// listed: counted as deferred (it decided nothing), back after `CACHE_NOT_LISTED_RETRY`.
pub fn deferred(ctx: &Context, controller: &'static str) -> kube::runtime::controller::Action {
    ctx.metrics
        .reconciles_deferred
        .get_or_create(&crate::metrics::ControllerLabels { controller })
        .inc();
    kube::runtime::controller::Action::requeue(CACHE_NOT_LISTED_RETRY)
}

/// The key of one object in `Failures`: kind, namespace and name.
pub fn object_key<K: Resource<DynamicType = ()>>(object: &K) -> String {
    key_of::<K>(
        object.meta().namespace.as_deref(),
        object.meta().name.as_deref().unwrap_or_default(),
    )
}

/// `object_key` of the `K` named `name` in `namespace`.
fn key_of<K: Resource<DynamicType = ()>>(namespace: Option<&str>, name: &str) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        namespace.unwrap_or_default(),
        name
    )
}

/// How long to wait before retrying an object that failed `failures` times in a row:
/// 1 s, doubling, at most 5 minutes. One object that keeps failing (a refused pod, an
/// API error of its own) is retried ever more slowly, while the others go on.
pub fn error_backoff(failures: u32) -> std::time::Duration {
    const FIRST: std::time::Duration = std::time::Duration::from_secs(1);
    const LONGEST: std::time::Duration = std::time::Duration::from_secs(300);
    FIRST
        .saturating_mul(2u32.saturating_pow(failures.saturating_sub(1)))
        .min(LONGEST)
}

/// Consecutive reconcile failures per object (`object_key`), for `error_backoff`.
/// An entry lives from an object's first failure to its next success.
#[derive(Default)]
pub struct Failures {
    by_object: std::sync::Mutex<std::collections::HashMap<String, u32>>,
}

impl Failures {
    /// Counts one more failure of `key`; returns how long to wait before the retry.
    pub fn failed(&self, key: String) -> std::time::Duration {
        let mut by_object = self.by_object.lock().unwrap_or_else(|e| e.into_inner());
        let failures = by_object.entry(key).or_default();
        *failures = failures.saturating_add(1);
        error_backoff(*failures)
    }

    pub fn succeeded(&self, key: &str) {
        let mut by_object = self.by_object.lock().unwrap_or_else(|e| e.into_inner());
        by_object.remove(key);
    }

    /// Forgets an object that is gone: a failing object deleted before its retry is
    /// never reconciled again, so nothing else would end its entry.
    pub fn forget(&self, key: &str) {
        self.succeeded(key);
    }
}

/// The error policy of every controller: log, count, and retry the object after its
/// own backoff.
pub fn retry_after_error<K: Resource<DynamicType = ()>>(
    ctx: &Context,
    controller: &'static str,
    object: &K,
    error: &Error,
) -> kube::runtime::controller::Action {
    let key = object_key(object);
    warn!(controller, object = %key, %error, "reconcile failed");
    ctx.metrics.observe_failure(controller, error);
    crate::duration::requeue(Some(ctx.failures.failed(key)))
}

/// A controller's own context (its caches, indexes and memos), which holds the shared one.
pub trait ControllerContext: Send + Sync + 'static {
    fn shared(&self) -> &Arc<Context>;
}

/// Runs `controller` until its graceful shutdown: `concurrency` objects at once, taken
/// fairly between namespaces (src/kubernetes/fair.rs), each reconcile through `reconcile_guarded`, failures through `retry_after_error`, and
/// what its stream says through `log_outcome`. The wiring all four kinds share.
pub async fn run_controller<K, C, Fut>(
    controller: kube::runtime::Controller<Guarded<K>>,
    name: &'static str,
    context: Arc<C>,
    shutdown: Shutdown,
    reconcile: fn(Arc<K>, Arc<C>) -> Fut,
) where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    C: ControllerContext,
    Fut: Future<Output = Result<kube::runtime::controller::Action>> + Send + 'static,
{
    // kube's own bound is lifted: its queue drains in hash order (src/kubernetes/fair.rs).
    let slots = crate::kubernetes::fair::FairSlots::new(context.shared().concurrency.into());
    let shared = context.shared().clone();
    let cache = controller.store();
    controller
        .with_config(kube::runtime::controller::Config::default().concurrency(0))
        .graceful_shutdown_on(shutdown)
        .run(
            move |object, context: Arc<C>| {
                let slot = Slot {
                    slots: slots.clone(),
                    cache: cache.clone(),
                    name,
                };
                in_slot(slot, object, context, reconcile)
            },
            move |object, error, context| {
                retry_after_error(context.shared(), name, &*object, error)
            },
            context,
        )
        .for_each(move |outcome| {
            if let Err(kube::runtime::controller::Error::ObjectNotFound(gone)) = &outcome {
                shared
                    .failures
                    .forget(&key_of::<K>(gone.namespace.as_deref(), &gone.name));
            }
            log_outcome(name, outcome)
        })
        .await;
}

/// What a reconcile waits for before it runs: a fair slot of its controller's, and the
/// controller's cache, to take the object from once the slot is held.
struct Slot<K: Resource<DynamicType = ()> + Clone + 'static> {
    slots: Arc<crate::kubernetes::fair::FairSlots>,
    cache: kube::runtime::reflector::Store<Guarded<K>>,
    name: &'static str,
}

/// One reconcile as kube runs it: a fair slot first, then the reconcile. The reconcile's
/// future is boxed only once the slot is held: kube keeps a future for every object
/// waiting for a slot, and a reconcile's own (every call it may make, inlined) is tens
/// of KiB; at 10,000 agents triggered at once (a restart) they were most of the
/// operator's memory. kube hands over the object as cached when it queued it, seconds
/// before the slot under load; the reconcile takes the cache's latest instead, which
/// holds the writes shown since (our own among them: deciding on the older one cost a
/// fresh read, 1.4 per goal of 3 steps at 1,000 goals).
async fn in_slot<K, C, Fut>(
    slot: Slot<K>,
    object: Arc<Guarded<K>>,
    context: Arc<C>,
    reconcile: fn(Arc<K>, Arc<C>) -> Fut,
) -> Result<kube::runtime::controller::Action>
where
    K: Resource<DynamicType = ()> + Clone,
    C: ControllerContext,
    Fut: Future<Output = Result<kube::runtime::controller::Action>>,
{
    let Slot { slots, cache, name } = slot;
    let _slot = slots
        .acquire(object.meta().namespace.as_deref().unwrap_or_default())
        .await;
    let object = cache
        .get(&kube::runtime::reflector::ObjectRef::from_obj(&*object))
        .unwrap_or(object);
    let shared = context.shared().clone();
    Box::pin(reconcile_guarded(shared, name, object, move |object| {
        reconcile(object, context)
    }))
    .await
}

/// Lets one watch serve two triggers. `notify` goes in the watch's `inspect_ok` and
/// sends the objects `related` names for each change (deletions included) to the stream
/// returned, which goes in `Controller::reconcile_on`. A second watch of the same kind
/// only to map a change to others would decode every object again.
pub fn related_trigger<K, R>(
    related: impl Fn(&K) -> Vec<kube::runtime::reflector::ObjectRef<R>>,
) -> (
    impl Fn(&Guarded<K>),
    futures::channel::mpsc::UnboundedReceiver<kube::runtime::reflector::ObjectRef<R>>,
)
where
    R: kube::runtime::reflector::Lookup,
    R::DynamicType: Eq + std::hash::Hash,
{
    let (sender, changes) = futures::channel::mpsc::unbounded();
    let notify = move |changed: &Guarded<K>| {
        if let Ok(changed) = &changed.0 {
            for object in related(changed) {
                // Fails only once the controller has stopped.
                let _ = sender.unbounded_send(object);
            }
        }
    };
    (notify, changes)
}

/// What each controller's stream says of one reconcile: failed reconciles are logged
/// and counted by `retry_after_error`; a watch error is logged here instead of
/// dropped (an object deleted after it was queued only at debug).
pub fn log_outcome<K, E: std::fmt::Display>(
    controller: &'static str,
    outcome: std::result::Result<
        (
            kube::runtime::reflector::ObjectRef<K>,
            kube::runtime::controller::Action,
        ),
        kube::runtime::controller::Error<Error, E>,
    >,
) -> futures::future::Ready<()>
where
    K: kube::runtime::reflector::Lookup,
    K::DynamicType: Eq + std::hash::Hash,
{
    use kube::runtime::controller::Error as Outcome;
    match outcome {
        Ok(_) | Err(Outcome::ReconcilerFailed(..)) => {}
        // Deleted after it was queued: nothing is wrong.
        Err(error @ Outcome::ObjectNotFound(_)) => debug!(controller, %error, "object gone"),
        Err(error) => warn!(controller, %error, "controller stream error"),
    }
    futures::future::ready(())
}

/// The objects in `store` that name `swarm` as theirs (`swarm_of`), to reconcile when
/// it changes: its agents, its goals.
pub fn naming_swarm<K>(
    store: &kube::runtime::reflector::Store<Guarded<K>>,
    swarm: &crate::kinds::swarm::Swarm,
    swarm_of: impl Fn(&K) -> Option<&str>,
) -> Vec<kube::runtime::reflector::ObjectRef<Guarded<K>>>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    use kube::ResourceExt;
    let name = swarm.name_any();
    crate::controller::readable(&store.state())
        .filter(|o| o.namespace() == swarm.namespace() && swarm_of(o) == Some(name.as_str()))
        .map(|o| {
            kube::runtime::reflector::ObjectRef::new(&o.name_any())
                .within(&o.namespace().unwrap_or_default())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Shared(Arc<Context>);
    impl ControllerContext for Shared {
        fn shared(&self) -> &Arc<Context> {
            &self.0
        }
    }

    /// A reconcile whose future is large, as a real one is.
    async fn large(
        _: Arc<k8s_openapi::api::core::v1::ConfigMap>,
        _: Arc<Shared>,
    ) -> Result<kube::runtime::controller::Action> {
        let buffer = [1u8; 64 * 1024];
        tokio::task::yield_now().await;
        Ok(kube::runtime::controller::Action::requeue(
            std::time::Duration::from_secs(u64::from(buffer[buffer.len() - 1])),
        ))
    }

    /// A context whose API server answers every request 404.
    fn not_found_context() -> Arc<Shared> {
        let client = crate::scripted::client(|_: &str, _: &str, _| {
            (http::StatusCode::NOT_FOUND, serde_json::Value::Null)
        })
        .0;
        Arc::new(Shared(crate::scripted::context(client)))
    }

    #[tokio::test]
    async fn a_reconcile_waiting_for_its_slot_holds_its_place_not_its_future() {
        let context = not_found_context();
        let object = Arc::new(Guarded(
            Ok(k8s_openapi::api::core::v1::ConfigMap::default()),
        ));
        let slot = Slot {
            slots: crate::kubernetes::fair::FairSlots::new(1),
            cache: kube::runtime::reflector::store().0,
            name: "test",
        };
        let waiting = in_slot(slot, object, context, large);
        let size = std::mem::size_of_val(&waiting);
        assert!(size < 1024, "a waiting reconcile holds {size} bytes");
    }

    /// Comes back after as many seconds as the object's resourceVersion says.
    async fn requeue_after_version(
        object: Arc<k8s_openapi::api::core::v1::ConfigMap>,
        _: Arc<Shared>,
    ) -> Result<kube::runtime::controller::Action> {
        let version = object.metadata.resource_version.as_deref().unwrap_or("0");
        Ok(kube::runtime::controller::Action::requeue(
            std::time::Duration::from_secs(version.parse().unwrap()),
        ))
    }

    #[tokio::test]
    async fn a_reconcile_decides_on_the_cache_as_it_is_when_its_slot_comes() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let context = not_found_context();
        let at = |version: &str| {
            let mut map = ConfigMap::default();
            map.metadata.name = Some("m".into());
            map.metadata.namespace = Some("n".into());
            map.metadata.resource_version = Some(version.into());
            Guarded(Ok(map))
        };
        let (cache, mut writer) = kube::runtime::reflector::store();
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(at("2")));
        let slot = Slot {
            slots: crate::kubernetes::fair::FairSlots::new(1),
            cache,
            name: "test",
        };
        // Queued at version 1; the watch showed version 2 before the slot came.
        let action = in_slot(slot, Arc::new(at("1")), context, requeue_after_version)
            .await
            .unwrap();
        assert_eq!(
            action,
            kube::runtime::controller::Action::requeue(std::time::Duration::from_secs(2))
        );
    }

    #[tokio::test]
    async fn a_cache_is_listed_only_after_its_first_full_list_and_two_may_ask() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::runtime::watcher::Event;
        let (cache, mut writer) = kube::runtime::reflector::store::<ConfigMap>();
        assert!(!listed(&cache), "nothing listed yet");
        assert!(!listed(&cache), "asking again changes nothing");
        writer.apply_watcher_event(&Event::Init);
        assert!(!listed(&cache), "a list under way");
        writer.apply_watcher_event(&Event::InitDone);
        assert!(listed(&cache));
        assert!(listed(&cache.clone()), "every reader sees it");
    }

    #[tokio::test]
    async fn a_panicking_reconcile_is_an_error_not_a_crash() {
        let panicked = contained(async {
            let empty: Vec<u8> = Vec::new();
            Ok(empty[usize::MAX >> 1])
        })
        .await;
        assert!(
            matches!(&panicked, Err(Error::Panicked(m)) if m.contains("index out of bounds")),
            "{panicked:?}"
        );
        assert!(matches!(contained(async { Ok(7) }).await, Ok(7)));
    }

    #[test]
    fn error_backoff_table() {
        let secs = std::time::Duration::from_secs;
        let rows = [
            (0, secs(1)),
            (1, secs(1)),
            (2, secs(2)),
            (3, secs(4)),
            (9, secs(256)),
            (10, secs(300)),
            (u32::MAX, secs(300)),
        ];
        for (failures, want) in rows {
            assert_eq!(error_backoff(failures), want, "{failures} failures");
        }
    }

    #[test]
    fn each_object_backs_off_on_its_own_and_a_success_starts_again() {
        let failures = Failures::default();
        let secs = std::time::Duration::from_secs;
        let backoffs: Vec<_> = (0..3).map(|_| failures.failed("Goal/n/a".into())).collect();
        assert_eq!(backoffs, [secs(1), secs(2), secs(4)]);
        assert_eq!(
            failures.failed("Goal/n/b".into()),
            secs(1),
            "another object"
        );
        failures.succeeded("Goal/n/a");
        assert_eq!(
            failures.failed("Goal/n/a".into()),
            secs(1),
            "after a success"
        );
        failures.failed("Goal/n/b".into());
        failures.forget("Goal/n/b");
        assert_eq!(
            failures.failed("Goal/n/b".into()),
            secs(1),
            "one deleted and made again starts afresh"
        );
        assert_eq!(
            failures.by_object.lock().unwrap().len(),
            2,
            "only the objects failing now are kept"
        );
    }
}
