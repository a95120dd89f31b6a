//! One watch and one cache per kind, shared by every controller that reads the kind.
//! Agents were watched, decoded and cached three times (by the Agent, Swarm and PRWatch
//! controllers), Swarms three times and Goals twice. Now `operator.rs` opens one watch
//! of each, keeps one cache, and hands every event of it to each controller that
//! subscribed (`SharedWatch::subscribe`), deletions included, which kube's own shared
//! streams leave out (they carry only objects still in the cache) and which the
//! related-object triggers need: a goal deleted may release the goals that depend on it.
//! It also keeps the kind's `Versions` (src/kubernetes/fresh.rs) in the watch's order,
//! which is what lets a controller decide on a cached object without reading it again.

use std::sync::Arc;

use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use kube::ResourceExt;
use kube::runtime::reflector::{self, Lookup, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use tracing::warn;

use super::fresh::Versions;

/// A watch, its cache and the controllers that subscribed to its events.
pub struct SharedWatch<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store: Store<K>,
    writer: Writer<K>,
    versions: Arc<Versions>,
    subscribers: Vec<mpsc::UnboundedSender<watcher::Event<K>>>,
}

/// One controller's share of a `SharedWatch`: the cache, and every event from the start.
pub struct Subscription<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    pub store: Store<K>,
    /// Which cached versions the kind's controller may decide on as they are.
    pub versions: Arc<Versions>,
    pub events: mpsc::UnboundedReceiver<watcher::Event<K>>,
}

impl<K> Subscription<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    /// The objects applied or deleted, as a controller's trigger stream takes them.
    pub fn touched(self) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
    where
        K: Send,
    {
        self.events.map(Ok).touched_objects()
    }
}

impl<K> Default for SharedWatch<K>
where
    K: Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Default,
{
    fn default() -> Self {
        let (store, writer) = reflector::store();
        SharedWatch {
            store,
            writer,
            versions: Arc::default(),
            subscribers: Vec::new(),
        }
    }
}

impl<K> SharedWatch<K>
where
    K: kube::Resource + Lookup + Clone + Send + Sync + 'static,
    <K as Lookup>::DynamicType: Eq + std::hash::Hash + Clone + Default,
    <K as kube::Resource>::DynamicType: Eq + std::hash::Hash + Clone + Default,
{
    /// The cache, for readers that take no events (the metrics of objects by phase).
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// One more controller's share. Every subscription is taken before `run`, so each
    /// sees the first list whole.
    pub fn subscribe(&mut self) -> Subscription<K> {
        let (sender, events) = mpsc::unbounded();
        self.subscribers.push(sender);
        Subscription {
            store: self.store.clone(),
            versions: self.versions.clone(),
            events,
        }
    }

    /// Keeps the cache from `watch` and hands each event to every subscriber, the cache
    /// and the versions first; ends when the watch does. The watch's lists must be
    /// consistent reads (`watcher::Config`'s default, not `any_semantic`): the versions
    /// trust them. A watch error is logged here (the watch retries
    /// with backoff), for the controllers see only events. Nothing reads who wrote which
    /// field, so managed fields are not kept (at 10,000 Agents, a good part of the
    /// cache), and no object is ever written back from the cache.
    pub async fn run(
        self,
        kind: &'static str,
        watch: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    ) {
        let (subscribers, versions) = (self.subscribers, self.versions);
        watch
            .modify(|object| object.meta_mut().managed_fields = None)
            .reflect(self.writer)
            .for_each(|event| {
                match event {
                    Ok(event) => {
                        match &event {
                            watcher::Event::Apply(object) | watcher::Event::InitApply(object) => {
                                versions.streamed(object)
                            }
                            watcher::Event::Delete(object) => versions.forget(
                                object.meta().namespace.as_deref().unwrap_or_default(),
                                &object.name_any(),
                            ),
                            _ => {}
                        }
                        for subscriber in &subscribers {
                            // Fails only once that controller has stopped.
                            let _ = subscriber.unbounded_send(event.clone());
                        }
                    }
                    Err(error) => warn!(kind, %error, "watch error"),
                }
                futures::future::ready(())
            })
            .await;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn map(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("n".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn every_subscriber_sees_every_event_deletions_included_after_the_cache() {
        use watcher::Event;
        let mut shared = SharedWatch::<ConfigMap>::default();
        let (first, second) = (shared.subscribe(), shared.subscribe());
        let cache = first.store.clone();
        let mut written = map("a");
        written.metadata.managed_fields = Some(vec![Default::default()]);
        let events = vec![
            Event::Init,
            Event::InitApply(written),
            Event::InitDone,
            Event::Apply(map("b")),
            Event::Delete(map("a")),
        ];
        shared
            .run(
                "ConfigMap",
                futures::stream::iter(events.into_iter().map(Ok)),
            )
            .await;
        assert_eq!(cache.state().len(), 1, "the cache holds b alone");
        assert!(
            cache.state()[0].metadata.managed_fields.is_none(),
            "managed fields are not kept"
        );
        for subscription in [first, second] {
            let touched: Vec<String> = subscription
                .touched()
                .map(|m| {
                    let m = m.unwrap();
                    assert!(m.metadata.managed_fields.is_none(), "{m:?}");
                    m.metadata.name.unwrap()
                })
                .collect()
                .await;
            assert_eq!(touched, ["a", "b", "a"], "applied, applied, deleted");
        }
    }

    fn at(name: &str, version: &str) -> ConfigMap {
        let mut m = map(name);
        m.metadata.resource_version = Some(version.into());
        m
    }

    #[tokio::test]
    async fn the_versions_follow_the_watch_before_any_subscriber_sees_an_event() {
        use watcher::Event;
        let mut shared = SharedWatch::<ConfigMap>::default();
        let subscription = shared.subscribe();
        let versions = subscription.versions.clone();
        // A write of ours to b that the watch has not shown when it shows b at 3.
        versions.saw(&at("b", "4"));
        let events = vec![
            Event::Init,
            Event::InitApply(at("a", "1")),
            Event::InitDone,
            Event::Apply(at("b", "3")),
            Event::Apply(at("c", "5")),
            Event::Delete(at("c", "6")),
        ];
        shared
            .run(
                "ConfigMap",
                futures::stream::iter(events.into_iter().map(Ok)),
            )
            .await;
        assert!(
            versions.is_current(&at("a", "1")),
            "the first list is trusted"
        );
        assert!(
            !versions.is_current(&at("b", "3")),
            "older than our write, or maybe: read again"
        );
        assert!(versions.is_current(&at("b", "4")), "our write");
        assert!(!versions.is_current(&at("c", "5")), "deleted: forgotten");
    }
}
