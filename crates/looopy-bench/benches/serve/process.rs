//! Child processes of the serving benches: each is this bench binary with
//! `BENCH_ROLE` set, prints a line with its URL, and stops when its stdin
//! closes.
#![allow(dead_code, reason = "each bench uses part of it")]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Completes when the parent closes our stdin (how every child is stopped).
pub(crate) async fn wait_for_stdin_close() {
    let _ = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
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

/// Stops a child: closes its stdin, then kills it (open keep-alive
/// connections would hold a graceful shutdown).
pub(crate) fn stop(mut child: Child) {
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
}
