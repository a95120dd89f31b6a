//! The `Agent` kind: types, pure decisions, the pod it runs in, and its reconciler.

pub mod candidate;
pub mod controller;
pub mod decide;
pub mod instructions;
pub mod message;
pub mod monitor;
pub mod oversight;
pub mod pod;
pub mod pr_watches;
pub mod preamble;
pub mod wake;

pub use crate::kinds::agent::*;
