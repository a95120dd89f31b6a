//! The labels the operator puts on what it makes, for every kind in one place: a pod,
//! Agent or NetworkPolicy of one kind is found by another kind's controller through
//! these keys, so they must never drift apart.

/// The Agent a pod (or its identity objects) belongs to.
pub const AGENT: &str = "overseer.dev/agent";
/// The attempt of an agent, or of a goal's step, that a pod runs.
pub const ATTEMPT: &str = "overseer.dev/attempt";
/// The role an agent or a step pod plays.
pub const ROLE: &str = "overseer.dev/role";
/// The Swarm an agent, its pods or a step pod belong to.
pub const SWARM: &str = "overseer.dev/swarm";
/// The Agent that spawned a swarm member (`overseer spawn`).
pub const PARENT: &str = "overseer.dev/parent";
/// The swarm run an agent belongs to (`spec.runId`, else the Swarm's uid).
pub const RUN: &str = "overseer.dev/run";
/// The Goal a step pod (or its results ConfigMap) belongs to.
pub const GOAL: &str = "overseer.dev/goal";
/// The step a step pod runs, by name and by index.
pub const STEP: &str = "overseer.dev/step";
pub const STEP_INDEX: &str = "overseer.dev/step-index";
