pub mod compose;
pub mod controller;
pub mod run;

pub use crate::kinds::swarm::*;
