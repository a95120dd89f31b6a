//! Where the operator's execs into pods run, so that no tenant can starve the others:
//! an agent whose exec hangs (its shim's socket answers nothing) holds an exec for its
//! deadline. Each namespace may have `PER_NAMESPACE` execs at once, and all namespaces
//! together `concurrency`. Deliveries that need no answer in the reconcile (a Goal's
//! step outcome told to its overseer) run here, out of it; those a reconcile settles
//! in status (nudges, wakes, sends, PR wakes) take a slot or, when their namespace has
//! none free, are looked at again a moment later, never waiting in a controller's slot.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::warn;

/// Execs one namespace may have in flight at once.
pub const PER_NAMESPACE: usize = 2;

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

/// A slot held: one exec of its namespace may run until this is dropped.
pub struct Slot {
    _namespace: OwnedSemaphorePermit,
    _all: OwnedSemaphorePermit,
}

impl Deliveries {
    pub fn new(concurrency: usize) -> Self {
        Deliveries {
            all: Arc::new(Semaphore::new(concurrency.max(1))),
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

    /// A slot for `namespace` now, or None while its own are taken (or every one is).
    pub fn try_slot(&self, namespace: &str) -> Option<Slot> {
        let (slots, _) = self.namespace(namespace);
        let own = slots.try_acquire_owned().ok()?;
        let all = self.all.clone().try_acquire_owned().ok()?;
        Some(Slot {
            _namespace: own,
            _all: all,
        })
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
        assert!(
            deliveries.try_slot("noisy").is_none(),
            "its own slots are taken"
        );
        // Another namespace gets a slot at once, in the reconcile and in the background.
        let slot = deliveries.try_slot("quiet");
        assert!(slot.is_some(), "the quiet namespace waits for nobody");
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
}
