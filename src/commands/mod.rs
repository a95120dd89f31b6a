//! What a person (or an overseer agent) runs: the CLI's commands, each a few API calls
//! under the caller's own permissions, printed as kubectl prints. The kinds' folders
//! hold the types and decisions these read; nothing here is the operator's.

pub mod access;
pub mod agent;
pub mod claim;
pub mod escalation;
pub mod goal;
pub mod goals;
pub mod jsonpath;
pub mod mail;
pub mod merge;
pub mod output;
pub mod ps;
pub mod session;
pub mod spawn;
pub mod swarms;
pub mod version;
