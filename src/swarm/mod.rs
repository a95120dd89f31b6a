pub mod compose;
pub mod controller;

pub use crate::kinds::swarm::*;
