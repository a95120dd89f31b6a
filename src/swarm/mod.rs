pub mod claimer;
pub mod claims;
pub mod compose;
pub mod controller;
pub mod merge;
pub mod merger;
pub mod run;
pub mod spawn;
pub mod spawner;

pub use crate::kinds::swarm::*;
