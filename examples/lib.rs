//! Runnable examples of Looopy: `cargo run -p looopy-examples --example <name>`.
//!
//! - `hello_turn`: one AgentLoop turn with a scripted model and a Rust tool.
//! - `turn`: the README's program: a model from `LOOOPY_LLM_*` and a typed tool.
//! - `structured`: a typed final answer (`response_format`, validation retry).
//! - `mcp`: the tools of an MCP server (stdio) in a turn.
//! - `axum_embed`: the A2A server's routes in an existing axum application.
//! - `sub_agent`: a remote A2A agent used as a tool.
//! - `redis_memory`: an Agent on Redis; the conversation outlives the process.
//!
//! `tests/examples.rs` runs each of them against the OpenAI fixture server
//! (and the provisioned MCP server, Redis).
