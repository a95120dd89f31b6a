pub mod controller;
pub mod decide;
pub mod github;
pub mod message;

pub use crate::kinds::prwatch::*;
