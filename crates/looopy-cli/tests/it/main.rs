//! The integration tests of `looopy-cli`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../answer_chunks.rs"]
mod answer_chunks;
#[path = "../approval.rs"]
mod approval;
#[path = "../artifacts.rs"]
mod artifacts;
#[path = "../binary.rs"]
mod binary;
#[path = "../bindings.rs"]
mod bindings;
#[path = "../chat.rs"]
mod chat;
#[path = "../chat_sub_agent.rs"]
mod chat_sub_agent;
#[path = "../chat_tty.rs"]
mod chat_tty;
#[path = "../defaults.rs"]
mod defaults;
#[path = "../elicitation.rs"]
mod elicitation;
#[path = "../eval.rs"]
mod eval;
#[path = "../fallback.rs"]
mod fallback;
#[path = "../frozen_store.rs"]
mod frozen_store;
#[path = "../mcp_references.rs"]
mod mcp_references;
#[path = "../mcp_sampling.rs"]
mod mcp_sampling;
#[path = "../mcp_server.rs"]
mod mcp_server;
#[path = "../otlp_export.rs"]
mod otlp_export;
#[path = "../otlp_protocols.rs"]
mod otlp_protocols;
#[path = "../postgres_restart.rs"]
mod postgres_restart;
#[path = "../providers.rs"]
mod providers;
#[path = "../python_sdk.rs"]
mod python_sdk;
#[path = "../records.rs"]
mod records;
#[path = "../recovery.rs"]
mod recovery;
#[path = "../replay.rs"]
mod replay;
#[path = "../retention.rs"]
mod retention;
#[path = "../serve_providers.rs"]
mod serve_providers;
#[path = "../sqlite_recovery.rs"]
mod sqlite_recovery;
#[path = "../sqlite_store.rs"]
mod sqlite_store;
#[path = "../support/mod.rs"]
mod support;
#[path = "../terminal.rs"]
mod terminal;
#[path = "../trace.rs"]
mod trace;
#[path = "../web_markdown.rs"]
mod web_markdown;
#[path = "../web_page.rs"]
mod web_page;
