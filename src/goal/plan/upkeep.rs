//! Keeping a goal's status in step with its spec and its pods before planning: steps
//! aligned to the spec, pods past their deadline or strays stopped, a resume taken.

use super::*;

impl Planner<'_> {
    /// One status entry per spec step; entries of steps not yet done follow the spec.
    pub(super) fn align_steps(&mut self) {
        let steps = &self.input.spec.steps;
        let completed = self.status.completed_steps as usize;
        self.status.steps.truncate(steps.len());
        for (i, step) in steps.iter().enumerate().skip(completed) {
            // A step new at this position counts its attempts on from the pods made
            // there for another step (one removed or replaced), so its pods get names
            // of their own and it never takes another step's pod or result for its own.
            let others = self
                .input
                .pods
                .iter()
                .filter(|p| p.step == i && p.step_name != step.name)
                .map(|p| p.attempt)
                .max()
                .unwrap_or(0);
            match self.status.steps.get_mut(i) {
                Some(entry) if entry.name == step.name => {}
                Some(entry) => {
                    let after = others.max(entry.attempts);
                    *entry = StepStatus::pending_after(&step.name, after);
                }
                None => self
                    .status
                    .steps
                    .push(StepStatus::pending_after(&step.name, others)),
            }
        }
    }

    /// Deletes each finished pod `pod_retention` after it finished, once the status holds
    /// its outcome (every pod but the running attempt's), and comes back for the next.
    pub(super) fn expire_pods(&mut self) {
        let Some(retention) = self.input.pod_retention else {
            return;
        };
        for pod in self.input.pods {
            let Some(finished) = pod.finished_at else {
                continue;
            };
            let awaited = self.status.steps.get(pod.step).is_some_and(|s| {
                s.name == pod.step_name
                    && s.attempts == pod.attempt
                    && s.phase == StepPhase::Running
            });
            if awaited {
                continue;
            }
            let expires = duration::later(finished, retention);
            if expires <= self.input.now {
                self.actions.push(Action::DeletePod {
                    name: pod.name.clone(),
                });
            } else {
                self.requeue_at(expires);
            }
        }
    }

    /// Asks every pod that still runs and is not the current attempt of the step in
    /// progress to stop, at every reconcile until it is gone: a timed-out attempt
    /// whose delete was lost (the operator stopped after asking once, or the request
    /// failed), or the pod of a step removed from the spec.
    pub(super) fn stop_strays(&mut self) {
        let i = self.status.completed_steps as usize;
        let current = self
            .status
            .steps
            .get(i)
            .filter(|entry| entry.phase == StepPhase::Running)
            .map(|entry| (i, entry.attempts));
        for pod in self.input.pods {
            let live = matches!(pod.phase, PodPhase::Pending | PodPhase::Running);
            if !live || current == Some((pod.step, pod.attempt)) {
                continue;
            }
            let stop = Action::DeletePod {
                name: pod.name.clone(),
            };
            if !self.actions.contains(&stop) {
                self.actions.push(stop);
            }
        }
    }

    pub(super) fn resume(&mut self) {
        let Some(token) = self.input.resume else {
            return;
        };
        if self.status.resume_token.as_deref() == Some(token) {
            return;
        }
        self.status.resume_token = Some(token.into());
        if self.status.phase != Some(GoalPhase::Paused)
            || self.paused_reason() != Some(reasons::STEP_FAILED)
        {
            return;
        }
        let i = self.status.completed_steps as usize;
        if let Some(step) = self.status.steps.get_mut(i) {
            step.attempt_base = step.attempts;
            step.phase = StepPhase::Pending;
            step.next_retry_time = None;
            step.message = Some("resumed with fresh attempts".into());
        }
        self.status.phase = Some(GoalPhase::Running);
        self.status.message = None;
        self.condition(
            conditions::PAUSED,
            false,
            reasons::RESUMED,
            "resumed from the checkpoint",
        );
        let name = self
            .input
            .spec
            .steps
            .get(i)
            .map(|s| s.name.as_str())
            .unwrap_or_default();
        self.event(
            false,
            reasons::RESUMED,
            format!("resumed at step {name} with fresh attempts"),
        );
    }

    /// A completed step that was edited or removed: the checkpoint would lie.
    pub(super) fn spec_conflict(&self) -> Option<String> {
        let (spec, status) = (self.input.spec, &self.status);
        let completed = status.completed_steps as usize;
        if spec.steps.len() < completed {
            return Some(format!(
                "{completed} steps are completed but the spec now has {}: completed steps cannot be removed",
                spec.steps.len()
            ));
        }
        status
            .steps
            .iter()
            .take(completed)
            .zip(&spec.steps)
            .find_map(|(done, step)| {
                let edited = done.name != step.name
                    || done
                        .fingerprint
                        .as_deref()
                        .is_some_and(|f| f != fingerprint(step));
                edited.then(|| {
                    format!(
                        "step {} completed and cannot be edited; revert the edit or create a new Goal",
                        done.name
                    )
                })
            })
    }
}
