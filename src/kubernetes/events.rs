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
//!
//! The publisher is this module's own, not kube's `Recorder`, for two reasons seen on a
//! real API server: the Recorder folds Events that differ only in their note into one
//! series, keeping the first note (a Swarm's second `AgentCreated` lost its member's
//! name), and it names an Event after its object, so an object with a long name (a
//! Goal of 253 characters) had every Event refused. Here an Event repeats into a series
//! only when its note is the same, and its name always fits.

use std::hash::{Hash, Hasher};

use std::collections::HashMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use kube::{Api, Client, ResourceExt};
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
    pub fn start(client: Client, controller: &str, dropped: Counter) -> Self {
        let publishers = (0..PUBLISHERS)
            .map(|_| {
                let (sender, receiver) = mpsc::channel(QUEUE);
                let publisher = Publisher {
                    client: client.clone(),
                    controller: controller.to_string(),
                    recent: HashMap::new(),
                };
                tokio::spawn(publish_all(publisher, receiver));
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

/// How long an Event stays one that a repeat adds to (as client-go's and kube's).
const SERIES_WINDOW: jiff::SignedDuration = jiff::SignedDuration::from_mins(6);

/// What makes two Events one series: everything they say, note included.
#[derive(Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    warning: bool,
    reason: String,
    action: String,
    note: Option<String>,
    regarding: (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ),
    related: Option<(Option<String>, Option<String>)>,
}

impl SeriesKey {
    fn of(event: &Event, regarding: &ObjectReference) -> Self {
        SeriesKey {
            warning: event.type_ == EventType::Warning,
            reason: event.reason.clone(),
            action: event.action.clone(),
            note: event.note.clone(),
            regarding: (
                regarding.kind.clone(),
                regarding.namespace.clone(),
                regarding.name.clone(),
                regarding.uid.clone(),
            ),
            related: event
                .secondary
                .as_ref()
                .map(|r| (r.kind.clone(), r.name.clone())),
        }
    }
}

/// Sends Events, one at a time, and the repeats of an Event as its series.
struct Publisher {
    client: Client,
    controller: String,
    /// The Events sent within the series window, by what they say.
    recent: HashMap<SeriesKey, K8sEvent>,
}

impl Publisher {
    async fn publish(&mut self, event: &Event, regarding: &ObjectReference) -> kube::Result<()> {
        let now = Timestamp::now();
        self.recent
            .retain(|_, sent| last_seen(sent).is_some_and(|t| t + SERIES_WINDOW > now));
        let key = SeriesKey::of(event, regarding);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        let sent = match self.recent.get(&key) {
            Some(earlier) => {
                let mut repeat = earlier.clone();
                repeat.series = Some(EventSeries {
                    count: earlier
                        .series
                        .as_ref()
                        .map_or(2, |s| s.count.saturating_add(1)),
                    last_observed_time: MicroTime(now),
                });
                let patch = serde_json::json!({"series": repeat.series});
                events
                    .patch(
                        &repeat.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await?;
                repeat
            }
            None => {
                let new = new_event(&self.controller, event, regarding, now);
                events.create(&PostParams::default(), &new).await?
            }
        };
        self.recent.insert(key, sent);
        Ok(())
    }
}

fn last_seen(event: &K8sEvent) -> Option<Timestamp> {
    match &event.series {
        Some(series) => Some(series.last_observed_time.0),
        None => event.event_time.as_ref().map(|t| t.0),
    }
}

/// The longest object name: an Event's name is the object's, a dot and 16 hex digits.
const NAME_LIMIT: usize = 253 - 17;

/// A new Event about `regarding`, named so that the name fits whatever the object's.
fn new_event(
    controller: &str,
    event: &Event,
    regarding: &ObjectReference,
    now: Timestamp,
) -> K8sEvent {
    let object = regarding.name.as_deref().unwrap_or(controller);
    K8sEvent {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}.{:x}",
                crate::api::fit_name(object, NAME_LIMIT),
                now.as_nanosecond()
            )),
            namespace: regarding.namespace.clone(),
            ..Default::default()
        },
        action: Some(event.action.clone()),
        reason: Some(event.reason.clone()),
        note: event.note.clone(),
        event_time: Some(MicroTime(now)),
        regarding: Some(regarding.clone()),
        related: event.secondary.clone(),
        reporting_controller: Some(controller.to_string()),
        reporting_instance: Some(controller.to_string()),
        type_: Some(match event.type_ {
            EventType::Normal => "Normal".into(),
            EventType::Warning => "Warning".into(),
        }),
        ..Default::default()
    }
}

async fn publish_all(mut publisher: Publisher, mut receiver: mpsc::Receiver<Queued>) {
    while let Some(queued) = receiver.recv().await {
        if let Err(error) = publisher.publish(&queued.event, &queued.regarding).await {
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

    fn event(reason: &str, note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note.into()),
            action: "Reconcile".into(),
            secondary: None,
        }
    }

    #[test]
    fn events_that_say_different_things_are_never_one_series() {
        let swarm = reference("Swarm", "team", "crew");
        let first = SeriesKey::of(&event("AgentCreated", "created member crew-a"), &swarm);
        let second = SeriesKey::of(&event("AgentCreated", "created member crew-b"), &swarm);
        let again = SeriesKey::of(&event("AgentCreated", "created member crew-a"), &swarm);
        assert!(
            first != second,
            "each member's creation is an Event of its own"
        );
        assert!(first == again, "a repeat is the same series");
    }

    #[test]
    fn an_event_name_fits_whatever_the_objects_name() {
        let long = "g".repeat(253);
        let goal = reference("Goal", "team", &long);
        let now = Timestamp::from_second(i64::from(i32::MAX)).unwrap();
        let made = new_event(
            "overseer-controller",
            &event("StepStarted", "x"),
            &goal,
            now,
        );
        let name = made.metadata.name.unwrap();
        assert!(name.len() <= 253, "{} characters", name.len());
        let other = reference("Goal", "team", &format!("{}h", "g".repeat(252)));
        let theirs = new_event(
            "overseer-controller",
            &event("StepStarted", "x"),
            &other,
            now,
        );
        assert_ne!(
            theirs.metadata.name.unwrap(),
            name,
            "cut names keep a hash of the whole"
        );
    }
}
