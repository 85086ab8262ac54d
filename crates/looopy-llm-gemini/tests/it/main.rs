//! The integration tests of `looopy-llm-gemini`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../conformance.rs"]
mod conformance;
#[path = "../gemini.rs"]
mod gemini;
