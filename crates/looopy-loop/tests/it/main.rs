//! The integration tests of `looopy-loop`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../batching.rs"]
mod batching;
#[path = "../cache.rs"]
mod cache;
#[path = "../context.rs"]
mod context;
#[path = "../deps.rs"]
mod deps;
#[path = "../fallback.rs"]
mod fallback;
#[path = "../hooks.rs"]
mod hooks;
#[path = "../internal_events.rs"]
mod internal_events;
#[path = "../layers.rs"]
mod layers;
#[path = "../limits.rs"]
mod limits;
#[path = "../resume.rs"]
mod resume;
#[path = "../resume_answers.rs"]
mod resume_answers;
#[path = "../spans.rs"]
mod spans;
#[path = "../support/mod.rs"]
mod support;
#[path = "../tool_deltas.rs"]
mod tool_deltas;
#[path = "../tool_listing.rs"]
mod tool_listing;
#[path = "../tool_output.rs"]
mod tool_output;
#[path = "../turn.rs"]
mod turn;
#[path = "../wrap_up.rs"]
mod wrap_up;
