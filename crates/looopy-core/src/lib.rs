#![forbid(unsafe_code)]
//! # looopy-core
//!
//! The vocabulary of the Looopy agent runtime: messages, tools, model
//! requests and streamed chunks, task states, events, and the traits that the
//! other crates implement ([`LlmProvider`], [`ToolProvider`], the stores).
//! No I/O happens here.
//!
//! ```
//! use looopy_core::{Message, History, ToolCall, ToolResult};
//!
//! let mut history = History::from(vec![Message::user("What is 2+2?")]);
//! let call = ToolCall::new("call-1", "add", r#"{"a":2,"b":2}"#);
//! assert_eq!(call.parsed_arguments()["a"], 2);
//! history.push(ToolResult::text("call-1", "4").into_message());
//! assert_eq!(history.len(), 2);
//! ```

pub mod client_tool;
mod context;
mod event;
mod history;
mod llm;
mod message;
pub mod store;
mod task;
mod tool;
mod tool_provider;

pub use client_tool::ClientToolResult;
pub use context::{AuthContext, CallContext, ToolContext, TurnContext};
pub use event::{AgentEvent, EventPayload, ToolOutcome};
pub use history::History;
pub use llm::{
    FinishReason, LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream,
    ResponseAssembler, ToolChoice, Usage,
};
pub use message::{FileContent, Message, Part, Role};
pub use store::StoreError;
pub use task::{Artifact, TaskState, TaskStatus};
pub use tool::{ToolCall, ToolDefinition, ToolResult, ToolSignal};
pub use tool_provider::{ToolError, ToolProvider};

/// Re-exported so that users name the same token type as the loop.
pub use tokio_util::sync::CancellationToken;
