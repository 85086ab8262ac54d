#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(feature = "mcp", doc = include_str!("../README.md"))]
#![cfg_attr(
    not(feature = "mcp"),
    doc = "Tool providers for the Looopy agent runtime (built without the `mcp` feature; see README.md)."
)]

mod done;
mod error;
mod local;
#[cfg(feature = "mcp")]
pub mod mcp;

pub use done::{DONE_TOOL_NAME, DoneTool};
pub use error::{ToolFnError, ToolsError};
pub use local::{LocalTools, NoArgs, parse_arguments, schema_for};
/// Client tools are declared and answered on the wire, so they live in
/// [`looopy_core::client_tool`] (a server reads them without this crate);
/// re-exported here, where the other tool providers are. The wire's key
/// (`looopy_core::client_tool::CLIENT_TOOLS_KEY`) has that one path: only
/// the server's edge reads it.
pub use looopy_core::client_tool::{
    ClientToolResult, ClientTools, InvalidClientTools, PendingClientCall, client_results,
    split_client_results,
};
#[cfg(feature = "mcp-oauth")]
pub use mcp::OAuthClientCredentials;
#[cfg(feature = "mcp")]
pub use mcp::{
    DEFAULT_ELICITATION_TIMEOUT, DEFAULT_SAMPLING_MAX_TOKENS, HttpServer, IDEMPOTENCY_KEY_META,
    LIST_RESOURCES_TOOL, McpPrompt, McpPromptArgument, McpPromptMessages, McpReferences,
    McpResource, McpResourceTemplate, McpRoot, McpSampling, McpToolProvider, McpTransport,
    READ_RESOURCE_TOOL, StdioServer,
};
