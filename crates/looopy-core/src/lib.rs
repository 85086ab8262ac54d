#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod alongside;
pub mod approval;
mod artifact_view;
pub mod blob;
pub mod cache;
mod cancel;
pub mod client_tool;
mod context;
pub mod cuts;
mod deps;
pub mod elicitation;
mod event;
mod event_sink;
pub mod genai_content;
mod history;
mod llm;
pub mod mcp_ref;
mod message;
pub mod models;
pub mod pricing;
pub mod provider;
pub mod record;
pub mod store;
mod task;
pub mod tokens;
mod tool;
mod tool_provider;
mod turn_report;

pub use alongside::{Alongside, alongside};
pub use artifact_view::ConversationArtifacts;
pub use blob::{BlobError, BlobKey, BlobRef, BlobStore};
pub use cache::{CacheKind, CacheStore};
pub use client_tool::ClientToolResult;
pub use context::{AuthContext, TurnContext};
pub use deps::Deps;
pub use event::{AgentEvent, EventPayload, HistoryLimit, ToolOutcome};
pub use event_sink::EventSink;
pub use history::History;
pub use llm::{
    ChatSpan, FinishReason, LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream,
    ResponseAssembler, ResponseFormat, ToolChoice, Usage,
};
pub use message::{FileContent, Message, Part, Reasoning, Role};
pub use store::StoreError;
pub use task::{Artifact, TaskState, TaskStatus, fold_artifact};
pub use tool::{
    CutOutput, ResultSource, ToolCall, ToolDefinition, ToolError, ToolFailure, ToolResult,
    ToolSignal,
};
pub use tool_provider::ToolProvider;
pub use turn_report::{
    AgentTurnReport, FailedToolCall, StatusMetadata, TurnEnd, TurnError, TurnReport,
};

pub use cancel::WhenCancelled;
/// Re-exported so that users name the same token type as the loop.
pub use tokio_util::sync::CancellationToken;
