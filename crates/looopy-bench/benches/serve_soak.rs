//! Bounded memory under a long run: 100,000 A2A
//! streaming turns (each a new conversation, the peer workload of
//! `serve_e2e`) against `looopy serve` on the memory store, 100 clients at
//! once, with the server's resident memory read every 10,000 turns. Run
//! twice in one go: with the memory store capped (`max_entries`) and with
//! no cap (`max_entries = 0`, what the stores did before retention).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "serve/client.rs"]
mod client;
#[path = "serve/looopy.rs"]
mod looopy;
#[path = "serve/process.rs"]
mod process;
#[path = "serve/workload.rs"]
mod workload;

use looopy_bench::{Case, comment};
use process::{rss_mb_of, spawn};

/// The allocator `looopy serve` runs with (see `looopy_bench::Allocator`).
#[global_allocator]
static GLOBAL: looopy_bench::Allocator = looopy_bench::Allocator;

const BENCH: &str = "serve_soak";
const CONCURRENCY: usize = 100;
const STEPS: usize = 10;
/// The cap of the bounded run: small enough that the run passes it many
/// times over.
const CAP: usize = 2_000;

fn turns() -> usize {
    std::env::var("BENCH_SOAK_TURNS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(100_000)
}

/// Runs the soak against one server; the RSS after each step, in MiB, and turns/s.
async fn soak(base: &str, max_entries: usize) -> (Vec<f64>, f64) {
    let store = format!("[store]\nbackend = \"memory\"\nmax_entries = {max_entries}\n");
    let (child, url) = spawn(
        "looopy",
        &[("BENCH_MOCK", base.to_owned()), ("BENCH_TOML", store)],
    );
    let url = format!("{url}/");
    let pid = child.id();
    let client = reqwest::Client::new();
    let per_step = turns() / STEPS;
    let mut rss = Vec::with_capacity(STEPS);
    let started = std::time::Instant::now();
    for _ in 0..STEPS {
        client::drive(&client, &url, CONCURRENCY, per_step).await;
        rss.push(rss_mb_of(pid));
    }
    let turns_per_s = (per_step * STEPS) as f64 / started.elapsed().as_secs_f64();
    process::stop(child);
    (rss, turns_per_s)
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
    let (mock, base) = spawn("mock", &[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let total = turns();
    rt.block_on(async {
        for (label, cap) in [
            (format!("memory store capped at {CAP} entries"), CAP),
            ("memory store without a cap".to_owned(), 0),
        ] {
            let (rss, tps) = soak(&base, cap).await;
            let step = total / STEPS;
            // Growth after warm-up: from the second step's RSS to the last.
            let warm = rss.get(1).copied().unwrap_or(0.0);
            let last = rss.last().copied().unwrap_or(0.0);
            let growth = if warm > 0.0 { last / warm - 1.0 } else { 0.0 };
            let series: Vec<String> = rss.iter().map(|r| format!("{r:.0}")).collect();
            let mut case = Case::new(BENCH, format!("{total} turns, {label}"), "MB")
                .median_p99(warm, last)
                .num("turns", total as f64)
                .num("max_entries", cap as f64)
                .num("turns_per_s", tps)
                .num("growth_after_warmup", growth);
            for (i, r) in rss.iter().enumerate() {
                case = case.num(&format!("rss_mb_after_{}", (i + 1) * step), *r);
            }
            case.notes(format!(
                "server RSS every {step} turns: {} MB; {:+.0}% from {} to {total} turns; {tps:.0} turns/s",
                series.join(" / "),
                growth * 100.0,
                2 * step
            ))
            .print();
        }
    });
    process::stop(mock);
    comment(&format!(
        "median: the server's resident memory after {} turns (warm-up), p99 column: after the last. Each turn is a new conversation from one of {CONCURRENCY} concurrent A2A 1.0 streaming clients against `looopy serve` (memory store, the serve_e2e workload and mock). Capped: `[store] max_entries = {CAP}` (each memory store keeps the {CAP} most recently used conversations or tasks). Without a cap every conversation, checkpoint, event log and task record stays, so memory grows with the turns served. Budget (docs/performance.md): RSS flat after warm-up.",
        2 * (total / STEPS)
    ));
}
