//! The Kubernetes plumbing every controller stands on, apart from what they decide:
//! the one layer all requests pass (`writes`) with a deadline on each answer
//! (`timeouts`), the shared watches and caches (`caches`, `index`), when a cached
//! object is fresh enough to decide on (`fresh`), the one number that keys their
//! tables of every object (`key`), Events published behind the reconcile (`events`),
//! fair reconcile slots (`fair`), leader election (`leader`) and the one way an owned
//! pod is created (`pods`), and summaries: cached objects that keep only what is read
//! of them (`summary`).
//! Nothing here knows a kind's rules: it imports no kind's folder and no controller.

pub mod caches;
pub mod events;
pub mod fair;
pub mod fresh;
pub mod guard;
pub mod index;
pub mod key;
pub mod leader;
pub mod pods;
pub mod summary;
pub mod timeouts;
pub mod writes;
