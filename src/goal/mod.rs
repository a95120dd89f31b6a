pub mod plan;
#[cfg(test)]
mod plan_tests;
pub mod roles;
pub mod types;

pub use types::*;
