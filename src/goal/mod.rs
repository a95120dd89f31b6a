pub mod controller;
pub mod dependencies;
pub mod instructions;
pub mod land;
pub mod message;
pub mod plan;
#[cfg(test)]
mod plan_tests;
pub mod pod;
pub mod progress;
pub mod review;
pub mod roles;

pub use crate::kinds::goal::*;
