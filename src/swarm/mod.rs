pub mod compose;
pub mod types;

pub use types::*;
