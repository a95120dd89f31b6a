pub mod compose;
pub mod controller;
pub mod types;

pub use types::*;

/// The objects in `store` that name `swarm` as theirs (`swarm_of`), to reconcile when
/// it changes: its agents, its goals.
pub fn naming_swarm<K>(
    store: &kube::runtime::reflector::Store<kube::core::DeserializeGuard<K>>,
    swarm: &Swarm,
    swarm_of: impl Fn(&K) -> Option<&str>,
) -> Vec<kube::runtime::reflector::ObjectRef<kube::core::DeserializeGuard<K>>>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    use kube::ResourceExt;
    let name = swarm.name_any();
    crate::controller::readable(&store.state())
        .filter(|o| o.namespace() == swarm.namespace() && swarm_of(o) == Some(name.as_str()))
        .map(|o| {
            kube::runtime::reflector::ObjectRef::new(&o.name_any())
                .within(&o.namespace().unwrap_or_default())
        })
        .collect()
}
