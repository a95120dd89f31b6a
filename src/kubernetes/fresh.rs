//! When a cached object is fresh enough to decide on.
//!
//! A plan decides on status, and status is the checkpoint: deciding on a cached object
//! that has not yet seen our own last status write would repeat that write's Events
//! and notifications. Reading every object fresh before each reconcile is safe but
//! costs a round trip each time. Instead the watch of each kind remembers the
//! resourceVersion of every object as its controller last wrote it, or last read it
//! fresh, and whether the watch has shown that version yet. A cached object at exactly
//! that version holds our last write, so it is decided on as it is. Once the watch has
//! shown our last write, every later version it shows (someone else's write: the
//! shim's report, a sender's message) is newer, for a watch delivers an object's
//! versions in order, and is decided on as it is too. Until then any other version may
//! be older than our write and is read again. The watch's first list is a consistent
//! read (never the API server's possibly lagging watch cache), so it holds every write
//! the process before this one made: after a restart nothing is read again.
//! resourceVersions are only compared for equality, as the API conventions allow.
//!
//! Children that a reconcile keeps in step but does not watch (an agent's Role, its
//! instructions ConfigMap) are compared with what this operator last applied or read
//! (`Applied`): only a child whose wanted content changed since is read again.
//!
//! A child this operator just created may not be in its cache yet when the next
//! reconcile of its owner runs (our own status write triggers one at once). `Creating`
//! remembers it until the cache shows it, so that reconcile does not create it again
//! (the ReplicaSet controller's "expectations"). At 200 Goals, 486 of 1,086 step pod
//! creations were such repeats, refused by the API server as existing.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use serde::Serialize;

use kube::{Resource, ResourceExt};

use super::key::key_of;

/// Per object (by `key_of` its namespace and name): the resourceVersion a cached object
/// may be decided on at, and the last version its watch showed.
#[derive(Default)]
pub struct Versions(Mutex<HashMap<u64, Known>>);

#[derive(Default)]
struct Known {
    /// The version last written or read fresh, or shown by the watch since.
    trusted: Option<String>,
    /// Whether the watch has shown `trusted`: its later versions are newer.
    shown: bool,
    /// The last version the watch showed.
    streamed: Option<String>,
}

fn key<K: Resource>(object: &K) -> u64 {
    let meta = object.meta();
    key_of((
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    ))
}

impl Versions {
    /// Whether `cached` may be decided on as it is: it is at the version last written
    /// or read fresh, or the watch showed it after that version.
    pub fn is_current<K: Resource>(&self, cached: &K) -> bool {
        let known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match (known.get(&key(cached)), &cached.meta().resource_version) {
            (Some(known), Some(cached)) => known.trusted.as_ref() == Some(cached),
            _ => false,
        }
    }

    /// Records the version of `object` as just read fresh or returned by our write.
    pub fn saw<K: Resource>(&self, object: &K) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = known.entry(key(object)).or_default();
        entry.trusted = object.meta().resource_version.clone();
        // The watch may have shown it before our write's answer came back.
        entry.shown = entry.trusted.is_some() && entry.trusted == entry.streamed;
    }

    /// Records a version the watch showed (its first list included, a consistent
    /// read): trusted unless a write or read of ours is still to show.
    pub fn streamed<K: Resource>(&self, object: &K) {
        let Some(version) = &object.meta().resource_version else {
            return;
        };
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = known.entry(key(object)).or_default();
        entry.streamed = Some(version.clone());
        if entry.trusted.is_none() || entry.shown || entry.trusted.as_ref() == Some(version) {
            entry.trusted = Some(version.clone());
            entry.shown = true;
        }
    }

    /// Forgets `object` (deleted, or gone).
    pub fn forget(&self, namespace: &str, name: &str) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        known.remove(&key_of((namespace, name)));
    }
}

/// A digest of the content of each child (by `key_of` its kind, namespace and name) as
/// this operator last applied it or read it from the API server.
#[derive(Default)]
pub struct Applied(Mutex<HashMap<u64, u64>>);

/// A digest of `content`'s JSON: equal for equal content within one build of the
/// operator (what `Applied` records, and what a cache summary keeps instead of content).
pub fn digest(content: &impl Serialize) -> Option<u64> {
    let text = serde_json::to_string(content).ok()?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    Some(hasher.finish())
}

impl Applied {
    /// Whether `wanted` is what the child was last applied or read with.
    pub fn holds(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
        wanted: &impl Serialize,
    ) -> bool {
        let known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = key_of((kind, namespace, name));
        digest(wanted).is_some_and(|d| known.get(&key) == Some(&d))
    }

    /// Forgets the child (its owner is gone).
    pub fn forget(&self, kind: &'static str, namespace: &str, name: &str) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        known.remove(&key_of((kind, namespace, name)));
    }

    /// Records that the child now holds `content` (just applied, or read).
    pub fn record(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
        content: &impl Serialize,
    ) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = key_of((kind, namespace, name));
        match digest(content) {
            Some(d) => known.insert(key, d),
            None => known.remove(&key),
        };
    }
}

/// How long a child created (or deleted) is awaited in the cache. Past it the owner
/// decides without it again: a child created and deleted before a relist never shows
/// in the cache, and its owner would otherwise wait for it for good. A child still on
/// its way then is created again and refused as existing, which is harmless.
pub const CACHE_LAG_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The children each owner (by namespace and name) created that its cache has not
/// shown yet, with what the owner should take each for meanwhile (a goal starts several
/// step pods at once).
pub struct Creating<T>(Mutex<HashMap<Owner, Vec<Awaited<T>>>>);

/// An owner by namespace and name.
type Owner = (String, String);

/// A child by name, what to take it for, and since when it is awaited.
type Awaited<T> = (String, T, std::time::Instant);

impl<T> Default for Creating<T> {
    fn default() -> Self {
        Creating(Mutex::default())
    }
}

impl<T: Clone> Creating<T> {
    /// Records, before the create is sent, that `owner` is creating `child`, seen
    /// meanwhile as `pending`; any watch event of the child from then on ends the wait.
    pub fn started(&self, namespace: &str, owner: &str, child: &str, pending: T) {
        let mut creating = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let children = creating
            .entry((namespace.to_string(), owner.to_string()))
            .or_default();
        children.retain(|(name, ..)| name != child);
        children.push((child.to_string(), pending, std::time::Instant::now()));
    }

    /// Ends the wait for `child` of `owner`: its create failed, or the cache shows it.
    pub fn forget(&self, namespace: &str, owner: &str, child: &str) {
        let mut creating = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = (namespace.to_string(), owner.to_string());
        if let Some(children) = creating.get_mut(&key) {
            children.retain(|(name, ..)| name != child);
            if children.is_empty() {
                creating.remove(&key);
            }
        }
    }

    /// Ends the wait for every child of `owner`: the owner is gone.
    pub fn ended(&self, namespace: &str, owner: &str) {
        let mut creating = self.0.lock().unwrap_or_else(|p| p.into_inner());
        creating.remove(&(namespace.to_string(), owner.to_string()));
    }

    /// Ends the wait for `child` (by its controller owner), which the cache now shows.
    pub fn shown<K: Resource>(&self, child: &K) {
        let Some(owner) = crate::api::controller_of(child) else {
            return;
        };
        self.forget(
            &child.namespace().unwrap_or_default(),
            &owner.name,
            &child.name_any(),
        );
    }

    /// The children `owner` is creating, by name, as each should be taken meanwhile:
    /// those awaited for less than `CACHE_LAG_LIMIT`.
    pub fn awaited(&self, namespace: &str, owner: &str) -> Vec<(String, T)> {
        let creating = self.0.lock().unwrap_or_else(|p| p.into_inner());
        creating
            .get(&(namespace.to_string(), owner.to_string()))
            .into_iter()
            .flatten()
            .filter(|(.., since)| since.elapsed() < CACHE_LAG_LIMIT)
            .map(|(name, pending, _)| (name.clone(), pending.clone()))
            .collect()
    }
}

/// Children this operator deleted (by `key_of` their namespace and name) that its cache
/// may still show as they were, for at most `CACHE_LAG_LIMIT`. A reconcile run before
/// the cache shows the deletion must not take such a child for alive: an agent whose
/// stalled pod was just deleted was found stalled again on it and counted twice.
#[derive(Default)]
pub struct Deleting(Mutex<HashMap<u64, std::time::Instant>>);

impl Deleting {
    /// Records that `name` was just deleted.
    pub fn deleted(&self, namespace: &str, name: &str) {
        let mut deleting = self.0.lock().unwrap_or_else(|p| p.into_inner());
        deleting.insert(key_of((namespace, name)), std::time::Instant::now());
    }

    /// Whether `cached`, as the cache shows it, is a child deleted since: true while
    /// the cache shows it without its deletion, for at most `CACHE_LAG_LIMIT`.
    pub fn hides<K: Resource>(&self, cached: &K) -> bool {
        let mut deleting = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = key(cached);
        let Some(since) = deleting.get(&key) else {
            return false;
        };
        if cached.meta().deletion_timestamp.is_some() || since.elapsed() >= CACHE_LAG_LIMIT {
            deleting.remove(&key);
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn at(version: Option<&str>) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("g".into()),
                namespace: Some("n".into()),
                resource_version: version.map(String::from),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_cached_object_is_current_only_at_the_version_last_written_or_read() {
        let versions = Versions::default();
        assert!(!versions.is_current(&at(Some("5"))), "never seen: read it");
        versions.saw(&at(Some("5")));
        assert!(versions.is_current(&at(Some("5"))), "our last write");
        assert!(!versions.is_current(&at(Some("4"))), "older than our write");
        assert!(
            !versions.is_current(&at(Some("6"))),
            "someone else wrote since, the watch not shown our write yet"
        );
        assert!(!versions.is_current(&at(None)), "no version");
        versions.saw(&at(Some("6")));
        assert!(versions.is_current(&at(Some("6"))), "read fresh");
        versions.forget("n", "g");
        assert!(!versions.is_current(&at(Some("6"))), "forgotten");
    }

    #[test]
    fn what_the_watch_shows_after_our_last_write_is_trusted_never_before_it() {
        let versions = Versions::default();
        versions.streamed(&at(Some("3")));
        assert!(
            versions.is_current(&at(Some("3"))),
            "first list: consistent"
        );
        versions.saw(&at(Some("5")));
        versions.streamed(&at(Some("4")));
        assert!(
            !versions.is_current(&at(Some("4"))),
            "the watch lags our write: 4 may be older than it"
        );
        assert!(versions.is_current(&at(Some("5"))), "our write");
        versions.streamed(&at(Some("5")));
        versions.streamed(&at(Some("7")));
        assert!(
            versions.is_current(&at(Some("7"))),
            "shown after our write: the shim's report is newer"
        );
        assert!(!versions.is_current(&at(Some("5"))), "older than 7");
    }

    #[test]
    fn a_write_the_watch_showed_before_its_answer_came_back_is_shown() {
        let versions = Versions::default();
        versions.streamed(&at(Some("3")));
        versions.streamed(&at(Some("5")));
        versions.saw(&at(Some("5")));
        versions.streamed(&at(Some("6")));
        assert!(
            versions.is_current(&at(Some("6"))),
            "shown: 6 came after it"
        );
        versions.streamed(&at(Some("8")));
        versions.saw(&at(Some("7")));
        assert!(
            !versions.is_current(&at(Some("8"))),
            "7's answer after the watch passed it: read again"
        );
        versions.saw(&at(Some("8")));
        assert!(versions.is_current(&at(Some("8"))), "read fresh, shown");
        versions.streamed(&at(Some("9")));
        assert!(versions.is_current(&at(Some("9"))));
    }

    #[test]
    fn an_object_is_keyed_by_its_namespace_and_name() {
        assert_eq!(key_of(("n", "g")), key(&at(Some("1"))));
    }

    #[test]
    fn a_child_is_held_only_with_the_content_last_applied_or_read() {
        let applied = Applied::default();
        assert!(
            !applied.holds("Role", "n", "r", &["a"]),
            "never applied: read it"
        );
        applied.record("Role", "n", "r", &["a"]);
        assert!(applied.holds("Role", "n", "r", &["a"]), "as last applied");
        assert!(
            !applied.holds("Role", "n", "r", &["a", "b"]),
            "wanted changed"
        );
        assert!(
            !applied.holds("ConfigMap", "n", "r", &["a"]),
            "another kind"
        );
        assert!(
            !applied.holds("Role", "m", "r", &["a"]),
            "another namespace"
        );
        applied.record("Role", "n", "r", &["a", "b"]);
        assert!(!applied.holds("Role", "n", "r", &["a"]), "replaced");
    }

    fn pod_of(owner: &str, name: &str) -> k8s_openapi::api::core::v1::Pod {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        k8s_openapi::api::core::v1::Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("n".into()),
                owner_references: Some(vec![OwnerReference {
                    name: owner.into(),
                    controller: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn created_children_are_awaited_until_the_cache_shows_each() {
        let creating = Creating::<u8>::default();
        let names = |c: &Creating<u8>| -> Vec<String> {
            c.awaited("n", "g").into_iter().map(|(n, _)| n).collect()
        };
        assert_eq!(names(&creating), Vec::<String>::new(), "nothing created");
        creating.started("n", "g", "g-s1-a1", 7);
        creating.started("n", "g", "g-s2-a1", 8);
        assert_eq!(
            creating.awaited("n", "g"),
            vec![("g-s1-a1".into(), 7), ("g-s2-a1".into(), 8)],
            "two step pods started at once"
        );
        assert_eq!(creating.awaited("m", "g"), vec![], "another namespace");
        creating.shown(&pod_of("g", "g-s0-a1"));
        assert_eq!(
            names(&creating),
            ["g-s1-a1", "g-s2-a1"],
            "an older child shown"
        );
        creating.shown(&pod_of("h", "g-s1-a1"));
        assert_eq!(
            names(&creating),
            ["g-s1-a1", "g-s2-a1"],
            "another owner's child"
        );
        creating.shown(&pod_of("g", "g-s1-a1"));
        assert_eq!(
            names(&creating),
            ["g-s2-a1"],
            "one shown, the other awaited"
        );
        creating.forget("n", "g", "g-s2-a1");
        assert_eq!(names(&creating), Vec::<String>::new(), "the create failed");
        creating.started("n", "g", "g-s3-a1", 9);
        creating.ended("n", "g");
        assert_eq!(names(&creating), Vec::<String>::new(), "the owner is gone");
    }

    #[test]
    fn a_deleted_child_is_hidden_until_the_cache_shows_its_deletion() {
        let deleting = Deleting::default();
        let pod = pod_of("g", "p");
        assert!(!deleting.hides(&pod), "never deleted");
        deleting.deleted("n", "p");
        assert!(deleting.hides(&pod), "the cache still shows it as it was");
        assert!(!deleting.hides(&pod_of("g", "q")), "another child");
        let mut going = pod.clone();
        going.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now()),
        );
        assert!(!deleting.hides(&going), "its deletion shown");
        assert!(!deleting.hides(&pod), "and forgotten then");
    }
}
