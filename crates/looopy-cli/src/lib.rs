#![forbid(unsafe_code)]
//! The `looopy` binary's pieces, as a library so that they can be tested:
//! telemetry set-up, configuration, and the `serve`, `mcp`, `chat` and `run`
//! commands.
#![doc = include_str!("../README.md")]

pub mod app;
pub mod artifacts;
pub mod banner;
pub mod chat;
pub mod config;
pub mod eval;
pub mod history;
pub mod mcp;
pub mod prompts;
pub mod push;
pub mod record;
pub mod render;
pub mod replay;
pub mod run;
pub mod serve;
pub mod telemetry;
