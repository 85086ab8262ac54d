//! The integration tests of `looopy-stores-redis`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../cache.rs"]
mod cache;
#[path = "../checkpoint_on_history.rs"]
mod checkpoint_on_history;
#[path = "../checkpoints.rs"]
mod checkpoints;
#[path = "../cluster.rs"]
mod cluster;
#[path = "../conformance.rs"]
mod conformance;
#[path = "../crash_resume.rs"]
mod crash_resume;
#[path = "../follow.rs"]
mod follow;
#[path = "../listing.rs"]
mod listing;
#[path = "../locks.rs"]
mod locks;
#[path = "../outage.rs"]
mod outage;
#[path = "../support/mod.rs"]
mod support;
#[path = "../ttl.rs"]
mod ttl;
