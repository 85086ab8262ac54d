#![forbid(unsafe_code)]
#![cfg_attr(feature = "mcp", doc = include_str!("../README.md"))]
#![cfg_attr(
    not(feature = "mcp"),
    doc = "Tool providers for the Looopy agent runtime (built without the `mcp` feature; see README.md)."
)]

mod client;
mod done;
mod error;
mod ext;
mod local;
#[cfg(feature = "mcp")]
pub mod mcp;
mod timeout;

pub use client::{
    CLIENT_TOOL_MARK, CLIENT_TOOLS_KEY, ClientToolResult, ClientTools, PendingClientCall,
    client_results, split_client_results,
};
pub use done::{DONE_TOOL_NAME, DoneTool};
pub use error::{ToolFnError, ToolsError};
pub use ext::ToolProviderExt;
pub use local::{LocalTools, NoArgs, parse_arguments, schema_for};
#[cfg(feature = "mcp")]
pub use mcp::{HttpServer, IDEMPOTENCY_KEY_META, McpToolProvider, McpTransport, StdioServer};
pub use timeout::{DEFAULT_TOOL_TIMEOUT, TimeoutTools};
