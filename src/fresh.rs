//! When a cached object is fresh enough to decide on.
//!
//! A plan decides on status, and status is the checkpoint: deciding on a cached object
//! that has not yet seen our own last status write would repeat that write's Events
//! and notifications. Reading every object fresh before each reconcile is safe but
//! costs a round trip each time. Instead each controller remembers the
//! resourceVersion of every object as it last wrote it, or last read it fresh: a
//! cached object at exactly that version holds our last write, so it is decided on as
//! it is; any other version (older, or newer from someone else's write) is read again.
//! resourceVersions are only compared for equality, as the API conventions allow.
//!
//! Children that a reconcile keeps in step but does not watch (an agent's Role, its
//! instructions ConfigMap) are compared with what this operator last applied or read
//! (`Applied`): only a child whose wanted content changed since is read again.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use serde::Serialize;

use kube::{Resource, ResourceExt};

/// The resourceVersion of each object (by namespace and name) as last written or read.
#[derive(Default)]
pub struct Versions(Mutex<HashMap<(String, String), String>>);

fn key<K: Resource>(object: &K) -> (String, String) {
    (object.namespace().unwrap_or_default(), object.name_any())
}

impl Versions {
    /// Whether `cached` is at the version last written or read fresh.
    pub fn is_current<K: Resource>(&self, cached: &K) -> bool {
        let known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match (known.get(&key(cached)), &cached.meta().resource_version) {
            (Some(known), Some(cached)) => known == cached,
            _ => false,
        }
    }

    /// Records the version of `object` as just read fresh or returned by our write.
    pub fn saw<K: Resource>(&self, object: &K) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &object.meta().resource_version {
            Some(version) => known.insert(key(object), version.clone()),
            None => known.remove(&key(object)),
        };
    }

    /// Forgets `object` (deleted, or gone).
    pub fn forget(&self, namespace: &str, name: &str) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        known.remove(&(namespace.to_string(), name.to_string()));
    }
}

/// A digest of the content of each child (by kind, namespace and name) as this
/// operator last applied it or read it from the API server.
#[derive(Default)]
pub struct Applied(Mutex<HashMap<(&'static str, String, String), u64>>);

fn digest(content: &impl Serialize) -> Option<u64> {
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
        let key = (kind, namespace.to_string(), name.to_string());
        digest(wanted).is_some_and(|d| known.get(&key) == Some(&d))
    }

    /// Forgets the child (its owner is gone).
    pub fn forget(&self, kind: &'static str, namespace: &str, name: &str) {
        let mut known = self.0.lock().unwrap_or_else(|p| p.into_inner());
        known.remove(&(kind, namespace.to_string(), name.to_string()));
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
        let key = (kind, namespace.to_string(), name.to_string());
        match digest(content) {
            Some(d) => known.insert(key, d),
            None => known.remove(&key),
        };
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
            "someone else wrote since"
        );
        assert!(!versions.is_current(&at(None)), "no version");
        versions.saw(&at(Some("6")));
        assert!(versions.is_current(&at(Some("6"))), "read fresh");
        versions.forget("n", "g");
        assert!(!versions.is_current(&at(Some("6"))), "forgotten");
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
}
