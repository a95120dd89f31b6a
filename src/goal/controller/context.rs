//! What every reconcile of the Goal controller shares: the caches it reads and what it
//! remembers of its own writes.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::Store;

use crate::controller::Context;
use crate::goal::plan::StepPod;
use crate::goal::progress::ProgressEvents;
use crate::kinds::goal::Goal;
use crate::kinds::swarm::Swarm;
use crate::kubernetes::fresh::{Applied, Creating, Versions};
use crate::kubernetes::guard::Guarded;

pub(super) const CONTROLLER: &str = "goal";

pub(super) struct GoalContext {
    pub(super) ctx: Arc<Context>,
    pub(super) store: Store<Guarded<Goal>>,
    /// Every step pod of the goals watched.
    pub(super) pods: Store<Pod>,
    pub(super) swarms: Store<Guarded<Swarm>>,
    /// Each Goal's version as this operator last wrote or read it (src/kubernetes/fresh.rs).
    pub(super) versions: Arc<Versions>,
    /// Each Goal's step pod created and not yet in `pods` (src/kubernetes/fresh.rs).
    pub(super) creating: Arc<Creating<StepPod>>,
    /// Each Goal's sandbox as this operator last applied it.
    pub(super) applied: Applied,
    /// Each Goal's last step progress Event, for folding the next (src/goal/progress.rs).
    pub(super) progress: ProgressEvents,
}

impl crate::controller::ControllerContext for GoalContext {
    fn shared(&self) -> &Arc<Context> {
        &self.ctx
    }
}
