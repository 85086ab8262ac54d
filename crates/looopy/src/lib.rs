#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

pub mod prelude;
pub mod registry;
pub mod structured;

// Everything of the core vocabulary, at the top: `looopy::Message`,
// `looopy::ToolCall`, `looopy::store::TaskRecordStore`...
pub use looopy_core::*;

/// The single-turn engine: [`AgentLoop`](turn::AgentLoop), its builder,
/// layers and hooks (the `looopy-loop` crate).
pub use looopy_loop as turn;

/// The multi-turn [`Agent`](agent::Agent): a conversation with persistence
/// and a lifecycle (the `looopy-agent` crate).
pub use looopy_agent as agent;

/// Evaluation: datasets of cases with expectations, run against an Agent,
/// reported as a table, JUnit XML, JSON and HTML (the `looopy-eval` crate).
pub use looopy_eval as eval;

/// Tools: typed Rust functions ([`LocalTools`](tools::LocalTools)), client
/// tools, MCP servers (feature `mcp`), the done tool (the `looopy-tools` crate).
pub use looopy_tools as tools;

/// Store implementations, and the backend picked by configuration.
pub mod stores {
    /// The backend named by configuration (`backend = "memory"`,
    /// `"redis"` with the `redis` feature, or `"postgres"` with the
    /// `postgres` feature), built into one [`Stores`] bundle
    /// (the `looopy-stores` crate).
    pub use looopy_stores::{StoreConfig, Stores};

    /// In memory (the `looopy-stores-memory` crate).
    pub use looopy_stores_memory as memory;

    /// On Redis or a Redis Cluster (the `looopy-stores-redis` crate).
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub use looopy_stores_redis as redis;

    /// On PostgreSQL (the `looopy-stores-postgres` crate).
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    pub use looopy_stores_postgres as postgres;
}

/// The OpenAI-compatible chat completions provider: LiteLLM, OpenAI, vLLM,
/// Ollama... (the `looopy-llm-litellm` crate).
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub use looopy_llm_litellm as openai;

/// The Anthropic Messages API provider (the `looopy-llm-anthropic` crate).
#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub use looopy_llm_anthropic as anthropic;

/// The Google Gemini API provider (the `looopy-llm-gemini` crate).
#[cfg(feature = "gemini")]
#[cfg_attr(docsrs, doc(cfg(feature = "gemini")))]
pub use looopy_llm_gemini as gemini;

/// The A2A protocol: server (feature `a2a-server`), client and remote agents
/// as tools (feature `a2a-client`) (the `looopy-a2a` crate).
#[cfg(any(feature = "a2a-server", feature = "a2a-client"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "a2a-server", feature = "a2a-client"))))]
pub use looopy_a2a as a2a;

/// Re-exported for `#[derive(JsonSchema)]` on tool arguments and typed answers.
pub use schemars;
