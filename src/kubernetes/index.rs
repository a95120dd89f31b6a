//! Secondary indexes over a controller's caches, so that a reconcile finds an agent's
//! pods, or the agents an overseer oversees, without scanning every cached object (at
//! 10,000 agents those scans were most of the operator's CPU).
//!
//! An index maps a key (a namespace and a name that objects refer to, such as their
//! agent or their overseer) to the names of the objects seen referring to it. Objects
//! are noted as they pass through their watch, which can be before their cache holds
//! them, so an index is never pruned on a read: a lookup is a superset, and the caller
//! keeps the names whose cached object still refers to the key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::key::key_of;

/// Names of objects by `key_of` (namespace, the name they refer to), each list sorted.
/// A list is a `Vec` the size of its names: nearly every key has one name (an agent's
/// pod), and a `BTreeSet` of one name takes a node of eleven (0.3 KB an agent at
/// 10,000). Two keys sharing a number would share a list, which a lookup's superset
/// already allows for.
#[derive(Clone, Default)]
pub struct Index(Arc<Mutex<HashMap<u64, Vec<String>>>>);

impl Index {
    /// Notes that object `name` in `namespace` refers to `key` (every watch event of the
    /// object notes it again; a name is kept once).
    pub fn note(&self, namespace: &str, key: &str, name: &str) {
        let mut index = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let names = index.entry(key_of((namespace, key))).or_default();
        if let Err(at) = names.binary_search_by(|n| n.as_str().cmp(name)) {
            names.insert(at, name.to_string());
            names.shrink_to_fit();
        }
    }

    /// The names of the objects in `namespace` ever seen referring to `key`, sorted.
    pub fn named(&self, namespace: &str, key: &str) -> Vec<String> {
        let index = self.0.lock().unwrap_or_else(|p| p.into_inner());
        index
            .get(&key_of((namespace, key)))
            .map(|names| names.to_vec())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_holds_every_name_seen_under_its_key_and_namespace() {
        let index = Index::default();
        assert!(index.named("n", "lead").is_empty());
        index.note("n", "lead", "b");
        index.note("n", "lead", "a");
        index.note("n", "lead", "a");
        index.note("m", "lead", "c");
        index.note("n", "other", "d");
        assert_eq!(index.named("n", "lead"), ["a", "b"], "sorted, once each");
        assert_eq!(index.named("m", "lead"), ["c"]);
        assert_eq!(index.clone().named("n", "other"), ["d"], "clones share it");
    }
}
