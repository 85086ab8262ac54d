//! The integration tests of `looopy-eval`, linked as one binary: each
//! module is a file of `tests/`.

#[path = "../replay.rs"]
mod replay;
