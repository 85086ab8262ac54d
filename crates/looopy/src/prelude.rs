//! What most programs need: `use looopy::prelude::*;`.

pub use futures::StreamExt as _;

pub use looopy_agent::{Agent, AgentBuilder, AgentError};
pub use looopy_core::{
    AgentEvent, EventPayload, History, LlmProvider, LlmRequest, LlmResponse, Message, Part,
    ResponseFormat, Role, TaskState, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult,
    TurnContext,
};
pub use looopy_loop::layers::ToolProviderExt;
pub use looopy_loop::{AgentLoop, TurnOutcome, TurnStream};
pub use looopy_stores::Stores;
pub use looopy_tools::{LocalTools, NoArgs, ToolFnError};
pub use schemars::JsonSchema;

pub use crate::structured::{ResponseFormatLayer, StructuredExt, StructuredOutput};

#[cfg(feature = "openai")]
pub use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};

#[cfg(feature = "mcp")]
pub use looopy_tools::{McpToolProvider, StdioServer};

#[cfg(feature = "redis")]
pub use looopy_stores_redis::RedisConfig;

#[cfg(feature = "a2a-server")]
pub use looopy_a2a::A2aServer;

#[cfg(feature = "a2a-client")]
pub use looopy_a2a::{A2aClient, RemoteAgentTools};
