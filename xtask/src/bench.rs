//! `cargo xtask bench`: runs every benchmark binary, collects the JSON lines
//! they print (one object per measured case) and writes `docs/benchmarks.json`
//! and `docs/benchmarks.md`.
//!
//! `cargo xtask bench <name>` runs one of them and replaces only its section
//! and its rows: the other benches' figures stay as the last run left them.

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
        "looopy-bench",
        "turn_throughput",
        "Whole turns (three model calls, four tool calls) over HTTP against a fast OpenAI-compatible mock in another process, 1,000 turns per run, next to a bare reqwest loop sending the same requests in alternated rounds, with whole answers and with streamed ones",
    ),
    (
        "looopy-bench",
        "provider_decode",
        "Decode cost per streamed chunk of each model provider, side by side in one run: chat completions, the Responses API, Anthropic Messages and Gemini, each streaming 2,000 text deltas of its vendor's SSE form from an in-process fixture; time and CPU per chunk, and the ratio of each to the chat-completions provider",
    ),
    (
        "looopy-bench",
        "sessions_scale",
        "Concurrent sessions, each its own Agent (made from one AgentTemplate, as looopy serve makes them) on shared in-memory stores, one turn each against a model that answers in 100 ms: wall time against the ideal, memory per live session, CPU per turn",
    ),
    (
        "looopy-bench",
        "a2a_stream",
        "The A2A server (Agent runner, in-memory stores) in a child process on loopback: time from request to first SSE event for both protocol versions, and events per second to 1,000 concurrent streaming clients",
    ),
    (
        "looopy-bench",
        "serve_e2e",
        "`looopy serve` end to end: A2A 1.0 streaming turns from 1, 100 and 1,000 concurrent clients, each turn three streamed model calls and four local Rust tools against a fast OpenAI-compatible mock in its own process; beside it in the same run `looopy serve` with a memory store keeping few conversations, the library path (`AgentLoop` + `LiteLlmProvider` in an axum SSE handler), looopy's A2A server running that loop without the Agent (`A2aServer` + `LoopRunner`), a floor (an axum SSE handler running a bare reqwest loop, same events) and a peer (the official a2a-server-lf crate hosting the same loop): turns/s, first SSE event, server CPU per turn, server peak RSS",
    ),
    (
        "looopy-bench",
        "serve_providers",
        "What each model provider costs `looopy serve` on the peer workload, side by side in one run: A2A 1.0 streaming turns from 1 and 100 concurrent clients, each turn three streamed model calls and four local Rust tools, with the chat-completions provider, the Responses API, Anthropic Messages and Gemini, each against a fast mock of its vendor's SSE form in its own process: turns/s, first SSE event, server CPU per turn, server peak RSS, and each provider's CPU per turn against the chat-completions provider's",
    ),
    (
        "looopy-bench",
        "serve_soak",
        "Bounded memory: 100,000 A2A streaming turns, each a new conversation, against `looopy serve` on the memory store from 100 concurrent clients, the server's RSS read every 10,000 turns; with the memory store capped (`[store] max_entries`) and without a cap",
    ),
    (
        "looopy-bench",
        "sqlite_soak",
        "Bounded disk and memory on SQLite: A2A streaming turns (100,000 by default, `BENCH_SOAK_TURNS`), each a new conversation, against `looopy serve` on its SQLite store with retention (30 s TTLs, a prune every 5 s) from 100 concurrent clients; the database file, its write-ahead log and the server's RSS after each tenth of the run",
    ),
    (
        "looopy-bench",
        "redis_roundtrips",
        "Redis round trips and added latency: loop checkpoints (RedisCheckpointStore) per iteration, and whole Agent turns with every store in Redis, at history 10, 100 and 1000, on a private redis-server",
    ),
    (
        "looopy-bench",
        "store_roundtrips",
        "What the durable stores cost an Agent turn, side by side in one run: SQLite (a temporary file), PostgreSQL (a private server) and Redis (a private redis-server), each bundle with its turn store, at history 10 and 1,000, the answer at once or after one tool call: per-turn latency against the memory stores, round trips (PostgreSQL, Redis) and statements (PostgreSQL) counted by TCP proxies, write transactions on SQLite",
    ),
    (
        "looopy-bench",
        "ownership",
        "Turn ownership on Redis, on a private redis-server: an Agent turn without a turn lock (before) and with RedisTurnLock (after: the lease and the registry of running turns), with round trips, commands and CPU per turn; one lease renewal and one registry scan; and the takeover latency after repeated kills of a process in the middle of a turn",
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
    if let Some(only) = only
        && !BENCHES.iter().any(|(_, bench, _)| *bench == only)
    {
        let names: Vec<&str> = BENCHES.iter().map(|(_, bench, _)| *bench).collect();
        bail!("no bench named {only} (benches: {})", names.join(", "));
    }
    let md_path = root().join("docs/benchmarks.md");
    let json_path = root().join("docs/benchmarks.json");
    // What the last run wrote, kept for the benches not run now.
    let old_md = std::fs::read_to_string(&md_path).unwrap_or_default();
    let old_sections = sections(&old_md);
    let old_rows: Vec<serde_json::Value> = std::fs::read_to_string(&json_path)
        .ok()
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default();

    let mut rows: Vec<serde_json::Value> = Vec::new();
    let mut md = String::new();
    writeln!(md, "# Benchmarks\n")?;
    // A run of one bench keeps the page's machine line (it describes the
    // other sections) and names its own machine in its section.
    let kept_header = only.and_then(|_| {
        old_md
            .lines()
            .find(|l| l.starts_with("Written by `cargo xtask bench`"))
    });
    match kept_header {
        Some(line) => writeln!(md, "{line}\n")?,
        None => writeln!(
            md,
            "Written by `cargo xtask bench` (do not edit by hand). Machine: {}.\n",
            machine()
        )?,
    }
    for (package, bench, about) in BENCHES {
        if only.is_some_and(|o| o != *bench) {
            if let Some(kept) = old_sections.get(*bench) {
                md.push_str(kept);
            }
            rows.extend(
                old_rows
                    .iter()
                    .filter(|r| r.get("bench").and_then(|b| b.as_str()) == Some(*bench))
                    .cloned(),
            );
            continue;
        }
        let (mut section, measured) = run_one(package, bench, about)?;
        if kept_header.is_some() {
            writeln!(
                section,
                "Run on its own (`cargo xtask bench {bench}`) on {}.\n",
                machine()
            )?;
        }
        md.push_str(&section);
        rows.extend(measured.into_iter().map(|r| r.raw));
    }
    let json = serde_json::to_string_pretty(&rows)? + "\n";
    std::fs::write(json_path, json)?;
    std::fs::write(md_path, md)?;
    eprintln!("[xtask] wrote docs/benchmarks.md and docs/benchmarks.json");
    Ok(())
}

/// Runs one bench binary; its section of `docs/benchmarks.md` and its rows.
fn run_one(package: &str, bench: &str, about: &str) -> Result<(String, Vec<Row>)> {
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
    let mut md = String::new();
    let mut results = Vec::new();
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
    Ok((md, results))
}

/// The `## <bench>` sections of a `docs/benchmarks.md`, by bench name, each
/// from its heading to the next one.
fn sections(md: &str) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    let mut starts: Vec<usize> = md.match_indices("\n## ").map(|(i, _)| i + 1).collect();
    if md.starts_with("## ") {
        starts.insert(0, 0);
    }
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(md.len());
        let section = &md[start..end];
        let name = section[3..].lines().next().unwrap_or("").trim().to_owned();
        out.insert(name, section.to_owned());
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_split_a_written_page_by_bench() {
        let md = "# Benchmarks\n\nMachine.\n\n## a\n\nabout a.\n\n| case |\n\nnote a\n\n## b\n\nabout b.\n\n";
        let s = sections(md);
        assert_eq!(s.len(), 2);
        assert_eq!(s["a"], "## a\n\nabout a.\n\n| case |\n\nnote a\n\n");
        assert_eq!(s["b"], "## b\n\nabout b.\n\n");
    }
}
