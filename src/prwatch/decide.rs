//! A PR watch's decisions as a pure function: (spec, status, what this poll saw,
//! whether the agent can take input, now) → the new status, the wake to deliver (if
//! any), Events, and when to look again. All memory is in status.

use crate::conditions::Recording;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as KubeCondition;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::github::{Feedback, PollError, Snapshot};
use super::message::{self, CiNews};
use crate::kinds::prwatch::*;
use crate::reasons;
use crate::{conditions, duration};

/// The longest a rate limit holds the next poll back: a reset time or `retry-after`
/// further ahead (from a misbehaving API) would stop the watch for good.
const LONGEST_RATE_LIMIT: Duration = Duration::from_secs(3600);

/// `sha:result` pairs remembered (newest last).
const REPORTED_KEPT: usize = 50;

/// What this reconcile knows about GitHub.
#[derive(Debug, Clone, Copy)]
pub enum Poll<'a> {
    /// No poll was due.
    NotDue,
    Done(&'a Snapshot),
    Error(&'a PollError),
}

#[derive(Clone, Copy)]
pub struct Input<'a> {
    /// The watch's name (its wakes' delivery ids).
    pub name: &'a str,
    pub generation: Option<i64>,
    pub spec: &'a PRWatchSpec,
    pub status: Option<&'a PRWatchStatus>,
    pub poll: Poll<'a>,
    /// The agent's pod can take input now.
    pub agent_ready: bool,
    pub now: Timestamp,
}

/// An Event the plan asks for.
pub use crate::conditions::PlannedEvent as Event;

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub status: PRWatchStatus,
    /// The message to type into the agent. The status counts it and holds it as
    /// `wakeInFlight`, so it is written first: a restart delivers that claim again
    /// under the same id, never a second wake of its own.
    pub wake: Option<String>,
    pub events: Vec<Event>,
    /// When to look again (None: the watch has ended).
    pub requeue_after: Option<Duration>,
}

/// Whether a poll is due now.
pub fn poll_due(status: Option<&PRWatchStatus>, now: Timestamp) -> bool {
    status
        .and_then(|s| s.next_poll_time.as_ref())
        .is_none_or(|at| at.0 <= now)
}

pub fn ended(phase: Option<PRWatchPhase>) -> bool {
    matches!(
        phase,
        Some(
            PRWatchPhase::Merged
                | PRWatchPhase::Closed
                | PRWatchPhase::Stopped
                | PRWatchPhase::Exhausted
                | PRWatchPhase::Failing
        )
    )
}

/// CI has settled on the head: every check complete, all on the first page, and the
/// rollup neither pending nor expected. Then `sha:success` or `sha:failure`.
pub fn ci_result(snapshot: &Snapshot) -> Option<&'static str> {
    let state = snapshot.rollup_state.as_deref()?;
    let settled = !matches!(state, "PENDING" | "EXPECTED")
        && !snapshot.more_checks
        && snapshot.checks.iter().all(|c| c.complete);
    settled.then_some(if state == "SUCCESS" {
        "success"
    } else {
        "failure"
    })
}

/// Feedback not reported yet, from anyone but the token's own account, oldest first.
pub fn new_feedback(snapshot: &Snapshot, status: &PRWatchStatus) -> Vec<Feedback> {
    // Status keeps whole seconds, so feedback is compared by the second.
    let until = status.feedback_until.as_ref().map(|t| t.0.as_second());
    let mut fresh: Vec<Feedback> = snapshot
        .feedback
        .iter()
        .filter(|f| {
            f.author
                .as_deref()
                .is_none_or(|a| !a.eq_ignore_ascii_case(&snapshot.viewer))
        })
        .filter(|f| match until {
            None => true,
            Some(until) => {
                let second = f.time.as_second();
                second > until || (second == until && !status.seen_feedback.contains(&f.id))
            }
        })
        .cloned()
        .collect();
    fresh.sort_by_key(|f| (f.time, f.id.clone()));
    fresh
}

/// Moves the feedback mark past `reported`: the latest time and the ids at it.
fn mark_reported(status: &mut PRWatchStatus, snapshot: &Snapshot, reported: &[Feedback]) {
    let Some(latest) = reported.iter().map(|f| f.time.as_second()).max() else {
        return;
    };
    let before = status.feedback_until.as_ref().map(|t| t.0.as_second());
    let mut seen: Vec<String> = if before == Some(latest) {
        status.seen_feedback.clone()
    } else {
        Vec::new()
    };
    for f in snapshot
        .feedback
        .iter()
        .filter(|f| f.time.as_second() == latest)
    {
        if !seen.contains(&f.id) {
            seen.push(f.id.clone());
        }
    }
    status.feedback_until = Timestamp::from_second(latest).ok().map(Time);
    status.seen_feedback = seen;
}

struct Builder<'a> {
    input: &'a Input<'a>,
    status: PRWatchStatus,
    events: Vec<Event>,
    now: Time,
}

impl conditions::Recording for Builder<'_> {
    fn stamped(&mut self) -> (&mut Vec<KubeCondition>, Option<i64>, &Time) {
        (
            &mut self.status.conditions,
            self.input.generation,
            &self.now,
        )
    }

    fn queue(&mut self, event: Event) {
        self.events.push(event);
    }
}

impl Builder<'_> {
    fn end(&mut self, phase: PRWatchPhase, reason: &'static str, message: String, warning: bool) {
        self.status.phase = Some(phase);
        self.status.next_poll_time = None;
        self.status.pending = None;
        self.condition(conditions::WATCHING, false, reason, &message);
        self.event(warning, reason, message);
    }
}

pub fn plan(input: &Input) -> Plan {
    let mut b = Builder {
        input,
        status: input.status.cloned().unwrap_or_default(),
        events: Vec::new(),
        now: Time(input.now),
    };
    b.status.observed_generation = input.generation;
    let wake = decide(&mut b);
    let (ready, reason, message) = readiness(&b.status);
    b.condition(conditions::READY, ready, reason, &message);
    let reading = crate::health::prwatch(&b.status);
    crate::health::set(&mut b.status.conditions, &reading, input.generation, &b.now);
    b.status.wake_in_flight = wake.as_ref().map(|message| WakeInFlight {
        id: wake_id(input.name, b.status.wakes),
        message: message.clone(),
    });
    let requeue_after = if ended(b.status.phase) {
        None
    } else {
        let at = b.status.next_poll_time.as_ref().map_or(input.now, |t| t.0);
        Some(
            at.duration_since(input.now)
                .try_into()
                .unwrap_or(Duration::ZERO)
                .max(Duration::from_secs(1)),
        )
    };
    Plan {
        status: b.status,
        wake,
        events: b.events,
        requeue_after,
    }
}

/// The watch's `Ready` condition, for `kubectl wait` and GitOps tools: True while it
/// watches and its last poll answered, or once it ended as it should (merged, closed,
/// stopped); False while no poll has answered yet, after a failed or rate-limited poll,
/// and when it ended failing or out of wakes.
pub fn readiness(status: &PRWatchStatus) -> (bool, &'static str, String) {
    let polling = status
        .conditions
        .iter()
        .find(|c| c.type_ == conditions::POLLING);
    let rate_limited = conditions::is_true(&status.conditions, conditions::RATE_LIMITED);
    match status.phase {
        Some(PRWatchPhase::Merged) => (true, reasons::MERGED, "the pull request merged".into()),
        Some(PRWatchPhase::Closed) => (true, reasons::CLOSED, "the pull request closed".into()),
        Some(PRWatchPhase::Stopped) => (true, reasons::STOPPED, "spec.stop is true".into()),
        Some(PRWatchPhase::Exhausted) => (false, reasons::EXHAUSTED, "maxWakes reached".into()),
        Some(PRWatchPhase::Failing) => (
            false,
            reasons::FAILING,
            format!("{} polls failed in a row", status.failed_polls),
        ),
        Some(PRWatchPhase::Watching) | None => match polling {
            _ if rate_limited => (
                false,
                reasons::RATE_LIMITED,
                "GitHub asked it to wait".into(),
            ),
            Some(c) if c.status == "True" => {
                (true, reasons::WATCHING, "the last poll answered".into())
            }
            Some(_) => (
                false,
                reasons::POLL_FAILED,
                format!("{} polls failed in a row", status.failed_polls),
            ),
            None => (
                false,
                reasons::NOT_POLLED_YET,
                "no poll has answered yet".into(),
            ),
        },
    }
}

fn decide(b: &mut Builder) -> Option<String> {
    if ended(b.status.phase) {
        return None;
    }
    if b.input.spec.stop {
        b.end(
            PRWatchPhase::Stopped,
            reasons::STOPPED,
            "spec.stop is true".into(),
            false,
        );
        return None;
    }
    b.status.phase = Some(PRWatchPhase::Watching);
    let input = b.input;
    let snapshot = match input.poll {
        Poll::NotDue => return None,
        Poll::Error(PollError::RateLimited { until, why }) => {
            rate_limited(b, *until, why);
            return None;
        }
        Poll::Error(PollError::Failed(error)) => return poll_failed(b, error),
        Poll::Done(snapshot) => snapshot,
    };
    // The first poll that *succeeded* sets the baseline: `headSha` is written only by
    // one, while a failed poll already records `lastPollTime`.
    let first_poll = b.status.head_sha.is_none();
    let failed_checks = record_poll(b, snapshot);
    if pull_request_ended(b, snapshot) {
        return None;
    }
    if first_poll {
        // What is already there when the watch begins is not news.
        mark_reported(&mut b.status, snapshot, &snapshot.feedback);
    }
    let news = news(b, snapshot, failed_checks)?;
    if !agent_takes_input(b) {
        return None;
    }
    Some(wake(b, snapshot, news))
}

/// What a poll found that the agent has not been told: CI settled on the head commit
/// (once per sha and result), and feedback past its quiet period.
struct News {
    ci: Option<CiNews>,
    feedback: Vec<Feedback>,
    feedback_due: bool,
}

/// GitHub asked to wait: the next poll waits until then (believed up to
/// `LONGEST_RATE_LIMIT`, and never sooner than the interval).
fn rate_limited(b: &mut Builder, until: Timestamp, why: &str) {
    let now = b.input.now;
    let next = until
        .min(duration::later(now, LONGEST_RATE_LIMIT))
        .max(duration::later(now, b.input.spec.poll_interval.get()));
    b.status.next_poll_time = Some(Time(next));
    let message = format!("{why}: the next poll waits until {next}");
    if b.condition(
        conditions::RATE_LIMITED,
        true,
        reasons::RATE_LIMITED,
        &message,
    ) {
        b.event(true, reasons::RATE_LIMITED, message);
    }
}

/// A failed poll is counted; `maxFailedPolls` in a row end the watch, and the agent is
/// told when its pod takes input (the returned text).
fn poll_failed(b: &mut Builder, error: &str) -> Option<String> {
    let spec = b.input.spec;
    b.status.failed_polls = b.status.failed_polls.saturating_add(1);
    b.status.last_poll_time = Some(b.now.clone());
    b.status.next_poll_time = Some(Time(duration::later(b.input.now, spec.poll_interval.get())));
    let message = format!(
        "poll {} of {} in a row failed: {error}",
        b.status.failed_polls, spec.max_failed_polls
    );
    b.condition(conditions::POLLING, false, reasons::POLL_FAILED, &message);
    b.event(true, reasons::POLL_FAILED, message);
    if b.status.failed_polls < spec.max_failed_polls {
        return None;
    }
    let told = b.input.agent_ready;
    let message = format!(
        "{} polls failed in a row; the watch stopped{}",
        b.status.failed_polls,
        if told {
            " and the agent is told"
        } else {
            "; the agent's pod is not ready, so it is not told"
        }
    );
    b.end(PRWatchPhase::Failing, reasons::FAILING, message, true);
    told.then(|| message::failing(&spec.url, b.status.failed_polls))
}

/// Records a successful poll: its time, the head commit and its checks; returns the
/// names of the failed checks.
fn record_poll(b: &mut Builder, snapshot: &Snapshot) -> Vec<String> {
    b.status.failed_polls = 0;
    b.status.last_poll_time = Some(b.now.clone());
    b.status.next_poll_time = Some(Time(duration::later(
        b.input.now,
        b.input.spec.poll_interval.get(),
    )));
    b.condition(
        conditions::POLLING,
        true,
        reasons::POLLED,
        "the last poll succeeded",
    );
    b.condition(
        conditions::RATE_LIMITED,
        false,
        reasons::WITHIN_LIMITS,
        "GitHub answered",
    );
    b.status.head_sha = Some(snapshot.head_sha.clone());
    let failed: Vec<String> = snapshot
        .checks
        .iter()
        .filter(|c| c.failed)
        .map(|c| c.name.clone())
        .collect();
    b.status.checks = Some(ChecksStatus {
        state: snapshot.rollup_state.clone(),
        sha: Some(snapshot.head_sha.clone()),
        failed: message::failed_checks_for_status(&failed),
    });
    failed
}

/// A merged or closed pull request ends the watch.
fn pull_request_ended(b: &mut Builder, snapshot: &Snapshot) -> bool {
    let (phase, reason, message) = match snapshot.state.as_str() {
        "MERGED" => (
            PRWatchPhase::Merged,
            reasons::MERGED,
            "the pull request was merged",
        ),
        "CLOSED" => (
            PRWatchPhase::Closed,
            reasons::CLOSED,
            "the pull request was closed",
        ),
        _ => return false,
    };
    b.end(phase, reason, message.into(), false);
    true
}

/// The news in `snapshot`, if any; feedback still inside its quiet period is kept
/// pending in status.
fn news(b: &mut Builder, snapshot: &Snapshot, failed_checks: Vec<String>) -> Option<News> {
    let feedback = new_feedback(snapshot, &b.status);
    b.status.pending = match (feedback.first(), feedback.last()) {
        (Some(first), Some(last)) => Some(PendingFeedback {
            count: feedback.len() as i32,
            first_time: Some(Time(first.time)),
            last_time: Some(Time(last.time)),
        }),
        _ => None,
    };
    let quiet = b.input.spec.quiet_period.get();
    let feedback_due = feedback
        .last()
        .is_some_and(|last| duration::later(last.time, quiet) <= b.input.now);
    let ci = ci_result(snapshot).and_then(|result| {
        let key = format!("{}:{result}", snapshot.head_sha);
        (!b.status.reported.contains(&key)).then(|| CiNews {
            sha: snapshot.head_sha.clone(),
            result,
            failed: failed_checks,
            total: snapshot.checks.len(),
        })
    });
    (ci.is_some() || feedback_due).then_some(News {
        ci,
        feedback,
        feedback_due,
    })
}

/// Whether the agent's pod takes input now; news for one that does not is kept for
/// the next poll.
fn agent_takes_input(b: &mut Builder) -> bool {
    if !b.input.agent_ready {
        let message = format!(
            "news for agent {}, whose pod does not take input now: kept for the next poll",
            b.input.spec.agent
        );
        if b.condition(
            conditions::AGENT_READY,
            false,
            reasons::AGENT_NOT_READY,
            &message,
        ) {
            b.event(true, reasons::AGENT_NOT_READY, message);
        }
        return false;
    }
    b.condition(
        conditions::AGENT_READY,
        true,
        reasons::AGENT_READY,
        "the agent's pod takes input",
    );
    true
}

/// The wake's text, with its news counted as reported and the wake counted;
/// `maxWakes` wakes end the watch.
fn wake(b: &mut Builder, snapshot: &Snapshot, news: News) -> String {
    let spec = b.input.spec;
    let News {
        ci,
        feedback,
        feedback_due,
    } = news;
    let reported_feedback: &[Feedback] = if feedback_due { &feedback } else { &[] };
    let text = message::wake(&spec.url, ci.as_ref(), reported_feedback);
    if let Some(ci) = &ci {
        b.status.reported.push(format!("{}:{}", ci.sha, ci.result));
        let excess = b.status.reported.len().saturating_sub(REPORTED_KEPT);
        b.status.reported.drain(..excess);
    }
    if feedback_due {
        mark_reported(&mut b.status, snapshot, &feedback);
        b.status.pending = None;
    }
    b.status.wakes = b.status.wakes.saturating_add(1);
    b.status.last_wake_time = Some(b.now.clone());
    let what = match (&ci, feedback_due) {
        (Some(ci), true) => format!("CI {} and {} new feedback", ci.result, feedback.len()),
        (Some(ci), false) => format!("CI {}", ci.result),
        (None, _) => format!("{} new feedback", feedback.len()),
    };
    b.event(
        false,
        reasons::AGENT_WOKEN,
        format!("agent {} woken: {what}", spec.agent),
    );
    if b.status.wakes >= spec.max_wakes {
        let message = format!("{} wakes (maxWakes): the watch ended", b.status.wakes);
        b.end(PRWatchPhase::Exhausted, reasons::EXHAUSTED, message, false);
    }
    text
}

/// The delivery id of watch `name`'s wake number `wake`.
pub fn wake_id(name: &str, wake: i32) -> String {
    format!("pr/{name}/{wake}")
}

/// The status once the claimed wake is delivered (or, after a restart, given up).
pub fn wake_settled(status: &PRWatchStatus) -> PRWatchStatus {
    PRWatchStatus {
        wake_in_flight: None,
        ..status.clone()
    }
}

/// What to write back when the wake that `plan` claimed could not be delivered: the
/// same poll, planned as if the agent could not take input, so the news stays
/// unreported and the next poll wakes the agent again. (A claim whose outcome is
/// unknown, because the operator stopped, stays claimed: never twice.)
pub fn kept_for_next_poll(input: &Input) -> Plan {
    let mut kept = plan(&Input {
        agent_ready: false,
        ..*input
    });
    // The failed delivery has its own Event.
    kept.events.retain(|e| e.reason != reasons::AGENT_NOT_READY);
    kept
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
