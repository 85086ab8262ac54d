//! The serving path end to end: `looopy serve` in a
//! child process, driven over A2A 1.0 `SendStreamingMessage` by 1, 100 and
//! 1,000 concurrent clients, each turn the peer workload (three streamed
//! model calls, four local Rust tools) against a fast OpenAI-compatible
//! mock in a process of its own. Beside it, in the same run and on the
//! same mock:
//!
//! - the floor: an axum SSE handler running a bare reqwest loop for the
//!   same workload and streaming as many events per turn;
//! - the peer: the official Rust A2A server crate (`a2a-server-lf`)
//!   hosting the same bare loop;
//! - the library path (`AgentLoop` in an axum SSE handler) and the A2A
//!   server without the Agent (`A2aServer` + `LoopRunner`), which split
//!   what `looopy serve` adds to the loop between its A2A server and its
//!   Agent.
//!
//! Each server runs in a fresh child process per case (this binary with
//! `BENCH_ROLE`), so that its CPU time and peak RSS are its own.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "serve/a2a_loop.rs"]
mod a2a_loop;
#[path = "serve/client.rs"]
mod client;
#[path = "serve/floor.rs"]
mod floor;
#[path = "serve/library.rs"]
mod library;
#[path = "serve/looopy.rs"]
mod looopy;
#[path = "serve/peer.rs"]
mod peer;
#[path = "serve/process.rs"]
mod process;
#[path = "serve/sse_turn.rs"]
mod sse_turn;
#[path = "serve/workload.rs"]
mod workload;

use std::io::Write;
use std::time::Duration;

use looopy_bench::{Case, comment, cpu_seconds_fine, median, ms, peak_rss_kb_of, percentile};

/// The allocator `looopy serve` runs with (see `looopy_bench::Allocator`).
#[global_allocator]
static GLOBAL: looopy_bench::Allocator = looopy_bench::Allocator;

const BENCH: &str = "serve_e2e";
const CONCURRENCY: [usize; 3] = [1, 100, 1000];

use process::{exit_when_stdin_closes, spawn};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Server {
    Looopy,
    /// `looopy serve` with `[records] enabled = false`: what the execution
    /// records cost.
    LooopyNoRecords,
    /// `looopy serve` with a memory store that keeps few conversations.
    LooopyFewKept,
    Library,
    /// looopy's A2A server running the library path's loop, no Agent.
    A2aLoop,
    Floor,
    Peer,
}

/// Conversations (and tasks) each memory store keeps in the
/// [`Server::LooopyFewKept`] case: few against the 2,000 to 3,200 turns of
/// a case, so that its memory is the server's rather than the
/// conversations'; but twice the turns in flight, since a cap below them
/// evicts running tasks' logs from under their streams.
fn few_kept(concurrency: usize) -> usize {
    (2 * concurrency).max(200)
}

impl Server {
    const ALL: [Server; 7] = [
        Server::Looopy,
        Server::LooopyNoRecords,
        Server::LooopyFewKept,
        Server::Library,
        Server::A2aLoop,
        Server::Floor,
        Server::Peer,
    ];

    fn role(self) -> &'static str {
        match self {
            Server::Looopy => "looopy",
            Server::LooopyNoRecords => "looopy-no-records",
            Server::LooopyFewKept => "looopy-few-kept",
            Server::Library => "library",
            Server::A2aLoop => "a2a-loop",
            Server::Floor => "floor",
            Server::Peer => "peer",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Server::Looopy => "looopy serve",
            Server::LooopyNoRecords => "looopy serve, execution records off",
            Server::LooopyFewKept => "looopy serve, memory store keeping few conversations",
            Server::Library => "library path (axum SSE + AgentLoop + LiteLlmProvider)",
            Server::A2aLoop => "A2A server without the Agent (A2aServer + LoopRunner + AgentLoop)",
            Server::Floor => "floor (axum SSE + bare reqwest loop)",
            Server::Peer => "peer (a2a-server-lf + bare reqwest loop)",
        }
    }
}

/// Serves the floor's or the peer's router on an ephemeral port with
/// TCP_NODELAY (as `looopy serve` does), until stdin closes.
async fn serve_router(router: axum::Router) {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("http://{}", listener.local_addr().unwrap());
    std::io::stdout().flush().unwrap();
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(exit_when_stdin_closes())
        .await
        .unwrap();
}

fn run_server(role: &str) {
    let base = std::env::var("BENCH_MOCK").expect("BENCH_MOCK");
    let events: usize = std::env::var("BENCH_EVENTS")
        .ok()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        match role {
            "looopy" | "looopy-no-records" | "looopy-few-kept" => looopy::serve(&base).await,
            "library" => serve_router(library::router(&base, events)).await,
            "a2a-loop" => serve_router(a2a_loop::router(&base)).await,
            "floor" => serve_router(floor::router(&base, events)).await,
            "peer" => serve_router(peer::router(&base, events)).await,
            other => panic!("unknown role {other}"),
        }
    });
}

/// What one server did at one concurrency.
struct Measured {
    turns_per_s: f64,
    first_p50_ms: f64,
    first_p99_ms: f64,
    cpu_ms_per_turn: f64,
    peak_rss_mb: f64,
    events_per_turn: f64,
}

/// Rounds of every server at each concurrency (`BENCH_ROUNDS`): a figure
/// is the median of its rounds, a ratio the median of the ratios within
/// each round (the same minute of the machine's load). A round of 2,000
/// turns at concurrency 100 lasts well under a second, and this kind of VM
/// moves a ratio by 0.1-0.3 between rounds: five make the median steadier.
const ROUNDS: usize = 5;

/// The servers a row is compared with, each round against the same round.
#[derive(Clone, Copy)]
struct Baselines<'a> {
    floor: Option<&'a [Measured]>,
    library: Option<&'a [Measured]>,
    peer: Option<&'a [Measured]>,
    /// `looopy serve` with records off: only the records-on row has it.
    no_records: Option<&'a [Measured]>,
}

/// Prints one server's row: medians over its rounds, ratios taken within
/// each round against the floor's turns/s and peak RSS, the library
/// path's CPU and the peer's turns/s (NaN or 1 where those did not run).
fn report(label: &str, concurrency: usize, rounds: usize, runs: &[Measured], base: Baselines<'_>) {
    let Baselines {
        floor,
        library,
        peer,
        no_records,
    } = base;
    let per_round = |f: &dyn Fn(&Measured, usize) -> f64| -> Vec<f64> {
        runs.iter().enumerate().map(|(r, m)| f(m, r)).collect()
    };
    // A figure of each round against the same figure of `base` in that
    // round (`missing` where `base` did not run).
    let against = |base: Option<&[Measured]>, missing: f64, figure: fn(&Measured) -> f64| {
        per_round(&|m, r| base.map_or(missing, |b| figure(m) / figure(&b[r])))
    };
    let ratios = against(floor, 1.0, |m| m.turns_per_s);
    let ratio = median(&ratios);
    let (low, high) = ratios
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
            (l.min(*x), h.max(*x))
        });
    let cpu_ratio = median(&against(library, f64::NAN, |m| m.cpu_ms_per_turn));
    let records_ratio = median(&against(no_records, f64::NAN, |m| m.cpu_ms_per_turn));
    let versus_no_records = no_records
        .map(|_| format!(", {records_ratio:.3}x records off"))
        .unwrap_or_default();
    let rss_ratio = median(&against(floor, 1.0, |m| m.peak_rss_mb));
    // The budget says "ahead of the peer": how often, not only the median.
    let peer_ratios = against(peer, f64::NAN, |m| m.turns_per_s);
    let peer_ratio = median(&peer_ratios);
    let ahead = peer_ratios.iter().filter(|x| **x > 1.0).count();
    let versus_peer = peer
        .map(|_| format!("; {peer_ratio:.2}x the peer, ahead in {ahead} of {rounds} rounds"))
        .unwrap_or_default();
    let turns_per_s = median(&per_round(&|m, _| m.turns_per_s));
    let cpu = median(&per_round(&|m, _| m.cpu_ms_per_turn));
    let rss = median(&per_round(&|m, _| m.peak_rss_mb));
    let events = median(&per_round(&|m, _| m.events_per_turn));
    Case::new(BENCH, format!("{label}, concurrency {concurrency}"), "ms")
        .median_p99(
            median(&per_round(&|m, _| m.first_p50_ms)),
            median(&per_round(&|m, _| m.first_p99_ms)),
        )
        .num("concurrency", concurrency as f64)
        .num("turns", turns_for(concurrency) as f64)
        .num("rounds", rounds as f64)
        .num("turns_per_s", turns_per_s)
        .num("ratio_to_floor", ratio)
        .num("ratio_to_floor_min", low)
        .num("ratio_to_floor_max", high)
        .num("server_cpu_ms_per_turn", cpu)
        .num("server_peak_rss_mb", rss)
        .num("cpu_ratio_to_library", cpu_ratio)
        .num("cpu_ratio_records_on_to_off", records_ratio)
        .num("peak_rss_ratio_to_floor", rss_ratio)
        .num("ratio_to_peer", peer_ratio)
        .num("rounds_ahead_of_peer", ahead as f64)
        .num("events_per_turn", events)
        .notes(format!(
            "{turns_per_s:.0} turns/s ({ratio:.2}x the floor, {low:.2}-{high:.2} over {rounds} rounds{versus_peer}), server CPU {cpu:.3} ms/turn ({cpu_ratio:.2}x the library path's{versus_no_records}), peak RSS {rss:.0} MB ({rss_ratio:.2}x the floor), {events:.0} events/turn"
        ))
        .print();
}

fn turns_for(concurrency: usize) -> usize {
    // BENCH_TURNS makes a longer run, for profiling one server.
    if let Some(turns) = std::env::var("BENCH_TURNS")
        .ok()
        .and_then(|t| t.parse().ok())
    {
        return turns;
    }
    match concurrency {
        1 => 300,
        100 => 2000,
        _ => 3000,
    }
}

async fn measure(server: Server, base: &str, events: &mut usize, concurrency: usize) -> Measured {
    let mut envs = vec![
        ("BENCH_MOCK", base.to_owned()),
        ("BENCH_EVENTS", events.to_string()),
    ];
    if server == Server::LooopyNoRecords {
        envs.push(("BENCH_TOML", "[records]\nenabled = false\n".to_owned()));
    }
    if server == Server::LooopyFewKept {
        envs.push((
            "BENCH_TOML",
            format!(
                "[store]\nbackend = \"memory\"\nmax_entries = {}\n",
                few_kept(concurrency)
            ),
        ));
    }
    let (child, url) = spawn(server.role(), &envs);
    let url = format!("{url}/");
    let pid = child.id();
    let client = reqwest::Client::new();
    let (_, warm) = client::drive(&client, &url, concurrency.min(50), 200).await;
    if server == Server::Looopy && *events == 0 {
        *events = warm.iter().map(|s| s.events).max().unwrap_or(0);
    }
    let turns = turns_for(concurrency);
    let cpu0 = cpu_seconds_fine(Some(pid));
    let (wall, seen) = client::drive(&client, &url, concurrency, turns).await;
    let cpu = cpu_seconds_fine(Some(pid)) - cpu0;
    let peak_kb = peak_rss_kb_of(pid);
    process::stop(child);
    let mut first: Vec<Duration> = seen.iter().map(|s| s.first_event).collect();
    first.sort();
    Measured {
        turns_per_s: turns as f64 / wall.as_secs_f64(),
        first_p50_ms: ms(percentile(&first, 0.5)),
        first_p99_ms: ms(percentile(&first, 0.99)),
        cpu_ms_per_turn: cpu * 1e3 / turns as f64,
        peak_rss_mb: peak_kb as f64 / 1024.0,
        events_per_turn: seen.iter().map(|s| s.events).sum::<usize>() as f64 / turns as f64,
    }
}

fn main() {
    match std::env::var("BENCH_ROLE").as_deref() {
        Ok("mock") => return workload::run_mock(),
        Ok(role) => return run_server(role),
        Err(_) => {}
    }
    let (mock, base) = spawn("mock", &[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut events = 0;
    // For profiling one server: BENCH_ONLY=<role> (looopy, looopy-no-records,
    // looopy-few-kept, library, a2a-loop, floor, peer; several comma-separated),
    // BENCH_CONCURRENCY=100. Longer answers:
    // BENCH_ANSWER_CHUNKS=<n> (5 by default; the mock reads it).
    let only = std::env::var("BENCH_ONLY").ok();
    let levels: Vec<usize> = match std::env::var("BENCH_CONCURRENCY") {
        Ok(c) => vec![c.parse().expect("BENCH_CONCURRENCY is a number")],
        Err(_) => CONCURRENCY.to_vec(),
    };
    let rounds = looopy_bench::rounds(ROUNDS);
    rt.block_on(async {
        for concurrency in levels {
            let servers: Vec<Server> = Server::ALL
                .into_iter()
                .filter(|s| {
                    only.as_deref()
                        .is_none_or(|o| o.split(',').any(|o| o == s.role()))
                })
                .collect();
            // runs[i][r]: server i in round r. Each round starts one server
            // later than the one before, so that no server is always the
            // first one on a fresh mock (the first of a run varied most).
            let mut runs: Vec<Vec<Measured>> = servers.iter().map(|_| Vec::new()).collect();
            for round in 0..rounds {
                for k in 0..servers.len() {
                    let i = (k + round) % servers.len();
                    let m = measure(servers[i], &base, &mut events, concurrency).await;
                    runs[i].push(m);
                }
            }
            let of = |server: Server| servers.iter().position(|s| *s == server);
            let floor = of(Server::Floor);
            let library = of(Server::Library);
            let peer = of(Server::Peer);
            let no_records = of(Server::LooopyNoRecords);
            let base = Baselines {
                floor: floor.map(|f| &runs[f][..]),
                library: library.map(|l| &runs[l][..]),
                peer: peer.map(|p| &runs[p][..]),
                no_records: None,
            };
            for (i, server) in servers.iter().enumerate() {
                let label = match server {
                    Server::LooopyFewKept => {
                        format!("{} ({})", server.label(), few_kept(concurrency))
                    }
                    _ => server.label().to_owned(),
                };
                // The peer is not compared with itself.
                let base = match server {
                    Server::Peer => Baselines { peer: None, ..base },
                    Server::Looopy => Baselines {
                        no_records: no_records.map(|n| &runs[n][..]),
                        ..base
                    },
                    _ => base,
                };
                report(&label, concurrency, rounds, &runs[i], base);
            }
        }
    });
    process::stop(mock);
    comment(
        "median/p99: time from before the request to the first SSE event the client reads. Each row is a fresh server process (this bench binary with BENCH_ROLE): `looopy serve` is the binary's own `App` and `looopy_cli::serve::serve` (memory store, its looopy.toml defaults, telemetry at info to /dev/null) with two local Rust tools added to `App::tools`, once with its default memory store (which keeps every conversation of a case), once with `[records] enabled = false` (the records-on row's CPU per turn against it is the records' cost, within each round) and once with `[store] max_entries` at twice the clients, at least 200 (the figure in brackets); the library path is `AgentLoop` + `LiteLlmProvider` (default layers, streaming, the same tools) in an axum SSE handler writing the turn's public events; the A2A server without the Agent is looopy's `A2aServer` on the memory stores running that same loop through a `LoopRunner` (what looopy's A2A layer adds to the loop; `looopy serve` adds the Agent to it); the floor is an axum SSE handler running a bare reqwest loop; the peer is a2a-server-lf's DefaultRequestHandler and JSON-RPC router hosting the same bare loop. Every server streams its model calls from the same mock (a child process, one Tokio worker) and sends the same number of events per turn (looopy's: task, working, the answer's chunks, final). Each concurrency runs every server in 5 rounds (BENCH_ROUNDS), each round starting one server later than the one before; a row's figures are the medians of its rounds and its ratios the medians of the ratios within each round (the range of the turns/s ratio to the floor is in the notes, and in how many rounds the server's turns/s was above the peer's). Server CPU from /proc/<pid>/task/*/sched over the measured turns (warm-up excluded); peak RSS is the server's VmHWM over warm-up and measurement. Clients, servers and the mock share the machine's cores, so turns/s are compared as ratios within a round, not read as capacities. Budgets (docs/performance.md): looopy >= 0.8x the floor's turns/s at concurrency 100 and ahead of the peer; server CPU per turn <= 1.5x the library path's, and with records on <= 1.1x with them off; first SSE event p99 within 1.3x the floor's; the library path's peak RSS within 1.2x the floor's.",
    );
}
