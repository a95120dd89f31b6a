pub mod controller;
pub mod decide;
pub mod github;
pub mod message;
pub mod types;

pub use types::*;
