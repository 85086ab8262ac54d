//! Feature checks of `cargo xtask ci`: each optional part builds alone, and
//! no crate declares a dependency it does not use.

use anyhow::Result;

use crate::util::run as sh;
use crate::util::{cmd, have};

/// `(crate, feature)` pairs built with `--no-default-features --features
/// <feature>`: every part a user can pick on its own. An empty feature
/// builds the crate with no optional part at all.
const ALONE: &[(&str, &str)] = &[
    ("looopy", ""),
    ("looopy", "openai"),
    ("looopy", "gemini"),
    ("looopy", "anthropic"),
    ("looopy", "redis"),
    ("looopy", "postgres"),
    ("looopy", "mcp"),
    ("looopy", "mcp-oauth"),
    ("looopy", "a2a-server"),
    ("looopy", "a2a-client"),
    ("looopy", "otel"),
    ("looopy-a2a", "server"),
    ("looopy-a2a", "client"),
    ("looopy-stores", "memory"),
    ("looopy-stores", "redis"),
    ("looopy-stores", "postgres"),
    ("looopy-blobs", ""),
    ("looopy-blobs", "fs"),
    ("looopy-blobs", "s3"),
    ("looopy-tools", ""),
    ("looopy-tools", "mcp-oauth"),
    ("looopy-llm-litellm", ""),
];

/// Clippy (warnings denied) on each crate with each feature alone.
pub(crate) fn each_alone() -> Result<()> {
    for (krate, feature) in ALONE {
        let mut args = vec!["clippy", "-p", krate, "--locked", "--no-default-features"];
        if !feature.is_empty() {
            args.extend(["--features", feature]);
        }
        args.extend(["--", "-D", "warnings"]);
        sh(cmd("cargo", &args))?;
    }
    Ok(())
}

/// `cargo machete`: dependencies declared but never used, installing the
/// tool when missing (it reads the sources, so it needs no build).
pub(crate) fn unused_dependencies() -> Result<()> {
    if !have("cargo-machete") {
        eprintln!("[xtask] installing cargo-machete (once per machine)");
        sh(cmd("cargo", &["install", "--locked", "cargo-machete"]))?;
    }
    // The binary itself, not `cargo machete`: under `cargo xtask` the
    // environment carries CARGO_PKG_NAME, which makes cargo-machete take the
    // subcommand's name for a path to analyse.
    sh(cmd("cargo-machete", &[]))
}
