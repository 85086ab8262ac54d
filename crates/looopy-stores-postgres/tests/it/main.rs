//! The integration tests of `looopy-stores-postgres`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../checkpoint_on_history.rs"]
mod checkpoint_on_history;
#[path = "../conformance.rs"]
mod conformance;
#[path = "../faults.rs"]
mod faults;
#[path = "../follow.rs"]
mod follow;
#[path = "../migrations.rs"]
mod migrations;
#[path = "../retention.rs"]
mod retention;
#[path = "../roundtrips.rs"]
mod roundtrips;
#[path = "../support/mod.rs"]
mod support;
#[path = "../turn_atomic.rs"]
mod turn_atomic;
