pub mod compose;
pub mod controller;
pub mod types;

pub use types::*;
