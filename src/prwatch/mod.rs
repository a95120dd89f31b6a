pub mod github;
pub mod types;

pub use types::*;
