//! The integration tests of `looopy-tools`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../done_and_client.rs"]
mod done_and_client;
#[path = "../local.rs"]
mod local;
#[path = "../mcp_catalog.rs"]
mod mcp_catalog;
#[path = "../mcp_elicitation.rs"]
mod mcp_elicitation;
#[path = "../mcp_everything.rs"]
mod mcp_everything;
#[path = "../mcp_faults.rs"]
mod mcp_faults;
#[path = "../mcp_oauth.rs"]
mod mcp_oauth;
#[path = "../mcp_python.rs"]
mod mcp_python;
#[path = "../mcp_references.rs"]
mod mcp_references;
#[path = "../mcp_sampling.rs"]
mod mcp_sampling;
#[path = "../mcp_trace.rs"]
mod mcp_trace;
#[path = "../support/mod.rs"]
mod support;
#[path = "../wrappers.rs"]
mod wrappers;
