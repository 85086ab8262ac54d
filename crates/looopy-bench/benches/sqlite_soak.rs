//! Bounded disk and memory under a long run on SQLite: A2A streaming
//! turns (each a new conversation, the workload of `serve_soak`) against
//! `looopy serve` on its SQLite store with retention (ended conversations
//! and tasks go `TTL_SECS` after their last write, checkpoints too; the
//! prune runs every `PRUNE_SECS`), 100 clients at once. After each tenth
//! of the run: the database file's size, its write-ahead log's, and the
//! server's resident memory.
//!
//! `BENCH_SOAK_TURNS` sets the number of turns (default 100,000, what
//! `cargo xtask bench sqlite_soak` runs).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "serve/client.rs"]
mod client;
#[path = "serve/looopy.rs"]
mod looopy;
#[path = "serve/process.rs"]
mod process;
#[path = "serve/workload.rs"]
mod workload;

use std::path::{Path, PathBuf};
use std::time::Instant;

use looopy_bench::{Case, comment};
use process::{rss_mb_of, spawn};

/// The allocator `looopy serve` runs with (see `looopy_bench::Allocator`).
#[global_allocator]
static GLOBAL: looopy_bench::Allocator = looopy_bench::Allocator;

const BENCH: &str = "sqlite_soak";
const CONCURRENCY: usize = 100;
const STEPS: usize = 10;
/// How long an ended conversation, a task and a checkpoint are kept.
const TTL_SECS: u64 = 30;
/// How often the prune runs.
const PRUNE_SECS: u64 = 5;

fn turns() -> usize {
    std::env::var("BENCH_SOAK_TURNS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(100_000)
}

fn size_mb(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / 1024.0 / 1024.0)
}

/// One reading after a step.
struct Reading {
    turns: usize,
    secs: f64,
    rss_mb: f64,
    db_mb: f64,
    wal_mb: f64,
}

/// A fresh directory for the database, removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn main() {
    match std::env::var("BENCH_ROLE").as_deref() {
        Ok("mock") => return workload::run_mock(),
        Ok("looopy") => {
            let base = std::env::var("BENCH_MOCK").expect("BENCH_MOCK");
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .unwrap();
            return rt.block_on(looopy::serve(&base));
        }
        Ok(other) => panic!("unknown role {other}"),
        Err(_) => {}
    }
    let dir =
        TempDir(std::env::temp_dir().join(format!("looopy-sqlite-soak-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let db = dir.0.join("looopy.db");
    let wal = dir.0.join("looopy.db-wal");
    let (mock, base) = spawn("mock", &[]);
    let store = format!(
        "[store]\nbackend = \"sqlite\"\npath = \"{}\"\nttl_secs = {TTL_SECS}\ntask_ttl_secs = {TTL_SECS}\nprune_interval_secs = {PRUNE_SECS}\n",
        db.display()
    );
    let (server, url) = spawn(
        "looopy",
        &[("BENCH_MOCK", base.clone()), ("BENCH_TOML", store)],
    );
    let url = format!("{url}/");
    let pid = server.id();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let total = turns();
    let per_step = total / STEPS;
    let readings = rt.block_on(async {
        let client = reqwest::Client::new();
        let started = Instant::now();
        let mut readings = Vec::with_capacity(STEPS);
        for step in 1..=STEPS {
            client::drive(&client, &url, CONCURRENCY, per_step).await;
            readings.push(Reading {
                turns: step * per_step,
                secs: started.elapsed().as_secs_f64(),
                rss_mb: rss_mb_of(pid),
                db_mb: size_mb(&db),
                wal_mb: size_mb(&wal),
            });
        }
        readings
    });
    process::stop(server);
    process::stop(mock);
    let last = readings.last().expect("a reading");
    let tps = last.turns as f64 / last.secs;
    // Growth after warm-up: from the second reading to the last.
    let growth = |f: fn(&Reading) -> f64| {
        let warm = f(&readings[1.min(readings.len() - 1)]);
        if warm > 0.0 {
            f(last) / warm - 1.0
        } else {
            0.0
        }
    };
    let series = |f: fn(&Reading) -> f64| {
        readings
            .iter()
            .map(|r| format!("{:.0}", f(r)))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    for (what, f) in [
        (
            "server RSS",
            (|r: &Reading| r.rss_mb) as fn(&Reading) -> f64,
        ),
        ("database file", |r: &Reading| r.db_mb),
        ("write-ahead log", |r: &Reading| r.wal_mb),
    ] {
        let mut case = Case::new(
            BENCH,
            format!("{} turns on SQLite, {what}", last.turns),
            "MB",
        )
        .median_p99(f(&readings[1.min(readings.len() - 1)]), f(last))
        .num("turns", last.turns as f64)
        .num("turns_per_s", tps)
        .num("ttl_secs", TTL_SECS as f64)
        .num("growth_after_warmup", growth(f));
        for r in &readings {
            case = case
                .num(&format!("mb_after_{}", r.turns), f(r))
                .num(&format!("secs_at_{}", r.turns), r.secs);
        }
        case.notes(format!(
            "{what} every {per_step} turns: {} MB; {:+.0}% from {} to {} turns; {tps:.0} turns/s over {:.0} s",
            series(f),
            growth(f) * 100.0,
            2 * per_step,
            last.turns,
            last.secs,
        ))
        .print();
    }
    comment(&format!(
        "median: after {} turns (warm-up), p99 column: after the last. Each turn is a new conversation from one of {CONCURRENCY} concurrent A2A 1.0 streaming clients against `looopy serve` on SQLite (`[store] backend = \"sqlite\"`, WAL mode, `ttl_secs = task_ttl_secs = {TTL_SECS}`, `prune_interval_secs = {PRUNE_SECS}`), the serve_e2e workload and mock. Retention deletes a conversation's rows {TTL_SECS} s after its last write; SQLite reuses the freed pages, so the file stops growing once as many conversations end per second as are pruned; the write-ahead log is checkpointed back into the file as it reaches SQLite's default of 1,000 pages. Budget (docs/performance.md): database file and RSS flat after warm-up.",
        2 * per_step
    ));
}
