// Each test binary uses a part of the support code.
#![allow(dead_code)]

pub mod browser;
pub mod cases;
pub mod chaos;
pub mod cluster;
pub mod git_server;
pub mod github;
pub mod health;
pub mod measure;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod shim;
pub mod tls;
pub mod webhook;
