//! The reasons of conditions and Events, for every kind: the words users match in
//! alerts, `kubectl get events --field-selector reason=...` and dashboards, so a typo
//! is a compile error and not a silent mismatch. Condition types are in `conditions`.

/// Agent.
pub const ACTIVE: &str = "Active";
/// Agent.
pub const ACTIVITY_RESUMED: &str = "ActivityResumed";
/// Swarm: its run ended (timed out or completed), with its report.
pub const SWARM_ENDED: &str = "SwarmEnded";
/// Agent: its spawn request was refused (the reason in the message).
pub const SPAWN_REFUSED: &str = "SpawnRefused";
/// Agent (a monitor): its patrol could not be typed into it.
pub const PATROL_FAILED: &str = "PatrolFailed";
/// Agent: its claim request was refused (the path, holder and since when in the message).
pub const CLAIM_REFUSED: &str = "ClaimRefused";
/// Swarm: a member it spawned was created.
pub const SPAWNED: &str = "Spawned";
/// Swarm.
pub const AGENT_CREATED: &str = "AgentCreated";
/// PRWatch.
pub const AGENT_NOT_READY: &str = "AgentNotReady";
/// PRWatch.
pub const AGENT_READY: &str = "AgentReady";
/// Swarm.
pub const AGENT_REMOVED: &str = "AgentRemoved";
/// PRWatch.
pub const AGENT_WOKEN: &str = "AgentWoken";
/// Agent.
pub const BLOCKED: &str = "Blocked";
/// Agent: its mail was refused (the reason says why).
pub const MAIL_REFUSED: &str = "MailRefused";
/// Agent: an escalation to its overseer opened.
pub const ESCALATED: &str = "Escalated";
/// Agent: its overseer was told of its escalations.
pub const ESCALATION_TOLD: &str = "EscalationTold";
/// PRWatch.
pub const CLOSED: &str = "Closed";
/// Goal.
pub const DEADLOCK: &str = "Deadlock";
/// Agent.
pub const DONE: &str = "Done";
/// PRWatch.
pub const EXHAUSTED: &str = "Exhausted";
/// PRWatch.
pub const FAILING: &str = "Failing";
/// Goal (Ready).
pub const FAILED: &str = "Failed";
/// Goal.
pub const GOAL_FAILED: &str = "GoalFailed";
/// Goal.
pub const GOAL_SUCCEEDED: &str = "GoalSucceeded";
/// Agent (Ready): its pod has waited on its image past the patience.
pub const IMAGE_NOT_PULLED: &str = "ImageNotPulled";
/// Swarm.
pub const INVALID_SPEC: &str = "InvalidSpec";
/// Agent.
pub const LOOP_DISABLED: &str = "LoopDisabled";
/// Swarm.
pub const MEMBERS_MISSING: &str = "MembersMissing";
/// PRWatch.
pub const MERGED: &str = "Merged";
/// Agent.
pub const MESSAGE_DELIVERED: &str = "MessageDelivered";
/// Goal.
pub const MISSING_RUNTIME: &str = "MissingRuntime";
/// Agent.
pub const NO_ACTIVITY: &str = "NoActivity";
/// Agent.
pub const NO_IMAGE: &str = "NoImage";
/// Agent, Goal, Swarm: an object it would make exists and belongs to another owner.
pub const NAME_TAKEN: &str = "NameTaken";
/// Agent.
pub const NO_PROGRESS_REPORT: &str = "NoProgressReport";
/// Goal.
pub const NOT_BLOCKED: &str = "NotBlocked";
/// PRWatch (Ready): no poll has answered yet.
pub const NOT_POLLED_YET: &str = "NotPolledYet";
/// Goal.
pub const NOTIFIED: &str = "Notified";
/// Goal.
pub const NOTIFY_FAILED: &str = "NotifyFailed";
/// Agent.
pub const NUDGE_FAILED: &str = "NudgeFailed";
/// Agent.
pub const NUDGED: &str = "Nudged";
/// Agent.
pub const NUDGES_EXHAUSTED: &str = "NudgesExhausted";
/// Agent: the agent its `spec.overseer` names agreed to oversee it.
pub const OVERSEER_ACCEPTED: &str = "OverseerAccepted";
/// Agent: the agent its `spec.overseer` names has not agreed to oversee it.
pub const OVERSEER_NOT_ACCEPTED: &str = "OverseerNotAccepted";
/// Swarm.
pub const OVERSEER_NOT_READY: &str = "OverseerNotReady";
/// Agent, Goal.
pub const OVERSEER_WOKEN: &str = "OverseerWoken";
/// Goal.
pub const PAUSED: &str = "Paused";
/// Goal (Ready).
pub const PENDING: &str = "Pending";
/// Agent.
pub const POD_CREATED: &str = "PodCreated";
/// Agent.
pub const POD_LOST: &str = "PodLost";
/// Agent.
pub const POD_NOT_READY: &str = "PodNotReady";
/// Agent.
pub const POD_READY: &str = "PodReady";
/// Agent, Goal.
pub const POD_REFUSED: &str = "PodRefused";
/// PRWatch.
pub const POLL_FAILED: &str = "PollFailed";
/// PRWatch.
pub const POLLED: &str = "Polled";
/// Goal.
/// Agent.
pub const PR_WATCH_REFUSED: &str = "PRWatchRefused";
pub const PREDECESSOR_STALLED: &str = "PredecessorStalled";
/// Agent.
pub const PROGRESS_REPORTED: &str = "ProgressReported";
/// Agent.
pub const REPORT_NOT_REQUIRED: &str = "ReportNotRequired";
/// PRWatch.
pub const RATE_LIMITED: &str = "RateLimited";
/// Agent.
pub const RELEASED: &str = "Released";
/// Goal.
pub const REQUESTED: &str = "Requested";
/// Goal.
pub const RESUMED: &str = "Resumed";
/// Agent, Goal.
pub const RUNNING: &str = "Running";
/// Agent.
pub const SEND_FAILED: &str = "SendFailed";
/// Agent.
pub const SESSION_TIMEOUT: &str = "SessionTimeout";
/// Goal.
pub const SPEC_CONFLICT: &str = "SpecConflict";
/// Agent.
pub const STALL_LIMIT: &str = "StallLimit";
/// Agent.
pub const STALLED: &str = "Stalled";
/// Goal.
pub const STEP_FAILED: &str = "StepFailed";
/// Goal.
pub const STEP_RUNNING: &str = "StepRunning";
/// Goal.
pub const STEP_STARTED: &str = "StepStarted";
/// Goal.
pub const STEP_SUCCEEDED: &str = "StepSucceeded";
/// PRWatch.
pub const STOPPED: &str = "Stopped";
/// Agent.
pub const STOPPED_EARLY: &str = "StoppedEarly";
/// Goal.
pub const SUCCEEDED: &str = "Succeeded";
/// Agent.
pub const SUSPENDED: &str = "Suspended";
/// Agent.
pub const SWARM_NOT_FOUND: &str = "SwarmNotFound";
/// Goal.
pub const UNPAUSED: &str = "Unpaused";
/// every kind.
pub const UNREADABLE: &str = "Unreadable";
/// Swarm.
pub const VALID: &str = "Valid";
/// Goal.
pub const WAITING: &str = "Waiting";
/// Goal.
pub const WAITING_FOR_PREDECESSOR: &str = "WaitingForPredecessor";
/// Agent, Goal, PRWatch.
pub const WAKE_FAILED: &str = "WakeFailed";
/// PRWatch (Ready): its last poll succeeded.
pub const WATCHING: &str = "Watching";
/// PRWatch.
pub const WITHIN_LIMITS: &str = "WithinLimits";
/// Every kind (`Stalled=False`): the operator works on it.
pub const PROGRESSING: &str = "Progressing";
/// Every kind (`Stalled`, `Reconciling` False): as its spec asks.
pub const AS_EXPECTED: &str = "AsExpected";
/// Swarm (`Stalled`): its run timed out.
pub const TIMED_OUT: &str = "TimedOut";
/// Swarm (`Ready`): its run completed.
pub const COMPLETED: &str = "Completed";
