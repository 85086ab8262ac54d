#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]
//!
//! ## Modules
//!
//! - `agent`: [`Agent`] and its lifecycle (start, pause, shutdown, save, clear);
//! - `builder`: [`AgentBuilder`];
//! - `turn` / `driver`: [`Agent::execute_turn`], [`AgentTurn`], the turn task;
//! - [`window`]: the sliding context window (pure functions);
//! - [`compaction`]: summarising old history;
//! - [`tokens`]: token counting for both ([`TokenCounter`]);
//! - `artifacts`: saving streamed and tool-made artifacts;
//! - [`artifact_tools`]: the built-in artifact tools (off by default);
//! - `client`: client tool results and tool calls left open;
//! - `lease`: the cross-process turn lease;
//! - `pause`: pausing a running turn from its [`AgentTurn`];
//! - `telemetry`: the Agent's spans (`agent.turn`, `agent.initialize`).

mod agent;
pub mod artifact_tools;
mod artifacts;
mod builder;
mod client;
mod commit;
pub mod compaction;
mod config;
mod driver;
mod error;
mod lease;
mod parts;
mod pause;
mod size_warning;
mod start;
mod telemetry;
mod template;
pub mod tokens;
mod turn;
pub mod window;

pub use agent::Agent;
pub use artifacts::FLUSH_EVERY;
pub use builder::AgentBuilder;
pub use client::{ClientToolResult, open_tool_calls, pending_approvals};
pub use compaction::{CompactionConfig, CompactionReport};
pub use config::{
    DEFAULT_LOCK_TTL, DEFAULT_TOOL_OUTPUT_MAX_CHARS, DEFAULT_TOOL_OUTPUT_PREVIEW_CHARS,
    DEFAULT_WINDOW_MESSAGES, MAX_COMPACTION_RECORDS, keys,
};
pub use driver::FinishedTurn;
pub use error::{AgentBusy, AgentError, BusyHolder};
pub use template::AgentTemplate;
pub use tokens::{CalibratedCounter, HeuristicCounter, SharedCounter, TokenCounter};
pub use turn::{AgentTurn, TurnOptions};
pub use window::{WindowConfig, WindowedLlm};

// Re-exported so that users of the Agent name the same types.
pub use looopy_core::store::{AgentState, LifecycleState};
pub use looopy_loop::{AgentLoop, AgentLoopConfig, TurnEnd};
