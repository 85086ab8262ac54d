//! The integration tests of `looopy-llm-anthropic`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../agent_loop.rs"]
mod agent_loop;
#[path = "../aimock.rs"]
mod aimock;
#[path = "../conformance.rs"]
mod conformance;
#[path = "../wire.rs"]
mod wire;
