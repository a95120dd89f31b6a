//! What the console shows, kept live: one watch per kind (Swarms, Goals, Agents, and
//! the Events of overseer's objects), all made with the person's own client, and a
//! counter that every change moves, on which each open page waits. A watch the API
//! server refuses or loses is retried with backoff, and said on every page meanwhile.

use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Event;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::agent::Agent;
use crate::goal::Goal;
use crate::kubernetes::guard::Guarded;
use crate::swarm::Swarm;

/// The console's caches and the signal of their changes.
#[derive(Clone)]
pub struct Live {
    pub swarms: Store<Guarded<Swarm>>,
    pub goals: Store<Guarded<Goal>>,
    pub agents: Store<Guarded<Agent>>,
    pub events: Store<Event>,
    /// Moves on every change of any cache (and of `trouble`).
    pub changes: watch::Receiver<u64>,
    /// Why a watch is failing now (None: all are well), for every page to say.
    pub trouble: Arc<Mutex<Option<String>>>,
}

/// The namespaces watched: every one the person can list, or one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    All,
    Namespace(String),
}

impl Scope {
    fn api<K>(&self, client: &Client) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match self {
            Scope::All => Api::all(client.clone()),
            Scope::Namespace(ns) => Api::namespaced(client.clone(), ns),
        }
    }
}

/// Starts the watches of `scope` with `client`; they run until the process ends.
pub fn start(client: &Client, scope: &Scope) -> Live {
    let (tick, changes) = watch::channel(0u64);
    let tick = Arc::new(tick);
    let trouble = Arc::new(Mutex::new(None));
    let watching = |name: &'static str| Watching {
        name,
        tick: tick.clone(),
        trouble: trouble.clone(),
    };
    let swarms = watching("Swarms").run(scope.api(client), watcher::Config::default());
    let goals = watching("Goals").run(scope.api(client), watcher::Config::default());
    let agents = watching("Agents").run(scope.api(client), watcher::Config::default());
    // Only overseer's own Events: the timeline of a swarm, an agent, a goal.
    let events = watching("Events").run(
        scope.api(client),
        watcher::Config::default().fields(&format!(
            "involvedObject.apiVersion={}/v1alpha1",
            crate::api::GROUP
        )),
    );
    Live {
        swarms,
        goals,
        agents,
        events,
        changes,
        trouble,
    }
}

struct Watching {
    name: &'static str,
    tick: Arc<watch::Sender<u64>>,
    trouble: Arc<Mutex<Option<String>>>,
}

impl Watching {
    fn run<K>(self, api: Api<K>, config: watcher::Config) -> Store<K>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default + Eq + std::hash::Hash + Clone,
    {
        let (store, writer) = reflector::store();
        let stream = watcher(api, config)
            .default_backoff()
            .modify(|object| object.meta_mut().managed_fields = None)
            .reflect(writer);
        tokio::spawn(self.follow(stream));
        store
    }

    async fn follow<K>(
        self,
        stream: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    ) {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let said = match &event {
                Ok(_) => None,
                Err(error) => Some(format!("watching {} failed: {error}; retrying", self.name)),
            };
            let changed = {
                let mut trouble = self.trouble.lock().expect("not poisoned");
                let changed = match (&*trouble, &said) {
                    // Another watch's trouble is not this one's to clear.
                    (Some(now), None) => now.starts_with(&format!("watching {} ", self.name)),
                    (now, said) => now != said,
                };
                if changed {
                    *trouble = said;
                }
                changed
            };
            if changed || event.is_ok() {
                self.tick.send_modify(|n| *n += 1);
            }
        }
    }
}

#[cfg(test)]
impl Live {
    /// Empty caches that never change: for the pure parts' tests.
    pub fn empty() -> Live {
        let (_, changes) = watch::channel(0);
        Live {
            swarms: reflector::store().0,
            goals: reflector::store().0,
            agents: reflector::store().0,
            events: reflector::store().0,
            changes,
            trouble: Arc::new(Mutex::new(None)),
        }
    }
}
