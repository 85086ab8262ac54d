//! Child processes of the serving benches: each is this bench binary with
//! `BENCH_ROLE` set, prints a line with its URL, and stops when its stdin
//! closes.
#![allow(dead_code, reason = "each bench uses part of it")]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Ends the process when the parent closes our stdin (how every child is
/// stopped). It exits at once rather than shutting down gracefully (open
/// keep-alive connections would hold a graceful shutdown), but through
/// `exit`, so that a profiler running the child (valgrind) writes its data.
pub(crate) async fn exit_when_stdin_closes() {
    let _ = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        std::process::exit(0);
    })
    .await;
}

/// Starts a child with this role; its process and the first URL it printed.
/// The caller ends it with [`stop`].
#[allow(
    clippy::zombie_processes,
    reason = "the caller waits for the child in stop()"
)]
pub(crate) fn spawn(role: &str, envs: &[(&str, String)]) -> (Child, String) {
    let mut child = Command::new(std::env::current_exe().expect("current exe"))
        .env("BENCH_ROLE", role)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a child process");
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    loop {
        line.clear();
        let read = out.read_line(&mut line).expect("child stdout");
        assert!(read > 0, "{role} printed no URL");
        if let Some(at) = line.find("http://") {
            let url = line[at..].trim().to_owned();
            // Keep reading (and dropping) its stdout so it never blocks on a full pipe.
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            return (child, url);
        }
    }
}

/// Resident memory of a process now, in MiB (`VmRSS`); 0 when unreadable.
pub(crate) fn rss_mb_of(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Stops a child: closes its stdin, gives it up to `BENCH_STOP_GRACE_MS`
/// (default 2,000 ms; a child under valgrind needs more) to exit, then kills it.
pub(crate) fn stop(mut child: Child) {
    drop(child.stdin.take());
    let grace = std::env::var("BENCH_STOP_GRACE_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(2_000);
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(grace);
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
}
