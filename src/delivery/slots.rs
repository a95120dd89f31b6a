//! Where the operator's execs into pods run, so that no tenant can starve the others:
//! an agent whose exec hangs (its shim's socket answers nothing) holds an exec for its
//! deadline. Every exec runs in a task of its own, out of the reconciles (the Agent
//! controller's delivery tasks, a Goal's step outcome told to its overseer), once its
//! namespace has one of its `PER_NAMESPACE` slots and the operator one of its
//! `IN_ALL`: a namespace whose execs hang waits on its own slots and holds none of the
//! others', and no controller's reconcile slot waits for any exec.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::Semaphore;
use tracing::warn;

/// Execs one namespace may have in flight at once.
pub const PER_NAMESPACE: usize = 2;

/// Execs the operator has in flight at once, of all namespaces: a task and a
/// connection each, so many; this bounds what a hundred namespaces whose execs all
/// hang can hold.
pub const IN_ALL: usize = 512;

/// When a reconcile that found no free slot for its namespace looks again.
pub const RETRY: Duration = Duration::from_secs(2);

/// Deliveries of one namespace that may wait for a slot; more are dropped (each
/// caller says so in an Event).
const MAX_WAITING: usize = 256;

/// The exec slots of the whole operator and of each namespace.
pub struct Deliveries {
    all: Arc<Semaphore>,
    namespaces: Mutex<HashMap<String, Namespace>>,
}

struct Namespace {
    slots: Arc<Semaphore>,
    waiting: Arc<()>,
}

impl Deliveries {
    pub fn new(in_all: usize) -> Self {
        Deliveries {
            all: Arc::new(Semaphore::new(in_all.max(1))),
            namespaces: Mutex::default(),
        }
    }

    fn namespace(&self, namespace: &str) -> (Arc<Semaphore>, Arc<()>) {
        let mut namespaces = self.namespaces.lock().unwrap_or_else(|e| e.into_inner());
        let entry = namespaces
            .entry(namespace.to_string())
            .or_insert_with(|| Namespace {
                slots: Arc::new(Semaphore::new(PER_NAMESPACE)),
                waiting: Arc::new(()),
            });
        (entry.slots.clone(), entry.waiting.clone())
    }

    /// Runs `delivery` in the background once `namespace` has a slot (its own first:
    /// a namespace whose execs hang waits on its own slots and holds none of the
    /// others'). False, and nothing run, when that namespace already has too many
    /// waiting.
    pub fn spawn(
        self: &Arc<Self>,
        namespace: &str,
        delivery: impl Future<Output = ()> + Send + 'static,
    ) -> bool {
        let (slots, waiting) = self.namespace(namespace);
        if Arc::strong_count(&waiting) > MAX_WAITING {
            warn!(
                namespace,
                "too many deliveries waiting in this namespace; one dropped"
            );
            return false;
        }
        let all = self.all.clone();
        tokio::spawn(async move {
            let _waiting = waiting;
            let Ok(_own) = slots.acquire_owned().await else {
                return;
            };
            let Ok(_all) = all.acquire_owned().await else {
                return;
            };
            delivery.await;
        });
        true
    }
}

/// The objects of one kind with a delivery task (at most one each), and the way back
/// into their controller: while an object's task runs its reconciles wait (they would
/// write the status the task writes), and when the task ends the object is reconciled
/// again.
pub struct Running<K: Resource<DynamicType = ()> + Send + 'static> {
    running: Mutex<HashSet<(String, String)>>,
    again: UnboundedSender<ObjectRef<K>>,
}

impl<K: Resource<DynamicType = ()> + Send + 'static> Running<K> {
    /// `again` takes the objects whose tasks ended: the controller's `reconcile_on`.
    pub fn new(again: UnboundedSender<ObjectRef<K>>) -> Arc<Self> {
        Arc::new(Running {
            running: Mutex::default(),
            again,
        })
    }

    /// Whether `name` of `namespace` has a task.
    pub fn running(&self, namespace: &str, name: &str) -> bool {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.contains(&(namespace.to_string(), name.to_string()))
    }

    /// Marks `name` as having a task; its guard unmarks it and asks for it again when
    /// dropped, however the task ends. None when it has a task already.
    pub fn begin(self: &Arc<Self>, namespace: &str, name: &str) -> Option<Task<K>> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running
            .insert((namespace.to_string(), name.to_string()))
            .then(|| Task {
                running: self.clone(),
                namespace: namespace.to_string(),
                name: name.to_string(),
                after: Some(RETRY),
            })
    }
}

/// An object's task, held while it runs.
pub struct Task<K: Resource<DynamicType = ()> + Send + 'static> {
    running: Arc<Running<K>>,
    namespace: String,
    name: String,
    /// When the object is reconciled again once the task ends (None: at once). A task
    /// that ends early, or never starts, leaves the default: a moment later.
    pub after: Option<Duration>,
}

impl<K: Resource<DynamicType = ()> + Send + 'static> Drop for Task<K> {
    fn drop(&mut self) {
        let mut running = self
            .running
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        running.remove(&(self.namespace.clone(), self.name.clone()));
        let reference = ObjectRef::<K>::new(&self.name).within(&self.namespace);
        let again = self.running.again.clone();
        match self.after {
            None => {
                let _ = again.unbounded_send(reference);
            }
            Some(after) => {
                // Dropped outside a runtime only when the process ends.
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        tokio::time::sleep(after).await;
                        let _ = again.unbounded_send(reference);
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_namespace_whose_execs_hang_holds_only_its_own_slots() {
        let deliveries = Arc::new(Deliveries::new(4));
        let (started, mut starts) = tokio::sync::mpsc::unbounded_channel::<&str>();
        // Ten deliveries in one namespace whose execs hang.
        for _ in 0..10 {
            let started = started.clone();
            assert!(deliveries.spawn("noisy", async move {
                let _ = started.send("noisy");
                std::future::pending::<()>().await;
            }));
        }
        let noisy: Vec<_> = [starts.recv().await, starts.recv().await].into();
        assert_eq!(noisy, [Some("noisy"); 2], "two run, the rest wait");
        let third = tokio::time::timeout(Duration::from_millis(200), starts.recv()).await;
        assert!(third.is_err(), "its own slots are taken: {third:?}");
        // Another namespace's delivery runs at once.
        let started_quiet = started.clone();
        assert!(deliveries.spawn("quiet", async move {
            let _ = started_quiet.send("quiet");
        }));
        let next = tokio::time::timeout(Duration::from_secs(5), starts.recv()).await;
        assert_eq!(next.ok().flatten(), Some("quiet"));
        // The waiting ones are bounded.
        let refused = (0..MAX_WAITING * 2)
            .map(|_| deliveries.spawn("noisy", async {}))
            .filter(|spawned| !spawned)
            .count();
        assert!(refused > 0, "a namespace cannot queue without bound");
    }

    #[tokio::test]
    async fn one_task_per_object_and_the_object_comes_back_when_it_ends() {
        use futures::StreamExt;
        use k8s_openapi::api::core::v1::ConfigMap;
        let (again, mut back) = futures::channel::mpsc::unbounded();
        let running = Running::<ConfigMap>::new(again);
        let mut task = running.begin("team", "a").expect("the first task");
        assert!(running.running("team", "a"));
        assert!(running.begin("team", "a").is_none(), "one at a time");
        assert!(running.begin("team", "b").is_some(), "others are free");
        task.after = None;
        drop(task);
        assert!(!running.running("team", "a"));
        let mut names = Vec::new();
        for _ in 0..2 {
            let reference = tokio::time::timeout(Duration::from_secs(5), back.next())
                .await
                .unwrap()
                .unwrap();
            names.push(reference.name);
        }
        assert_eq!(names, ["a", "b"], "at once, then after the default pause");
    }
}
