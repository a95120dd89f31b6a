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

use std::collections::HashMap;
use std::sync::Mutex;

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
}
