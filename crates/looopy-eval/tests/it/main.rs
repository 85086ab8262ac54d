//! The integration tests of `looopy-eval`, one binary.

#[path = "../dataset_runs.rs"]
mod dataset_runs;
