//! The kinds layer: the four custom resources' types (their CRDs, specs and statuses),
//! read by every controller and command and importing none of them. What they share
//! (runtime names, object names, durations, pod templates, workspaces, conditions)
//! comes from the shared modules below the controllers (api, duration, template,
//! workspace, conditions); tests/module_graph.rs keeps it that way.

pub mod agent;
pub mod agent_pod;
pub mod claim;
pub mod goal;
pub mod guard;
pub mod merge;
pub mod messages;
pub mod prwatch;
pub mod request;
pub mod spawn;
pub mod swarm;
