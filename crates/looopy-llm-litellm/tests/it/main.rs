//! The integration tests of `looopy-llm-litellm`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../agent_loop.rs"]
mod agent_loop;
#[path = "../aimock.rs"]
mod aimock;
#[path = "../calls.rs"]
mod calls;
#[path = "../conformance.rs"]
mod conformance;
#[path = "../request_options.rs"]
mod request_options;
#[path = "../responses.rs"]
mod responses;
#[path = "../responses_conformance.rs"]
mod responses_conformance;
#[path = "../retry.rs"]
mod retry;
#[path = "../streaming.rs"]
mod streaming;
#[path = "../support/mod.rs"]
mod support;
