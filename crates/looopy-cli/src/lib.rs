#![forbid(unsafe_code)]
//! The `looopy` binary's pieces, as a library so that they can be tested:
//! telemetry set-up, configuration, and the `serve`, `chat` and `run` commands.

pub mod config;
pub mod telemetry;
