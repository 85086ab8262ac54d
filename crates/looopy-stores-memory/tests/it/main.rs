//! The integration tests of `looopy-stores-memory`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../cache.rs"]
mod cache;
#[path = "../conformance.rs"]
mod conformance;
#[path = "../retention.rs"]
mod retention;
