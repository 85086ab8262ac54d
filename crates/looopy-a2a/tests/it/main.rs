//! The integration tests of `looopy-a2a`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../auth.rs"]
mod auth;
#[path = "../cancel.rs"]
mod cancel;
#[path = "../client.rs"]
mod client;
#[path = "../errors.rs"]
mod errors;
#[path = "../handover.rs"]
mod handover;
#[path = "../multi_turn.rs"]
mod multi_turn;
#[path = "../protocol_conformance.rs"]
mod protocol_conformance;
#[path = "../protocol_grpc.rs"]
mod protocol_grpc;
#[path = "../protocol_rest.rs"]
mod protocol_rest;
#[path = "../protocol_v03.rs"]
mod protocol_v03;
#[path = "../protocol_v1.rs"]
mod protocol_v1;
#[path = "../push.rs"]
mod push;
#[path = "../python_interop.rs"]
mod python_interop;
#[path = "../redis_stores.rs"]
mod redis_stores;
#[path = "../remote_tool.rs"]
mod remote_tool;
#[path = "../resubscribe.rs"]
mod resubscribe;
#[path = "../shutdown.rs"]
mod shutdown;
#[path = "../shutdown_tools.rs"]
mod shutdown_tools;
#[path = "../store_outage.rs"]
mod store_outage;
#[path = "../stores_bundle.rs"]
mod stores_bundle;
#[path = "../sub_agent_credentials.rs"]
mod sub_agent_credentials;
#[path = "../sub_agent_events.rs"]
mod sub_agent_events;
#[path = "../support/mod.rs"]
mod support;
#[path = "../tool_call_deltas.rs"]
mod tool_call_deltas;
#[path = "../tool_progress.rs"]
mod tool_progress;
#[path = "../turn_metadata.rs"]
mod turn_metadata;
#[path = "../web_ui.rs"]
mod web_ui;
