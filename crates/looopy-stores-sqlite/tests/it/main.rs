//! The integration tests of `looopy-stores-sqlite`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../checkpoint_on_history.rs"]
mod checkpoint_on_history;
#[path = "../conformance.rs"]
mod conformance;
#[path = "../retention.rs"]
mod retention;
#[path = "../schema.rs"]
mod schema;
#[path = "../takeover.rs"]
mod takeover;
