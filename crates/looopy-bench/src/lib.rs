#![forbid(unsafe_code)]
//! # looopy-bench
//!
//! Benchmarks of scale, the A2A server and Redis, as `harness = false` bench
//! binaries run by `cargo xtask bench`:
//!
//! - `sessions_scale`: 10,000 concurrent sessions (each its own `Agent`)
//!   against a model that answers in 100 ms: wall time against the ideal,
//!   memory per live session;
//! - `a2a_stream`: the A2A server on loopback: time to the first SSE event
//!   (v1.0 `SendStreamingMessage`, v0.3 `message/stream`) and events per
//!   second to 1,000 concurrent streaming clients;
//! - `redis_roundtrips`: Redis round trips and added latency per loop
//!   iteration (checkpoints) and per Agent turn (message appends).
//! - `serve_e2e`: `looopy serve` end to end under 1 to 1,000 concurrent
//!   A2A streaming clients, next to a bare axum + reqwest floor and the
//!   official `a2a-server-lf` peer.
//! - `store_roundtrips`: an Agent turn on SQLite, PostgreSQL and Redis side
//!   by side: latency, round trips, statements, write transactions;
//! - `sqlite_soak`: `looopy serve` on SQLite with retention over many
//!   turns: the database file, its write-ahead log and RSS.
//! - `ownership`: what turn ownership (the Redis turn lease and the
//!   registry of running turns) costs per Agent turn, before and after,
//!   and how long after a process dies another one takes its turn over.
//!
//! This library holds what they share: reading CPU time and memory from
//! `/proc`, percentiles, and the JSON line every measured case prints.

use std::time::Duration;

/// The global allocator of the bench binaries: the one the `looopy` binary
/// installs (mimalloc 2.x without transparent huge pages), so that the
/// figures are those of the server as shipped. With thousands of turns in
/// flight on a multi-threaded runtime, memory is freed on another thread
/// than the one that took it, where glibc's malloc contends on its arena
/// locks (`docs/performance.md`, design decisions).
pub use mimalloc::MiMalloc as Allocator;

use serde_json::{Map, Value};

/// Clock ticks per second of `/proc/<pid>/stat` times (`sysconf(_SC_CLK_TCK)`,
/// 100 on every Linux this runs on).
const TICKS_PER_SECOND: f64 = 100.0;

/// User + system CPU seconds of a process (`None`: this one), from
/// `/proc/<pid>/stat`; 0 when it cannot be read.
pub fn cpu_seconds(pid: Option<u32>) -> f64 {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (field(11) + field(12)) / TICKS_PER_SECOND
}

/// User + system CPU seconds of a process (`None`: this one) at nanosecond
/// precision: the sum of `se.sum_exec_runtime` over its threads
/// (`/proc/<pid>/task/*/sched`), whose times are not rounded to clock
/// ticks as [`cpu_seconds`]'s are. Threads that already exited are not
/// counted, so read it around work done by long-lived threads (a tokio
/// runtime's workers). Falls back to [`cpu_seconds`] when the kernel does
/// not expose the file.
pub fn cpu_seconds_fine(pid: Option<u32>) -> f64 {
    let dir = match pid {
        Some(pid) => format!("/proc/{pid}/task"),
        None => "/proc/self/task".to_owned(),
    };
    let Ok(tasks) = std::fs::read_dir(dir) else {
        return cpu_seconds(pid);
    };
    let mut total_ms = 0.0;
    let mut found = false;
    for task in tasks.flatten() {
        let Ok(sched) = std::fs::read_to_string(task.path().join("sched")) else {
            continue;
        };
        if let Some(ms) = sched
            .lines()
            .find(|l| l.starts_with("se.sum_exec_runtime"))
            .and_then(|l| l.split(':').nth(1)?.trim().parse::<f64>().ok())
        {
            total_ms += ms;
            found = true;
        }
    }
    if found {
        total_ms / 1e3
    } else {
        cpu_seconds(pid)
    }
}

fn status_kb(key: &str) -> u64 {
    status_kb_of("/proc/self/status", key)
}

fn status_kb_of(path: &str, key: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0)
}

/// Resident memory of this process now, in KiB (`VmRSS`).
pub fn rss_kb() -> u64 {
    status_kb("VmRSS:")
}

/// Peak resident memory of this process, in KiB (`VmHWM`), since it started
/// or since the last [`reset_peak_rss`].
pub fn peak_rss_kb() -> u64 {
    status_kb("VmHWM:")
}

/// Peak resident memory of another process, in KiB (`VmHWM` of
/// `/proc/<pid>/status`); 0 when it cannot be read.
pub fn peak_rss_kb_of(pid: u32) -> u64 {
    status_kb_of(&format!("/proc/{pid}/status"), "VmHWM:")
}

/// Resets the peak that [`peak_rss_kb`] reports to the current RSS
/// (`echo 5 > /proc/self/clear_refs`). Returns whether the kernel took it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Rounds of a bench that compares runs within each round: `BENCH_ROUNDS`,
/// else `default`; at least one.
pub fn rounds(default: usize) -> usize {
    std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
        .max(1)
}

/// The `p` quantile (0..=1) of sorted samples, nearest rank; zero when empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p.clamp(0.0, 1.0)).round() as usize;
    sorted[i]
}

/// The median of `values` (the mean of the middle two when their number
/// is even); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A duration in microseconds.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Rounds to three decimals (JSON figures stay readable).
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// One measured case: the JSON line `cargo xtask bench` reads (`bench`,
/// `case`, `unit`, `median`, `p99`, `notes`, plus extra numeric fields).
#[derive(Debug, Clone)]
pub struct Case {
    fields: Map<String, Value>,
}

impl Case {
    /// A case of `bench` named `case`, whose median and p99 are in `unit`.
    pub fn new(bench: &str, case: impl Into<String>, unit: &str) -> Self {
        let mut fields = Map::new();
        fields.insert("bench".into(), bench.into());
        fields.insert("case".into(), Value::String(case.into()));
        fields.insert("unit".into(), unit.into());
        Case { fields }
    }

    /// Sets the median and p99 (in the case's unit).
    pub fn median_p99(self, median: f64, p99: f64) -> Self {
        self.num("median", median).num("p99", p99)
    }

    /// Adds a numeric field.
    pub fn num(mut self, key: &str, value: f64) -> Self {
        let value = serde_json::Number::from_f64(round3(value))
            .map(Value::Number)
            .unwrap_or(Value::Null);
        self.fields.insert(key.into(), value);
        self
    }

    /// Adds numeric fields, in order.
    pub fn nums<'a>(self, fields: impl IntoIterator<Item = (&'a str, f64)>) -> Self {
        fields
            .into_iter()
            .fold(self, |case, (key, value)| case.num(key, value))
    }

    /// Sets the notes shown in the table.
    pub fn notes(mut self, notes: impl Into<String>) -> Self {
        self.fields
            .insert("notes".into(), Value::String(notes.into()));
        self
    }

    /// The JSON line.
    pub fn line(&self) -> String {
        Value::Object(self.fields.clone()).to_string()
    }

    /// Prints the JSON line on stdout.
    pub fn print(&self) {
        println!("{}", self.line());
    }
}

/// Prints a comment line (`# ...`) that `cargo xtask bench` copies under
/// the table.
pub fn comment(text: &str) {
    println!("# {text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn percentile_takes_the_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 0.5), Duration::from_millis(51));
        assert_eq!(percentile(&samples, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn a_case_is_one_json_line_with_the_fields_xtask_reads() {
        let line = Case::new("b", "c", "ms")
            .median_p99(1.23456, 2.0)
            .num("extra", 3.0)
            .notes("n")
            .line();
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        assert_eq!(v["case"], "c");
        assert_eq!(v["unit"], "ms");
        assert_eq!(v["median"], 1.235);
        assert_eq!(v["extra"], 3.0);
        assert_eq!(v["notes"], "n");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn this_process_has_memory_and_cpu_figures() {
        assert!(rss_kb() > 0);
        assert!(peak_rss_kb() >= rss_kb() / 2);
        assert!(peak_rss_kb_of(std::process::id()) >= rss_kb() / 2);
        assert!(cpu_seconds(None) >= 0.0);
    }

    #[test]
    fn fine_cpu_time_grows_with_work() {
        let before = cpu_seconds_fine(None);
        let mut x = 0u64;
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(cpu_seconds_fine(None) > before);
    }
}
