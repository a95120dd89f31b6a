//! The agents' Roles as the first list after a start found them, each kept only until
//! its agent's first reconcile has compared it. After that comparison `Applied` knows
//! the Role (what this operator last applied or read), and nothing else reads Roles: a
//! Role changing needs no reconcile. So the Roles are listed once, not watched, and
//! what is kept of them shrinks to nothing as the agents are reconciled; a watch kept
//! a `RoleSummary` of every agent's Role for as long as the operator ran (1.9 KB each,
//! 19 MB at 10,000 agents).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use kube::ResourceExt;
use kube::runtime::watcher;

use crate::agent::pod::RoleSummary;

/// What a watch of the agents' Roles yields.
type ListItem = Result<watcher::Event<RoleSummary>, watcher::Error>;

/// What an agent's first reconcile compares of its Role.
#[derive(Clone, Debug, PartialEq)]
pub struct SeenRole {
    /// The uid of the Role's controller owner, if it has one.
    pub controller: Option<String>,
    /// `pod::rules_digest` of its rules.
    pub rules_digest: u64,
}

impl From<&RoleSummary> for SeenRole {
    fn from(role: &RoleSummary) -> Self {
        SeenRole {
            controller: crate::api::controller_of(role).map(|owner| owner.uid.clone()),
            rules_digest: role.rules_digest,
        }
    }
}

/// The Roles of the first list, by namespace and name, not yet compared.
#[derive(Default)]
pub struct RolesAtStart {
    listed: AtomicBool,
    seen: Mutex<HashMap<(String, String), SeenRole>>,
}

impl RolesAtStart {
    /// Whether the first list is complete (before it, a Role not seen may yet be).
    pub fn listed(&self) -> bool {
        self.listed.load(Ordering::Acquire)
    }

    /// The Role `name` in `namespace` as the first list found it, given once.
    pub fn take(&self, namespace: &str, name: &str) -> Option<SeenRole> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let role = seen.remove(&(namespace.to_string(), name.to_string()));
        if seen.is_empty() {
            // Its table too, once every Role is compared.
            *seen = HashMap::new();
        }
        role
    }

    /// How many Roles of the first list are not yet compared.
    pub fn len(&self) -> usize {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lists the Roles of `watch` (`fill`) in a task of their own.
    pub fn listing(watch: impl Stream<Item = ListItem> + Send + 'static) -> Arc<Self> {
        let roles = Arc::new(RolesAtStart::default());
        let filled = roles.clone();
        tokio::spawn(async move { filled.fill(watch).await });
        roles
    }

    /// Keeps what `watch` lists first (a consistent list: the watcher's initial pages),
    /// then ends and drops the watch. An error before the list is complete is logged
    /// and the watcher lists again from the start (it backs off as configured).
    pub async fn fill(&self, watch: impl Stream<Item = ListItem>) {
        let mut watch = std::pin::pin!(watch);
        let mut listing = HashMap::new();
        while let Some(event) = watch.next().await {
            match event {
                Ok(watcher::Event::Init) => listing.clear(),
                Ok(watcher::Event::InitApply(role)) => {
                    if let Some(namespace) = role.namespace() {
                        listing.insert((namespace, role.name_any()), SeenRole::from(&role));
                    }
                }
                Ok(watcher::Event::InitDone) => {
                    *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = listing;
                    self.listed.store(true, Ordering::Release);
                    return;
                }
                // Only after the first list, which ends this.
                Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => {}
                Err(error) => tracing::warn!(kind = "Role", %error, "list error"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

    fn role(name: &str, controller: Option<&str>, rules_digest: u64) -> RoleSummary {
        RoleSummary {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("tenant".into()),
                owner_references: Some(vec![OwnerReference {
                    uid: controller.unwrap_or("not-the-controller").into(),
                    controller: controller.map(|_| true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            rules_digest,
        }
    }

    /// What `fill` keeps of a watch that yields `events`.
    async fn filled(events: Vec<watcher::Event<RoleSummary>>) -> RolesAtStart {
        let roles = RolesAtStart::default();
        assert!(!roles.listed());
        roles
            .fill(futures::stream::iter(events.into_iter().map(Ok)))
            .await;
        roles
    }

    #[tokio::test]
    async fn the_first_list_is_kept_whole_and_each_role_given_once() {
        use watcher::Event::*;
        let roles = filled(vec![
            Init,
            InitApply(role("overseer-agent-a", Some("uid-a"), 7)),
            InitApply(role("overseer-agent-b", None, 8)),
            InitDone,
            // What a watch would go on with is never read.
            Apply(role("overseer-agent-c", Some("uid-c"), 9)),
        ])
        .await;
        assert!(roles.listed());
        assert_eq!(roles.len(), 2);
        assert_eq!(
            roles.take("tenant", "overseer-agent-a"),
            Some(SeenRole {
                controller: Some("uid-a".into()),
                rules_digest: 7
            })
        );
        assert_eq!(roles.take("tenant", "overseer-agent-a"), None);
        assert_eq!(
            roles.take("tenant", "overseer-agent-b"),
            Some(SeenRole {
                controller: None,
                rules_digest: 8
            })
        );
        assert_eq!(roles.take("tenant", "overseer-agent-c"), None);
        assert!(roles.is_empty());
    }

    #[tokio::test]
    async fn a_list_started_again_keeps_only_what_the_complete_one_found() {
        use watcher::Event::*;
        let roles = filled(vec![
            Init,
            InitApply(role("overseer-agent-gone", Some("uid-gone"), 1)),
            // The watcher lists again from the start after an error.
            Init,
            InitApply(role("overseer-agent-a", Some("uid-a"), 7)),
            InitDone,
        ])
        .await;
        assert_eq!(roles.len(), 1);
        assert_eq!(roles.take("tenant", "overseer-agent-gone"), None);
    }

    #[tokio::test]
    async fn a_watch_that_ends_before_its_list_is_complete_leaves_nothing_listed() {
        use watcher::Event::*;
        let roles = filled(vec![
            Init,
            InitApply(role("overseer-agent-a", Some("uid-a"), 7)),
        ])
        .await;
        assert!(!roles.listed());
        assert!(roles.is_empty());
    }
}
