#![forbid(unsafe_code)]
//! # looopy-testkit
//!
//! What Looopy's own tests use, and what users can use to test their agents:
//!
//! - [`ScriptedLlm`]: a model that answers from a script (responses, streamed
//!   chunks, errors, delays) and records every request it got.
//! - [`conformance`]: the suite every store implementation must pass
//!   (`conformance::run_all`).

pub mod conformance;
mod scripted;

pub use scripted::{ScriptStep, ScriptedLlm};
