//! Project tasks, run as `cargo xtask <task>`:
//!
//! - `ci`: provisioning, format check, clippy (`-D warnings`), each optional
//!   feature built alone, unused dependencies (cargo-machete), every test and
//!   doc test, and `cargo deny check licenses bans sources`. The README's test
//!   command; `.ci/run` calls it.
//! - `bench`: the benchmark suite; writes `docs/benchmarks.md` and `docs/benchmarks.json`.
//! - `release --dry-run`: `cargo publish --dry-run` of every publishable
//!   crate in dependency order, and a semver check against the last release
//!   tag when cargo-semver-checks is installed.
//! - `deny-advisories`: `cargo deny check advisories` (needs the advisory database online).
//! - `provision`: only the provisioning step of `ci`.
//! - `graph [--check]`: writes (or checks) the crate graph block of
//!   `docs/architecture.md` from `cargo metadata`; `ci` runs the check.
//! - `seams [--walk]`: counts import circles between files, public items per
//!   crate, metadata keys read across crates and the files one streamed
//!   token passes through (`docs/architecture.md`, "Seams, counted").

mod bench;
mod ci;
mod features;
mod graph;
mod postgres;
mod redis;
mod release;
mod seams;
mod util;

use anyhow::{Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci::run(&rest),
        Some("bench") => bench::run(&rest),
        Some("release") => release::run(&rest),
        Some("deny-advisories") => ci::deny(&["advisories"]),
        Some("provision") => ci::provision(),
        Some("graph") => graph::run(&rest),
        Some("seams") => seams::run(&rest),
        Some("help") | Some("--help") | None => {
            println!(
                "usage: cargo xtask <ci | bench | release --dry-run | deny-advisories | provision | graph [--check] | seams [--walk]>"
            );
            Ok(())
        }
        Some(other) => bail!("unknown task '{other}' (try `cargo xtask help`)"),
    }
}
