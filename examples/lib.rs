//! Runnable examples of Looopy: `cargo run -p looopy-examples --example <name>`.
//!
//! - `hello_turn`: one AgentLoop turn with a scripted model and a Rust tool.
