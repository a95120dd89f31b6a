//! Keeping a goal's status in step with its spec and its pods before planning: steps
//! aligned to the spec, pods past their deadline or strays stopped, a resume taken.

use super::*;

impl Planner<'_> {
    /// One status entry per run; entries of runs not done follow the spec (a succeeded
    /// one matches its run: `spec_conflict` has checked).
    pub(super) fn align_steps(&mut self) {
        let runs = self.runs;
        self.status.steps.truncate(runs.len());
        for (u, run) in runs.iter().enumerate() {
            // A run new at this position counts its attempts on from the pods made
            // there for another (one removed or replaced), so its pods get names of
            // their own and it never takes another's pod or result for its own.
            let label = crate::api::label_value(&run.name);
            let others = self
                .input
                .pods
                .iter()
                .filter(|p| p.step == u && p.step_name != label)
                .map(|p| p.attempt)
                .max()
                .unwrap_or(0);
            match self.status.steps.get_mut(u) {
                Some(entry) if entry.name == run.name => {}
                Some(entry) => {
                    let after = others.max(entry.attempts);
                    *entry = StepStatus::pending_after(&run.name, after);
                }
                None => self
                    .status
                    .steps
                    .push(StepStatus::pending_after(&run.name, others)),
            }
            self.status.steps[u].item = run.item.map(String::from);
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

    /// Asks every pod that still runs and is not the current attempt of a run in
    /// progress to stop, at every reconcile until it is gone: a timed-out attempt
    /// whose delete was lost (the operator stopped after asking once, or the request
    /// failed), or the pod of a step removed from the spec.
    pub(super) fn stop_strays(&mut self) {
        let current: Vec<(usize, i32)> = self
            .status
            .steps
            .iter()
            .enumerate()
            .filter(|(_, entry)| entry.phase == StepPhase::Running)
            .map(|(u, entry)| (u, entry.attempts))
            .collect();
        for pod in self.input.pods {
            let live = matches!(pod.phase, PodPhase::Pending | PodPhase::Running);
            if !live || current.contains(&(pod.step, pod.attempt)) {
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

    /// A new `overseer.dev/resume` value: the steps that ran out of retries get fresh
    /// attempts and the goal goes on from its checkpoints.
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
        let mut resumed = Vec::new();
        for step in &mut self.status.steps {
            let out_of_retries = matches!(step.phase, StepPhase::Failed | StepPhase::TimedOut)
                && step.next_retry_time.is_none();
            if !out_of_retries {
                continue;
            }
            step.attempt_base = step.attempts;
            step.phase = StepPhase::Pending;
            step.message = Some("resumed with fresh attempts".into());
            resumed.push(step.name.clone());
        }
        self.status.phase = Some(GoalPhase::Running);
        self.status.message = None;
        self.condition(
            conditions::PAUSED,
            false,
            reasons::RESUMED,
            "resumed from the checkpoint",
        );
        self.event(
            false,
            reasons::RESUMED,
            format!("resumed at step {} with fresh attempts", resumed.join(", ")),
        );
    }

    /// A completed step that was edited or removed: the checkpoint would lie.
    pub(super) fn spec_conflict(&self) -> Option<String> {
        let runs = self.runs;
        let done = |entry: &&StepStatus| entry.phase == StepPhase::Succeeded;
        let completed = self.status.steps.iter().filter(done).count();
        if self.status.steps.iter().skip(runs.len()).any(|e| done(&e)) {
            return Some(format!(
                "{completed} steps are completed but the spec now has {}: completed steps cannot be removed",
                runs.len()
            ));
        }
        self.status
            .steps
            .iter()
            .zip(runs)
            .filter(|(entry, _)| done(entry))
            .find_map(|(entry, run)| {
                let edited = entry.name != run.name
                    || entry
                        .fingerprint
                        .as_deref()
                        .is_some_and(|f| f != run_fingerprint(run));
                edited.then(|| {
                    format!(
                        "step {} completed and cannot be edited; revert the edit or create a new Goal",
                        entry.name
                    )
                })
            })
    }
}
