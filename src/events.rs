//! Events leave the reconcile. A reconcile queues its Events and goes on; two
//! publishers send them to the API server behind it. Awaited in the reconcile, a Goal's
//! two Events per step were two of its five writes in a row before the next step's pod,
//! and published by as many tasks as reconciles they took the API server's capacity
//! from the next step's pod (docs/goal.md "At scale").
//!
//! Events are a courtesy, not the record: the status a reconcile writes first is. So,
//! as client-go's broadcaster does, an Event that finds its publisher's queue full is
//! dropped and counted (`overseer_events_dropped_total`), never waited for, and one
//! still queued when the process ends is lost.

use std::hash::{Hash, Hasher};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, Recorder};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;
use tracing::warn;

/// Publishers working at once: few, so that under load Events wait behind the writes
/// that move work on. The Events of one object always go through the same publisher,
/// one after the other, so they reach the API server in the order queued.
const PUBLISHERS: usize = 2;
/// Events waiting per publisher before more are dropped.
const QUEUE: usize = 4096;

struct Queued {
    event: Event,
    regarding: ObjectReference,
}

/// Where reconciles queue their Events.
pub struct EventQueue {
    publishers: Vec<mpsc::Sender<Queued>>,
    dropped: Counter,
}

impl EventQueue {
    /// Starts the publishers on the current runtime; they stop when the queue is
    /// dropped. Events dropped for a full queue are counted in `dropped`.
    pub fn start(recorder: Recorder, dropped: Counter) -> Self {
        let publishers = (0..PUBLISHERS)
            .map(|_| {
                let (sender, receiver) = mpsc::channel(QUEUE);
                tokio::spawn(publish_all(recorder.clone(), receiver));
                sender
            })
            .collect();
        EventQueue {
            publishers,
            dropped,
        }
    }

    /// Queues `event` about `regarding`, or drops it when its publisher's queue is full.
    pub fn send(&self, event: Event, regarding: ObjectReference) {
        let publisher = &self.publishers[publisher_of(&regarding, self.publishers.len())];
        match publisher.try_send(Queued { event, regarding }) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(queued)) => {
                self.dropped.inc();
                warn!(
                    reason = queued.event.reason,
                    "event queue full: event dropped"
                );
            }
            // The publisher stops only when the process ends.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// Which of `publishers` takes the Events about `regarding`: the same one every time.
fn publisher_of(regarding: &ObjectReference, publishers: usize) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&regarding.kind, &regarding.namespace, &regarding.name).hash(&mut hasher);
    (hasher.finish() % publishers as u64) as usize
}

async fn publish_all(recorder: Recorder, mut receiver: mpsc::Receiver<Queued>) {
    while let Some(queued) = receiver.recv().await {
        if let Err(error) = recorder.publish(&queued.event, &queued.regarding).await {
            warn!(%error, reason = queued.event.reason, "publishing an event failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(kind: &str, namespace: &str, name: &str) -> ObjectReference {
        ObjectReference {
            kind: Some(kind.into()),
            namespace: Some(namespace.into()),
            name: Some(name.into()),
            ..Default::default()
        }
    }

    #[test]
    fn one_object_always_goes_through_one_publisher_and_objects_spread_over_all() {
        let goal = reference("Goal", "team", "ship");
        let first = publisher_of(&goal, PUBLISHERS);
        for _ in 0..10 {
            assert_eq!(publisher_of(&goal.clone(), PUBLISHERS), first);
        }
        let used: std::collections::HashSet<usize> = (0..200)
            .map(|i| publisher_of(&reference("Goal", "team", &format!("g{i}")), PUBLISHERS))
            .collect();
        assert_eq!(used.len(), PUBLISHERS, "200 goals use every publisher");
    }
}
