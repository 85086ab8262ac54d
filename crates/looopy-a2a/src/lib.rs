#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// A server-only build leaves the client's helpers in the shared modules
// (JSON-RPC requests, wire decoding, trace injection) unused.
#![cfg_attr(not(feature = "client"), allow(dead_code))]
#![doc = include_str!("../README.md")]

mod agent_runner;
#[cfg(feature = "client")]
mod client;
mod jsonrpc;
mod loop_runner;
mod model;
#[cfg(feature = "client")]
mod remote_tool;
mod runner;
mod server;
mod tool_progress;
mod trace;
mod version;
mod wire;

pub use agent_runner::{AgentFactory, AgentRunner};
#[cfg(feature = "client")]
pub use client::{
    A2aClient, A2aClientBuilder, A2aClientError, A2aStream, AgentCard, Credentials, StreamItem,
    TaskPage, TransportError,
};
pub use jsonrpc::{RpcError, UNAUTHENTICATED};
pub use loop_runner::LoopRunner;
pub use model::{SendRequest, SendResponse, StreamEvent, TaskSnapshot, WireMessage};
#[cfg(feature = "client")]
pub use remote_tool::RemoteAgentTools;
pub use runner::{ResumeRequest, RunnerError, TurnEvents, TurnRequest, TurnRunner};
pub use server::{
    A2aServer, A2aServerBuilder, ANONYMOUS, API_KEY_HEADER, AgentCardConfig, AgentSkill,
    AuthConfig, DEFAULT_MAX_BODY_BYTES, DEFAULT_RECOVERY_SCAN, EXTENSIONS_HEADER,
    PUSH_TOKEN_HEADER, PushSettings, REST_PATH, TOOL_PROGRESS_EXTENSION,
};
pub use tool_progress::ToolProgress;
pub use version::{ProtocolVersion, VERSION_HEADER};
