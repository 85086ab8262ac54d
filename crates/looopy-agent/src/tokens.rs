//! Token counting for the window and compaction: the counters of
//! [`looopy_core::tokens`], re-exported, so that the Agent, its window,
//! its compaction and its loop's context guard share one counter.
//!
//! Plug a counter into an Agent with
//! [`AgentBuilder::token_counter`](crate::AgentBuilder::token_counter), or
//! into a [`WindowConfig`](crate::WindowConfig) /
//! [`CompactionConfig`](crate::CompactionConfig) with their `with_counter`.
//! [`WindowedLlm`](crate::WindowedLlm) feeds a
//! [`CalibratedCounter`] the usage of every call it passes on.

pub use looopy_core::tokens::*;
