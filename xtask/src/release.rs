//! `cargo xtask release --dry-run`: everything short of publishing.
//!
//! 1. `cargo publish --dry-run` of every publishable crate, in dependency
//!    order (cargo packages each one, builds it from the package, and
//!    resolves the workspace crates it depends on from the packages made
//!    before it, as crates.io would after the real publish);
//! 2. a semver check against the last release tag (`v*`) with
//!    cargo-semver-checks, when it is installed and a tag exists.
//!
//! `--no-verify` skips the build of each package (quicker, checks only the
//! manifests and the file lists).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::util::run as sh;
use crate::util::{cmd, have, root};

/// Runs the dry run.
pub(crate) fn run(args: &[&str]) -> Result<()> {
    if !args.contains(&"--dry-run") {
        bail!("only `cargo xtask release --dry-run` is supported: publishing is done by a person");
    }
    let order = publish_order()?;
    eprintln!("[xtask] publish order: {}", order.join(" -> "));
    let mut publish = vec!["publish", "--dry-run", "--allow-dirty", "--locked"];
    if args.contains(&"--no-verify") {
        publish.push("--no-verify");
    }
    for krate in &order {
        publish.extend(["-p", krate.as_str()]);
    }
    sh(cmd("cargo", &publish))?;
    semver_check()?;
    eprintln!("[xtask] release dry run passed");
    Ok(())
}

/// The publishable workspace crates, each after the workspace crates it
/// depends on (dev-dependencies aside: they do not order a publish).
fn publish_order() -> Result<Vec<String>> {
    let out = Command::new("cargo")
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(root())
        .output()
        .context("could not run cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: Value = serde_json::from_slice(&out.stdout).context("cargo metadata's JSON")?;
    let packages = meta["packages"].as_array().context("no packages")?;
    // `publish: []` means never published; `null` means anywhere.
    let publishable: BTreeSet<&str> = packages
        .iter()
        .filter(|p| p["publish"].as_array().is_none_or(|r| !r.is_empty()))
        .filter_map(|p| p["name"].as_str())
        .collect();
    let mut deps: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for p in packages {
        let Some(name) = p["name"].as_str().filter(|n| publishable.contains(n)) else {
            continue;
        };
        let entry = deps.entry(name).or_default();
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let dep = d["name"].as_str().unwrap_or_default();
            if d["kind"].as_str() != Some("dev") && publishable.contains(dep) {
                entry.insert(dep);
            }
        }
    }
    let mut order = Vec::new();
    while !deps.is_empty() {
        let ready: Vec<&str> = deps
            .iter()
            .filter(|(_, d)| d.iter().all(|x| order.iter().any(|o: &String| o == x)))
            .map(|(n, _)| *n)
            .collect();
        if ready.is_empty() {
            bail!("the workspace crates depend on each other in a cycle: {deps:?}");
        }
        for n in ready {
            deps.remove(n);
            order.push(n.to_owned());
        }
    }
    Ok(order)
}

/// `cargo semver-checks` against the last `v*` tag. Skipped, saying so,
/// when the tool is missing (it is a long build: `cargo install --locked
/// cargo-semver-checks`) or no release was tagged yet (nothing to compare).
fn semver_check() -> Result<()> {
    let tag = Command::new("git")
        .args(["describe", "--tags", "--abbrev=0", "--match", "v*"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match (have("cargo-semver-checks"), tag) {
        (true, Some(tag)) => sh(cmd(
            "cargo",
            &["semver-checks", "--workspace", "--baseline-rev", &tag],
        )),
        (false, _) => {
            eprintln!(
                "[xtask] semver check SKIPPED: cargo-semver-checks is not installed \
                 (`cargo install --locked cargo-semver-checks`)"
            );
            Ok(())
        }
        (true, None) => {
            eprintln!("[xtask] semver check SKIPPED: no release tag (v*) to compare with");
            Ok(())
        }
    }
}
