//! Cached objects read as summaries: a type that deserializes from the API server's
//! answer for a kind only what a controller reads of it, and is that kind to `Api`,
//! watches and caches. The rest of each object is dropped as it is read, never held:
//! at 10,000 agents whole pods and Roles were most of the operator's memory.

/// Makes `$summary` (with a `metadata: ObjectMeta` field) the built-in kind `$kind`
/// for `Api`, watches and caches.
macro_rules! summary_of {
    ($summary:ty, $kind:ty) => {
        impl ::kube::Resource for $summary {
            type DynamicType = ();
            type Scope = <$kind as ::kube::Resource>::Scope;

            fn kind(dt: &()) -> ::std::borrow::Cow<'_, str> {
                <$kind as ::kube::Resource>::kind(dt)
            }
            fn group(dt: &()) -> ::std::borrow::Cow<'_, str> {
                <$kind as ::kube::Resource>::group(dt)
            }
            fn version(dt: &()) -> ::std::borrow::Cow<'_, str> {
                <$kind as ::kube::Resource>::version(dt)
            }
            fn plural(dt: &()) -> ::std::borrow::Cow<'_, str> {
                <$kind as ::kube::Resource>::plural(dt)
            }
            fn meta(&self) -> &::kube::api::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ::kube::api::ObjectMeta {
                &mut self.metadata
            }
        }
    };
}
pub(crate) use summary_of;

/// Drops what no controller reads of a cached summary's metadata: who wrote which
/// field, and annotations (a pod template's may be large).
pub fn drop_unread_metadata(meta: &mut kube::api::ObjectMeta) {
    meta.managed_fields = None;
    meta.annotations = None;
}
