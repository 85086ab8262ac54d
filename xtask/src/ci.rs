//! `cargo xtask ci`, `deny-advisories` (`release --dry-run` is in `release.rs`).

use anyhow::Result;

use crate::postgres::PostgresServer;
use crate::redis::{RedisCluster, RedisServer};
use crate::util::run as sh;
use crate::util::{cmd, have};

/// The node URLs (comma-separated) of the test Redis Cluster.
const CLUSTER_URLS_ENV: &str = "LOOOPY_TEST_REDIS_CLUSTER_URLS";

/// Installs what the tests need (idempotent): Redis, PostgreSQL, the Python and npm test servers.
pub(crate) fn provision() -> Result<()> {
    if std::env::var_os("LOOOPY_SKIP_PROVISION").is_some() {
        eprintln!("[xtask] LOOOPY_SKIP_PROVISION set: not provisioning");
        return Ok(());
    }
    sh(cmd("bash", &["scripts/provision.sh"]))
}

/// The whole check, as CI runs it.
pub(crate) fn run(args: &[&str]) -> Result<()> {
    let skip_deny = args.contains(&"--no-deny");
    provision()?;
    sh(cmd("cargo", &["fmt", "--all", "--", "--check"]))?;
    // The crate graph drawn in docs/architecture.md is the manifests' own.
    crate::graph::check()?;
    sh(cmd(
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    ))?;

    // No workspace crate turns on the S3 blob store yet: its code and
    // tests are linted (and below, tested against moto) on their own.
    sh(cmd(
        "cargo",
        &[
            "clippy",
            "-p",
            "looopy-blobs",
            "--all-features",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    ))?;

    // Each optional part builds on its own, and no dependency is unused.
    crate::features::each_alone()?;
    crate::features::unused_dependencies()?;

    // The gRPC binding needs no step of its own: `looopy-cli` turns on
    // `looopy-a2a/grpc` by default, so the workspace builds, lints and tests
    // (`protocol_grpc`, `bindings`) include it. Likewise the OAuth client of
    // MCP servers: `looopy-cli` turns on `looopy-tools/mcp-oauth` by default,
    // so the workspace tests include `mcp_oauth`.

    // One Redis for the whole run unless the caller brought one; tests use
    // unique key prefixes, so they share it safely.
    let _redis = match std::env::var("LOOOPY_TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => None,
        _ => Some(RedisServer::start()?),
    };
    // Likewise one Redis Cluster (three masters) for the cluster tests;
    // stopped when dropped, on failure too.
    let _cluster = match std::env::var(CLUSTER_URLS_ENV) {
        Ok(urls) if !urls.is_empty() => None,
        _ => Some(RedisCluster::start()?),
    };
    // One PostgreSQL for the whole run; tests write in schemas of their own.
    let _postgres = match std::env::var("LOOOPY_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => None,
        _ => Some(PostgresServer::start()?),
    };
    let mut test = cmd(
        "cargo",
        &["test", "--workspace", "--locked", "--no-fail-fast"],
    );
    if let Some(server) = &_redis {
        test.env("LOOOPY_TEST_REDIS_URL", &server.url);
    }
    if let Some(server) = &_postgres {
        test.env("LOOOPY_TEST_POSTGRES_URL", &server.url);
    }
    if let Some(cluster) = &_cluster {
        test.env(CLUSTER_URLS_ENV, &cluster.urls);
    }
    sh(test)?;
    sh(cmd(
        "cargo",
        &["test", "-p", "looopy-blobs", "--all-features", "--locked"],
    ))?;

    if skip_deny {
        eprintln!("[xtask] --no-deny: skipping cargo deny");
    } else {
        deny(&["licenses", "bans", "sources"])?;
    }
    eprintln!("[xtask] ci: all checks passed");
    Ok(())
}

/// `cargo deny check <checks>`, installing cargo-deny when missing.
pub(crate) fn deny(checks: &[&str]) -> Result<()> {
    if !have("cargo-deny") {
        eprintln!("[xtask] installing cargo-deny (once per machine)");
        sh(cmd("cargo", &["install", "--locked", "cargo-deny"]))?;
    }
    let mut args = vec!["deny", "--all-features", "check"];
    args.extend_from_slice(checks);
    sh(cmd("cargo", &args))
}
