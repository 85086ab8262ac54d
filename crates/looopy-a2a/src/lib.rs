#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod agent_runner;
mod client;
mod jsonrpc;
mod loop_runner;
mod model;
mod remote_tool;
mod runner;
mod server;
mod trace;
mod version;
mod wire;

pub use agent_runner::{AgentFactory, AgentRunner};
pub use client::{
    A2aClient, A2aClientBuilder, A2aClientError, A2aStream, AgentCard, Credentials, StreamItem,
    TaskPage,
};
pub use jsonrpc::{RpcError, UNAUTHENTICATED};
pub use loop_runner::LoopRunner;
pub use model::{SendResponse, StreamEvent, TaskSnapshot, WireMessage};
pub use remote_tool::RemoteAgentTools;
pub use runner::{ResumeRequest, RunnerError, TurnEvents, TurnRequest, TurnRunner};
pub use server::{
    A2aServer, A2aServerBuilder, ANONYMOUS, API_KEY_HEADER, AgentCardConfig, AgentSkill,
    AuthConfig, DEFAULT_MAX_BODY_BYTES, DEFAULT_RECOVERY_SCAN, EXTENSIONS_HEADER,
    PUSH_TOKEN_HEADER, PushSettings, REST_PATH, TOOL_PROGRESS_EXTENSION,
};
pub use version::{ProtocolVersion, VERSION_HEADER};
pub use wire::SendRequest;
