//! One step in the plan: a notify step sent by the operator, or a step run as a pod
//! by a role (its runtime, template and timeout), followed through its pod's life.

use super::*;

impl Planner<'_> {
    /// A notify step: the operator sends it (planned first as an action, then, once
    /// sent, recorded as done). Continue: it is done. One is planned at a time: the
    /// operator sends the one it finds and plans again.
    pub(super) fn notify_step(&mut self, u: usize) -> ControlFlow<()> {
        self.visited[u] = true;
        let run = &self.runs[u];
        if self.input.notified != Some(u) {
            let planned = self
                .actions
                .iter()
                .any(|a| matches!(a, Action::Notify { step: Some(_), .. }));
            if !planned && !self.holding {
                self.actions.push(Action::Notify {
                    reason: NotifyReason::Step,
                    message: run.action(),
                    step: Some(u),
                });
            }
            return ControlFlow::Break(());
        }
        let entry = &mut self.status.steps[u];
        entry.role = Some("notify".into());
        entry.fingerprint = Some(run_fingerprint(run));
        entry.started_at.get_or_insert(self.now.clone());
        self.complete_step(u, Some("notification sent by the operator".into()));
        ControlFlow::Continue(())
    }

    /// A run by a pod of `role`. Continue: it succeeded, its successors may start.
    pub(super) fn run_step(&mut self, u: usize, role: String) -> ControlFlow<()> {
        self.status.steps[u].role = Some(role);
        self.adopt_newest_pod(u);
        let step = self.runs[u].step;
        let entry = &self.status.steps[u];
        let (attempt, phase) = (entry.attempts, entry.phase);
        let pods = self.input.pods;
        let pod = pods.iter().find(|p| p.step == u && p.attempt == attempt);
        match (phase, pod) {
            (StepPhase::Running, Some(pod)) => {
                self.visited[u] = true;
                return self.follow_pod(u, pod);
            }
            (StepPhase::Running, None) => {
                self.visited[u] = true;
                // Our own create is not visible yet, the pod was lost, or its name is
                // another owner's: create it again under the same deterministic name
                // (a twin is impossible) until the attempt's timeout, which holds
                // whether or not its pod ever ran.
                let started = self.status.steps[u].started_at.as_ref().map(|t| t.0);
                let deadline = started.map(|s| duration::later(s, self.timeout(step)));
                if deadline.is_some_and(|d| self.input.now >= d) {
                    let message = format!(
                        "attempt {attempt} ran past its {} timeout without a pod of its own",
                        humanize(self.timeout(step))
                    );
                    self.fail_step(u, StepPhase::TimedOut, message);
                    return ControlFlow::Break(());
                }
                self.start_attempt(u, attempt);
            }
            (StepPhase::Failed | StepPhase::TimedOut, _) => {
                let retry_at = self.status.steps[u].next_retry_time.as_ref().map(|t| t.0);
                match retry_at {
                    Some(at) if self.input.now < at => {
                        self.visited[u] = true;
                        self.running(u);
                        self.requeue_at(at);
                    }
                    Some(_) => self.start_if_free(u, attempt.saturating_add(1)),
                    // Out of retries; only a resume (which resets the phase) continues.
                    None => self.visited[u] = true,
                }
            }
            (StepPhase::Pending | StepPhase::Succeeded, _) => {
                self.start_if_free(u, attempt.saturating_add(1));
            }
        }
        ControlFlow::Break(())
    }

    /// Starts a new attempt of run `u` unless the goal holds (paused, or a step out of
    /// retries) or `maxParallel` pods run already; then it is looked at again in this
    /// plan when a run ends, else when a pod's end wakes the goal.
    fn start_if_free(&mut self, u: usize, attempt: i32) {
        if self.holding || self.hold_for_pause() || !self.has_room(u) {
            return;
        }
        self.visited[u] = true;
        self.start_attempt(u, attempt);
    }

    /// Whether another pod may start for run `u`: fewer than the goal's `maxParallel`
    /// run, and fewer than its step's `maxParallel` of that step's items.
    fn has_room(&self, u: usize) -> bool {
        let running = |same_step: bool| {
            self.status
                .steps
                .iter()
                .zip(self.runs)
                .filter(|(entry, run)| {
                    entry.phase == StepPhase::Running
                        && (!same_step || run.spec_index == self.runs[u].spec_index)
                })
                .count() as i32
        };
        let step_limit = self.runs[u].step.max_parallel;
        running(false) < self.input.spec.max_parallel.max(1)
            && step_limit.is_none_or(|limit| running(true) < limit.max(1))
    }

    /// Adopts a pod beyond the recorded attempts (a crash after creating one).
    pub(super) fn adopt_newest_pod(&mut self, u: usize) {
        let pods = self.input.pods;
        let newest_pod = pods
            .iter()
            .filter(|p| p.step == u)
            .map(|p| p.attempt)
            .max()
            .unwrap_or(0);
        let run = &self.runs[u];
        let entry = &mut self.status.steps[u];
        if newest_pod > entry.attempts {
            entry.fingerprint = Some(run_fingerprint(run));
            entry.attempts = newest_pod;
            entry.phase = StepPhase::Running;
            entry.pod_name = Some(pod_name(self.input.name, u, newest_pod));
            entry.started_at.get_or_insert(self.now.clone());
        }
    }

    /// The running attempt's pod: succeeded (Continue), failed, timed out, or running on.
    pub(super) fn follow_pod(&mut self, u: usize, pod: &StepPod) -> ControlFlow<()> {
        match pod.phase {
            PodPhase::Succeeded => {
                let result = pod.message.as_deref().map(truncate_result);
                self.status.steps[u].finished_at = pod.finished_at.map(Time);
                self.complete_step(u, result);
                return ControlFlow::Continue(());
            }
            PodPhase::Failed => self.fail_step(u, StepPhase::Failed, failure_message(pod)),
            PodPhase::Pending | PodPhase::Running => {
                let timeout = self.timeout(self.runs[u].step);
                let started = self.status.steps[u]
                    .started_at
                    .as_ref()
                    .map(|t| t.0)
                    .unwrap_or(self.input.now);
                let deadline = duration::later(started, timeout);
                if self.input.now >= deadline {
                    self.actions.push(Action::DeletePod {
                        name: pod.name.clone(),
                    });
                    let message = format!(
                        "attempt {} ran past its {} timeout",
                        pod.attempt,
                        humanize(timeout)
                    );
                    self.fail_step(u, StepPhase::TimedOut, message);
                } else {
                    self.running(u);
                    self.requeue_at(deadline);
                }
            }
        }
        ControlFlow::Break(())
    }

    /// `spec.paused`: no new step starts (the goal reads Paused once none runs).
    pub(super) fn hold_for_pause(&mut self) -> bool {
        if !self.input.spec.paused {
            if self.paused_reason() == Some(reasons::REQUESTED)
                && conditions::is_true(&self.status.conditions, conditions::PAUSED)
            {
                self.condition(
                    conditions::PAUSED,
                    false,
                    reasons::UNPAUSED,
                    "spec.paused was cleared",
                );
                self.event(
                    false,
                    reasons::UNPAUSED,
                    "spec.paused was cleared; continuing".into(),
                );
            }
            return false;
        }
        if self.condition(
            conditions::PAUSED,
            true,
            reasons::REQUESTED,
            "spec.paused is true: no new step starts",
        ) {
            self.event(
                false,
                reasons::PAUSED,
                "spec.paused is true: no new step starts".into(),
            );
        }
        if self.any_running() {
            return true;
        }
        self.condition(
            conditions::PROGRESSING,
            false,
            reasons::PAUSED,
            "spec.paused is true",
        );
        self.status.phase = Some(GoalPhase::Paused);
        true
    }

    /// The role of that name in the goal's swarm: a step of that role uses its template.
    pub(super) fn swarm_role(&self, role: &str) -> Option<&crate::swarm::SwarmRole> {
        self.input.swarm?.roles.get(role)
    }

    /// The step's own runtime, then its swarm role's, then the goal's defaults, then
    /// the swarm's defaults.
    pub(super) fn runtime(&self, step: &Step, role: &str) -> Option<RuntimeSpec> {
        let fallbacks = [
            self.swarm_role(role).and_then(|r| r.runtime.clone()),
            self.input.spec.defaults.runtime.clone(),
            self.input.swarm.and_then(|s| s.defaults.runtime.clone()),
        ];
        let runtime = fallbacks
            .into_iter()
            .flatten()
            .fold(step.runtime.clone().unwrap_or_default(), |r, f| r.or(&f));
        runtime.image.is_some().then_some(runtime)
    }

    /// The step's pod settings: the swarm's defaults, its swarm role's, the goal's,
    /// then its own.
    pub(super) fn pod_template(&self, step: &Step, role: &str) -> PodTemplate {
        PodTemplate::layered([
            self.input
                .swarm
                .and_then(|s| s.defaults.pod_template.as_ref()),
            self.swarm_role(role).and_then(|r| r.pod_template.as_ref()),
            self.input.spec.pod_template.as_ref(),
            step.pod_template.as_ref(),
        ])
    }

    pub(super) fn timeout(&self, step: &Step) -> Duration {
        step.timeout
            .as_ref()
            .unwrap_or(&self.input.spec.defaults.timeout)
            .get()
    }
}

impl StepStatus {
    /// A step not started yet whose first attempt comes after `attempts` pods made at
    /// its position for other steps.
    pub(super) fn pending_after(name: &str, attempts: i32) -> StepStatus {
        StepStatus {
            attempts,
            attempt_base: attempts,
            ..StepStatus::pending(name)
        }
    }

    pub(super) fn pending(name: &str) -> StepStatus {
        StepStatus {
            name: name.into(),
            item: None,
            role: None,
            phase: StepPhase::Pending,
            attempts: 0,
            pod_name: None,
            started_at: None,
            finished_at: None,
            result: None,
            message: None,
            next_retry_time: None,
            attempt_base: 0,
            fingerprint: None,
        }
    }
}

/// Why a step pod failed, in words: its exit code and the kubelet's reason, and why
/// its work did not land, when that was why.
fn failure_message(pod: &StepPod) -> String {
    let mut message = format!(
        "exit code {}",
        pod.exit_code.map_or("unknown".into(), |c| c.to_string())
    );
    if let Some(reason) = &pod.reason {
        message.push_str(&format!(" ({reason})"));
    }
    let landing = pod
        .message
        .as_deref()
        .filter(|m| m.starts_with(crate::goal::land::FAILED_PREFIX));
    if let Some(landing) = landing {
        message.push_str(&format!(": {}", truncate_result(landing)));
    }
    message
}
