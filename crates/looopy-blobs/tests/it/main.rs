//! The integration tests of `looopy-blobs`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../config.rs"]
mod config;
#[path = "../filesystem.rs"]
mod filesystem;
#[cfg(feature = "s3")]
#[path = "../s3.rs"]
mod s3;
