//! One number for an object's names, the key of the tables kept for every object.

use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::OnceLock;

/// What names an object (its namespace and name; its kind too where one table holds
/// several kinds) in the tables kept for every object (`fresh::Versions`,
/// `fresh::Applied`, `fresh::Deleting`, `index::Index`): one number, so that an entry keeps no copy of its
/// names (at 10,000 agents, two strings an entry were hundreds of KB a table) and a
/// lookup allocates none. The hash is keyed at random in each process, so no name can
/// be chosen to share another's number; two of 100,000 share one by chance with odds
/// of about 1 in 4 billion, as two contents share an `Applied` digest.
pub fn key_of(names: impl Hash) -> u64 {
    static HASHER: OnceLock<RandomState> = OnceLock::new();
    HASHER.get_or_init(RandomState::new).hash_one(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_told_apart_where_they_split() {
        assert_ne!(key_of(("ab", "c")), key_of(("a", "bc")));
        assert_ne!(key_of(("Role", "n", "r")), key_of(("Role", "nr", "")));
        assert_eq!(
            key_of(("n", "g")),
            key_of(("n", "g")),
            "the same in a process"
        );
    }
}
