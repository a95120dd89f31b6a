//! What the plan records besides steps: conditions, Events (step progress marked so the
//! controller may fold it) and when a time-based rule next falls due.

use super::*;
use crate::conditions::PlannedEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as KubeCondition;

impl conditions::Recording for Planner<'_> {
    fn stamped(&mut self) -> (&mut Vec<KubeCondition>, Option<i64>, &Time) {
        (
            &mut self.status.conditions,
            self.input.generation,
            &self.now,
        )
    }

    fn queue(&mut self, event: PlannedEvent) {
        self.actions.push(Action::Event {
            warning: event.warning,
            reason: event.reason,
            message: event.message,
            pod: None,
            progress: false,
        });
    }
}

impl Planner<'_> {
    pub(super) fn requeue_at(&mut self, at: Timestamp) {
        let after = at.duration_since(self.input.now);
        let after = Duration::try_from(after)
            .unwrap_or_default()
            .max(Duration::from_millis(100));
        self.requeue_after = Some(self.requeue_after.map_or(after, |r| r.min(after)));
    }

    /// A Warning about step `i`, related to its current pod: Events of different
    /// attempts stay apart instead of being merged into one series.
    pub(super) fn step_warning(&mut self, i: usize, reason: &'static str, message: String) {
        let pod = self.status.steps[i].pod_name.clone();
        self.actions.push(Action::Event {
            warning: true,
            reason,
            message,
            pod,
            progress: false,
        });
    }

    /// A Normal Event of step `i`'s progress, related to its current pod.
    pub(super) fn step_progress(&mut self, i: usize, reason: &'static str, message: String) {
        let pod = self.status.steps[i].pod_name.clone();
        self.actions.push(Action::Event {
            warning: false,
            reason,
            message,
            pod,
            progress: true,
        });
    }
}
