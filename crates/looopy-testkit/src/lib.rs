#![forbid(unsafe_code)]
//! # looopy-testkit
//!
//! What Looopy's own tests use, and what users can use to test their agents:
//!
//! - [`ScriptedLlm`]: a model that answers from a script (responses, streamed
//!   chunks, errors, delays) and records every request it got.
//! - [`conformance`]: the suite every store implementation must pass
//!   (`conformance::run_all`).
//! - [`provider_conformance`]: the suite every model provider must pass,
//!   against an in-process fixture scripted in its vendor's wire form
//!   (`provider_conformance::run_all`).
//! - [`OpenAiFixture`]: an in-process OpenAI-compatible HTTP server that plays
//!   scripted answers (JSON, SSE streams, errors, garbage) and records requests;
//!   [`anthropic_fixture`] builds Anthropic's shapes for it.
//! - [`RedisServer`] / [`test_redis`]: a throw-away `redis-server` on a free
//!   port (killed on drop), or the shared one named by
//!   `LOOOPY_TEST_REDIS_URL`.
//! - [`PostgresServer`] / [`test_postgres`]: a throw-away PostgreSQL cluster
//!   on a free port (stopped and removed on drop), or the shared one named
//!   by `LOOOPY_TEST_POSTGRES_URL`.
//! - [`MotoServer`]: a throw-away S3-compatible server (PyPI `moto[server]`)
//!   on a free port, killed on drop, for the blob store's tests.
//! - `SpanCapture` (feature `otel`): the spans a test produced, exported to
//!   memory through tracing-opentelemetry.
//! - [`aimock::Aimock`]: `@copilotkit/aimock`'s mock LLM server on a free
//!   port (OpenAI chat and Responses, Anthropic and Gemini wire formats).
//! - [`events`]: reading a turn's events (the one final event, its
//!   metadata, the kinds in order).
//! - [`external`]: finding the provisioned external programs (or failing
//!   with how to provision them), and running a browser script against
//!   the provisioned Chromium.

pub mod aimock;
pub mod anthropic_fixture;
pub mod checkpoints;
pub mod conformance;
pub mod events;
pub mod external;
pub mod moto_server;
pub mod openai_fixture;
pub mod postgres_server;
pub mod provider_conformance;
pub mod redis_cluster;
pub mod redis_server;
mod scripted;
#[cfg(feature = "otel")]
mod spans;

pub use moto_server::MotoServer;
pub use openai_fixture::{
    FixtureReply, OpenAiFixture, RecordedRequest, SseEnd, SseEvent, SseReply,
};
pub use postgres_server::{
    PostgresServer, TestPostgres, own_postgres, own_postgres_or_skip, test_postgres,
    test_postgres_or_skip,
};
pub use redis_server::{RedisServer, TestRedis, test_redis};
pub use scripted::{ScriptStep, ScriptedLlm};
#[cfg(feature = "otel")]
pub use spans::{SpanCapture, attribute};
