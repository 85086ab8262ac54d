//! `cargo xtask bench`: runs every benchmark binary, collects the JSON lines
//! they print (one object per measured case) and writes `docs/benchmarks.json`
//! and `docs/benchmarks.md`.

use std::fmt::Write as _;
use std::process::Stdio;

use anyhow::{Context, Result, bail};

use crate::util::{cmd, root};

/// The benchmark binaries: (package, bench target, what it measures).
const BENCHES: &[(&str, &str, &str)] = &[
    (
        "looopy-loop",
        "loop_overhead",
        "Loop overhead per iteration with an in-process scripted model (LLM and tools excluded)",
    ),
    (
        "looopy-llm-litellm",
        "turn_throughput",
        "Whole turns (three model calls, four tool calls) over HTTP against a fast OpenAI-compatible mock in another process, 1,000 turns per case, next to a bare reqwest loop sending the same requests",
    ),
    (
        "looopy-bench",
        "sessions_scale",
        "Concurrent sessions, each its own Agent on shared in-memory stores, one turn each against a model that answers in 100 ms: wall time against the ideal, memory per live session, CPU per turn",
    ),
    (
        "looopy-bench",
        "a2a_stream",
        "The A2A server (Agent runner, in-memory stores) in a child process on loopback: time from request to first SSE event for both protocol versions, and events per second to 1,000 concurrent streaming clients",
    ),
    (
        "looopy-bench",
        "redis_roundtrips",
        "Redis round trips and added latency: loop checkpoints (RedisTaskStateStore) per iteration, and whole Agent turns with every store in Redis, at history 10, 100 and 1000, on a private redis-server",
    ),
];

fn machine() -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_owned())
        })
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| format!("{:.1} GiB", kb as f64 / 1024.0 / 1024.0))
        .unwrap_or_else(|| "unknown".into());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cores} cores ({cpu}), {mem} memory")
}

pub(crate) fn run(args: &[&str]) -> Result<()> {
    let only = args.first().copied();
    let mut results: Vec<Row> = Vec::new();
    let mut md = String::new();
    writeln!(md, "# Benchmarks\n")?;
    writeln!(
        md,
        "Written by `cargo xtask bench` (do not edit by hand). Machine: {}.\n",
        machine()
    )?;
    for (package, bench, about) in BENCHES {
        if only.is_some_and(|o| o != *bench) {
            continue;
        }
        let out = cmd(
            "cargo",
            &["bench", "--quiet", "-p", package, "--bench", bench],
        )
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running bench {bench}"))?;
        if !out.status.success() {
            bail!("bench {bench} failed");
        }
        let text = String::from_utf8_lossy(&out.stdout);
        writeln!(md, "## {bench}\n\n{about}.\n")?;
        let mut table_started = false;
        for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
            let row =
                Row::parse(line).with_context(|| format!("bad JSON line from {bench}: {line}"))?;
            if !table_started {
                writeln!(md, "| case | median | p99 | notes |\n|---|---|---|---|")?;
                table_started = true;
            }
            writeln!(
                md,
                "| {} | {} | {} | {} |",
                row.case, row.median, row.p99, row.notes
            )?;
            results.push(row);
        }
        for line in text.lines().filter(|l| l.starts_with("# ")) {
            writeln!(md, "\n{}", &line[2..])?;
        }
        writeln!(md)?;
    }
    let raw: Vec<&serde_json::Value> = results.iter().map(|r| &r.raw).collect();
    let json = serde_json::to_string_pretty(&raw)? + "\n";
    std::fs::write(root().join("docs/benchmarks.json"), json)?;
    std::fs::write(root().join("docs/benchmarks.md"), md)?;
    eprintln!("[xtask] wrote docs/benchmarks.md and docs/benchmarks.json");
    Ok(())
}

/// One measured case, as a bench binary printed it.
struct Row {
    raw: serde_json::Value,
    case: String,
    median: String,
    p99: String,
    notes: String,
}

impl Row {
    fn parse(line: &str) -> Result<Row> {
        let raw: serde_json::Value = serde_json::from_str(line)?;
        let text = |k: &str| raw.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let case = text("case").context("no \"case\" field")?;
        let unit = text("unit").unwrap_or_else(|| "µs".into());
        let num = |k: &str| {
            raw.get(k)
                .and_then(|v| v.as_f64())
                .map(|v| format!("{v:.2} {unit}"))
                .unwrap_or_else(|| "–".into())
        };
        Ok(Row {
            case,
            median: num("median"),
            p99: num("p99"),
            notes: text("notes").unwrap_or_default(),
            raw,
        })
    }
}
