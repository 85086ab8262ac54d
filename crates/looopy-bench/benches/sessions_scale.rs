//! Scale: many concurrent sessions, each its own
//! `looopy_agent::Agent` and conversation, on shared in-memory stores,
//! against a model that answers every call after 100 ms. The Agents are
//! made from one `AgentTemplate`, as `looopy serve` makes them (one case
//! builds each Agent on its own instead). Each session runs
//! one turn; with a tool call that is two model calls (ideal: 200 ms).
//!
//! Reported: wall time from the first turn started to the last one ended,
//! against the ideal; RSS before the sessions exist, with every session
//! alive and in the middle of its turn, at the peak and after; the memory
//! per live session; the CPU per turn. Each case runs in a child process of
//! its own so that memory figures do not carry over between cases.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use looopy_agent::{Agent, AgentBuilder};
use looopy_bench::{
    Case, comment, cpu_seconds, ms, peak_rss_kb, percentile, reset_peak_rss, rss_kb,
};
use looopy_core::store::Stores;
use looopy_core::{
    LlmError, LlmProvider, LlmRequest, LlmResponse, Message, Role, TaskState, ToolCall,
    ToolDefinition, ToolError, ToolProvider, ToolResult, TurnContext,
};

/// The allocator `looopy serve` runs with (see `looopy_bench::Allocator`).
#[global_allocator]
static GLOBAL: looopy_bench::Allocator = looopy_bench::Allocator;

const BENCH: &str = "sessions_scale";
const MODEL_DELAY: Duration = Duration::from_millis(100);

/// A model that takes `MODEL_DELAY` to answer: a call to `noop` when asked
/// to use tools and no tool has answered yet, otherwise a short text.
struct SlowModel {
    use_tool: bool,
    in_call: AtomicUsize,
    gate: Option<Gate>,
}

/// Holds every session's first model call until all of them are in it,
/// then reads the RSS (every session alive, in the middle of its turn) and
/// lets them go on.
struct Gate {
    target: usize,
    arrived: AtomicUsize,
    open: tokio::sync::watch::Sender<bool>,
    rss_kb: AtomicU64,
}

impl Gate {
    fn new(target: usize) -> Self {
        Gate {
            target,
            arrived: AtomicUsize::new(0),
            open: tokio::sync::watch::channel(false).0,
            rss_kb: AtomicU64::new(0),
        }
    }

    async fn pass(&self) {
        let mut open = self.open.subscribe();
        if self.arrived.fetch_add(1, Ordering::SeqCst) + 1 == self.target {
            self.rss_kb.store(rss_kb(), Ordering::SeqCst);
            self.open.send_replace(true);
        } else {
            let _ = open.wait_for(|o| *o).await;
        }
    }
}

#[async_trait]
impl LlmProvider for SlowModel {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let answered = request
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Tool);
        if let Some(gate) = &self.gate
            && !answered
        {
            gate.pass().await;
        }
        self.in_call.fetch_add(1, Ordering::Relaxed);
        let slept = tokio::select! {
            () = tokio::time::sleep(MODEL_DELAY) => true,
            () = cx.cancel.cancelled() => false,
        };
        self.in_call.fetch_sub(1, Ordering::Relaxed);
        if !slept {
            return Err(LlmError::Cancelled);
        }
        Ok(if self.use_tool && !answered {
            LlmResponse::tool_calls("", vec![ToolCall::new("c1", "noop", "{}")])
        } else {
            LlmResponse::text("done")
        })
    }

    fn provider_name(&self) -> &str {
        "bench"
    }

    fn model_name(&self) -> &str {
        "slow-100ms"
    }
}

struct NoopTools;

#[async_trait]
impl ToolProvider for NoopTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![ToolDefinition::without_parameters(
            "noop",
            "does nothing",
        )])
    }
    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        ToolResult::text(&call.id, "ok")
    }
    // Rust tools made once: listed once per loop, as a library user declares.
    fn tools_are_fixed(&self) -> bool {
        true
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Each session an Agent.
    Agent,
    /// The floor: what the runtime alone costs for the same shape (a task
    /// per session and one for its turn, the model's sleeps, the events
    /// over an unbounded channel), no Looopy at all.
    Floor,
}

#[derive(Clone, Copy)]
struct Spec {
    kind: Kind,
    sessions: usize,
    tool: bool,
    lock: bool,
    /// Hold every session in its first model call until all are there
    /// (for the memory figure; the wall time then means little).
    gate: bool,
    /// Each Agent built on its own (`AgentBuilder::build`: its own loop,
    /// layers and tool registry) rather than made from one template.
    alone: bool,
}

impl Spec {
    fn name(&self) -> String {
        let shape = if self.tool {
            "one tool call (2 model calls)"
        } else {
            "no tool (1 model call)"
        };
        match self.kind {
            Kind::Agent if self.gate => format!(
                "{} Agent sessions, {shape}, all held mid-turn (memory)",
                self.sessions
            ),
            Kind::Agent => format!(
                "{} Agent sessions, {shape}{}{}",
                self.sessions,
                if self.lock { ", turn lock" } else { "" },
                if self.alone {
                    ", each Agent built on its own"
                } else {
                    ""
                }
            ),
            Kind::Floor => format!(
                "floor: {} bare tokio tasks, same sleeps and events",
                self.sessions
            ),
        }
    }

    fn ideal(&self) -> Duration {
        MODEL_DELAY * if self.tool { 2 } else { 1 }
    }

    fn env(&self) -> String {
        format!(
            "{}:{}:{}:{}:{}:{}",
            self.kind == Kind::Floor,
            self.sessions,
            self.tool,
            self.lock,
            self.gate,
            self.alone
        )
    }

    fn parse(s: &str) -> Option<Spec> {
        let mut it = s.split(':');
        let floor: bool = it.next()?.parse().ok()?;
        Some(Spec {
            kind: if floor { Kind::Floor } else { Kind::Agent },
            sessions: it.next()?.parse().ok()?,
            tool: it.next()?.parse().ok()?,
            lock: it.next()?.parse().ok()?,
            gate: it.next()?.parse().ok()?,
            alone: it.next()?.parse().ok()?,
        })
    }
}

const fn agent(sessions: usize, tool: bool, lock: bool) -> Spec {
    Spec {
        kind: Kind::Agent,
        sessions,
        tool,
        lock,
        gate: false,
        alone: false,
    }
}

const SPECS: &[Spec] = &[
    agent(10_000, true, false),
    agent(10_000, false, false),
    agent(10_000, true, true),
    agent(1_000, true, false),
    Spec {
        kind: Kind::Agent,
        sessions: 10_000,
        tool: true,
        lock: false,
        gate: true,
        alone: false,
    },
    Spec {
        alone: true,
        ..agent(10_000, true, false)
    },
    Spec {
        kind: Kind::Floor,
        sessions: 10_000,
        tool: true,
        lock: false,
        gate: false,
        alone: false,
    },
];

/// Runs of each case (in fresh processes); the one with the median wall
/// time is reported (the machine is shared, so single runs are noisy).
const RUNS: usize = 3;

/// Events an Agent turn of the tool case sends (counted by the Agent cases).
const FLOOR_EVENTS: [usize; 3] = [5, 6, 6];

/// The floor's stand-in for an event: as large as an `AgentEvent`.
type FakeEvent = [u64; 7];

async fn run_floor(sessions: usize, live: &Arc<AtomicUsize>) -> (Vec<Duration>, usize) {
    let mut handles = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let live = live.clone();
        handles.push(tokio::spawn(async move {
            let started = Instant::now();
            live.fetch_add(1, Ordering::Relaxed);
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<FakeEvent>();
            tokio::spawn(async move {
                for (i, n) in FLOOR_EVENTS.into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(MODEL_DELAY).await;
                    }
                    for _ in 0..n {
                        let _ = tx.send([i as u64; 7]);
                    }
                }
            });
            let mut events = 0;
            while let Some(e) = rx.recv().await {
                std::hint::black_box(e);
                events += 1;
            }
            live.fetch_sub(1, Ordering::Relaxed);
            (started.elapsed(), events)
        }));
    }
    gather(handles).await
}

/// The settings of every session's Agent, for the conversation `context_id`
/// (empty for a template).
fn builder(
    context_id: String,
    spec: Spec,
    stores: &Stores,
    model: &Arc<SlowModel>,
    tools: &Arc<dyn ToolProvider>,
) -> AgentBuilder {
    let mut b = Agent::builder(context_id)
        .llm(model.clone())
        .system_prompt("Be brief.")
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .state_store(stores.agents.clone());
    if spec.tool {
        b = b.tools(tools.clone());
    }
    if spec.lock {
        b = b.turn_lock(stores.locks.clone());
    }
    b
}

/// The Agents of `sessions` conversations: made from one template, or
/// each built on its own (`spec.alone`).
fn make_agents(
    sessions: usize,
    spec: Spec,
    stores: &Stores,
    model: &Arc<SlowModel>,
    tools: &Arc<dyn ToolProvider>,
) -> Vec<Agent> {
    let context = |i| format!("ctx-{i}");
    if spec.alone {
        return (0..sessions)
            .map(|i| (builder(context(i), spec, stores, model, tools).build()).expect("agent"))
            .collect();
    }
    let template =
        (builder(String::new(), spec, stores, model, tools).template()).expect("template");
    (0..sessions)
        .map(|i| template.agent(&context(i)).expect("agent"))
        .collect()
}

/// Runs one turn per agent, all at once, reading every event as a server
/// forwarding them would. Returns the turn latencies and the events read.
async fn run_turns(agents: &[Agent], live: &Arc<AtomicUsize>) -> (Vec<Duration>, usize) {
    let mut handles = Vec::with_capacity(agents.len());
    for agent in agents {
        let agent = agent.clone();
        let live = live.clone();
        handles.push(tokio::spawn(async move {
            let started = Instant::now();
            live.fetch_add(1, Ordering::Relaxed);
            let mut turn = agent
                .execute_turn(Some(Message::user("go")), None)
                .await
                .expect("turn starts");
            let mut events = 0;
            let mut last = None;
            while let Some(event) = turn.next().await {
                events += 1;
                last = event.state();
            }
            live.fetch_sub(1, Ordering::Relaxed);
            assert_eq!(last, Some(TaskState::Completed), "the final event's state");
            (started.elapsed(), events)
        }));
    }
    gather(handles).await
}

/// Waits for every session task: their turn latencies, and the events they
/// read in all.
async fn gather(
    handles: Vec<tokio::task::JoinHandle<(Duration, usize)>>,
) -> (Vec<Duration>, usize) {
    let mut latencies = Vec::with_capacity(handles.len());
    let mut events = 0;
    for h in handles {
        let (latency, n) = h.await.expect("session task");
        latencies.push(latency);
        events += n;
    }
    (latencies, events)
}

/// Samples RSS every 2 ms on a thread of its own; keeps the largest RSS
/// seen while the most turns were in flight.
struct Sampler {
    stop: Arc<AtomicBool>,
    best: Arc<(AtomicUsize, AtomicU64)>,
    thread: std::thread::JoinHandle<()>,
}

impl Sampler {
    fn start(live: Arc<AtomicUsize>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let best = Arc::new((AtomicUsize::new(0), AtomicU64::new(0)));
        let (s, b) = (stop.clone(), best.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let n = live.load(Ordering::Relaxed);
                if n > 0 && n >= b.0.load(Ordering::Relaxed) {
                    let rss = rss_kb();
                    if n > b.0.load(Ordering::Relaxed) || rss > b.1.load(Ordering::Relaxed) {
                        b.0.store(n, Ordering::Relaxed);
                        b.1.store(rss, Ordering::Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        Sampler { stop, best, thread }
    }

    /// (most turns in flight at once, RSS then in KiB).
    fn finish(self) -> (usize, u64) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        (
            self.best.0.load(Ordering::Relaxed),
            self.best.1.load(Ordering::Relaxed),
        )
    }
}

fn run_case(spec: Spec) {
    assert_eq!(
        std::mem::size_of::<FakeEvent>(),
        std::mem::size_of::<looopy_core::AgentEvent>(),
        "the floor's events stand in for AgentEvents: keep their sizes equal"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let stores = looopy_stores_memory::stores();
        let model = Arc::new(SlowModel {
            use_tool: spec.tool,
            in_call: AtomicUsize::new(0),
            gate: spec.gate.then(|| Gate::new(spec.sessions)),
        });
        let warm_model = Arc::new(SlowModel {
            use_tool: spec.tool,
            in_call: AtomicUsize::new(0),
            gate: None,
        });
        let tools: Arc<dyn ToolProvider> = Arc::new(NoopTools);
        let live = Arc::new(AtomicUsize::new(0));

        let floor = spec.kind == Kind::Floor;
        // Warm up (allocator arenas, lazy statics, timer wheel), then forget it.
        if floor {
            run_floor(200, &live).await;
        } else {
            let warm = looopy_stores_memory::stores();
            let agents = make_agents(200, spec, &warm, &warm_model, &tools);
            run_turns(&agents, &live).await;
        }

        let before = rss_kb();
        reset_peak_rss();
        let t = Instant::now();
        let agents: Vec<Agent> = if floor {
            Vec::new()
        } else {
            make_agents(spec.sessions, spec, &stores, &model, &tools)
        };
        let build_time = t.elapsed();
        let created = rss_kb();

        let sampler = Sampler::start(live.clone());
        let cpu0 = cpu_seconds(None);
        let started = Instant::now();
        let (mut latencies, events) = if floor {
            run_floor(spec.sessions, &live).await
        } else {
            run_turns(&agents, &live).await
        };
        let wall = started.elapsed();
        let cpu = cpu_seconds(None) - cpu0;
        let (mut max_live, mut mid) = sampler.finish();
        if let Some(gate) = &model.gate {
            max_live = spec.sessions;
            mid = gate.rss_kb.load(Ordering::SeqCst);
        }
        let peak = peak_rss_kb();
        let after = rss_kb();
        assert_eq!(model.in_call.load(Ordering::Relaxed), 0);
        drop(agents);
        let after_drop = rss_kb();

        latencies.sort();
        let n = spec.sessions as f64;
        let ideal = spec.ideal();
        let ratio = wall.as_secs_f64() / ideal.as_secs_f64();
        let mb = |kb: u64| kb as f64 / 1024.0;
        let per_session_mid = mid.saturating_sub(before) as f64 / n;
        let per_session_peak = peak.saturating_sub(before) as f64 / n;
        let history_kb = after_drop.saturating_sub(before) as f64 / n;
        let cpu_us = cpu * 1e6 / n;
        Case::new(BENCH, spec.name(), "ms")
            .median_p99(ms(percentile(&latencies, 0.5)), ms(percentile(&latencies, 0.99)))
            .num("wall_ms", ms(wall))
            .num("ideal_ms", ms(ideal))
            .num("ratio_to_ideal", ratio)
            .num("rss_before_mb", mb(before))
            .num("rss_sessions_built_mb", mb(created))
            .num("rss_mid_turn_mb", mb(mid))
            .num("peak_rss_mb", mb(peak))
            .num("rss_after_mb", mb(after))
            .num("rss_after_drop_mb", mb(after_drop))
            .num("max_turns_in_flight", max_live as f64)
            .num("kb_per_session_mid_turn", per_session_mid)
            .num("kb_per_session_peak", per_session_peak)
            .num("kb_per_session_after_drop", history_kb)
            .num("cpu_us_per_turn", cpu_us)
            .num("events_per_turn", events as f64 / n)

            .num("build_us_per_session", build_time.as_secs_f64() * 1e6 / n)
            .notes(format!(
                "wall {:.0} ms = {ratio:.2}x the ideal {:.0} ms; RSS {:.0} MB before, {:.0} MB mid-turn ({max_live} turns in flight), {:.0} MB peak, {:.0} MB after: {per_session_mid:.1} KB/session mid-turn, {per_session_peak:.1} KB at the peak; {cpu_us:.0} µs CPU/turn",
                ms(wall),
                ms(ideal),
                mb(before),
                mb(mid),
                mb(peak),
                mb(after),
            ))
            .print();
    });
}

fn main() {
    if let Some(spec) = std::env::var("BENCH_CASE")
        .ok()
        .as_deref()
        .and_then(Spec::parse)
    {
        return run_case(spec);
    }
    for spec in SPECS {
        let mut runs: Vec<(f64, String)> = (0..RUNS)
            .map(|_| {
                let out = std::process::Command::new(std::env::current_exe().expect("exe"))
                    .env("BENCH_CASE", spec.env())
                    .stderr(std::process::Stdio::inherit())
                    .output()
                    .expect("run the case");
                assert!(out.status.success(), "case {} failed", spec.name());
                let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                let wall = serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .and_then(|v| v["wall_ms"].as_f64())
                    .expect("the case prints its wall time");
                (wall, line)
            })
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let walls: Vec<String> = runs.iter().map(|(w, _)| format!("{w:.0}")).collect();
        let (_, line) = &runs[runs.len() / 2];
        let mut value: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        if let Some(notes) = value["notes"].as_str() {
            value["notes"] = format!(
                "{notes} (median of {RUNS} runs, walls {} ms)",
                walls.join("/")
            )
            .into();
        }
        println!("{value}");
    }
    comment(
        "Median and p99 are per-session turn latencies (turn start to final event). Each case runs in fresh child processes (3 runs, the median wall reported): a 200-session warm-up, then RSS before the sessions are built, at the moment the most turns were in flight (sampled every 2 ms), the peak (VmHWM, reset before building) and after. In the \"all held mid-turn\" case every session's first model call waits until all 10,000 are in it, and the RSS is read at that moment (its wall time means nothing). KB/session = (RSS then - RSS before) / sessions, so the history of a session (2 to 4 short messages in the shared memory stores) is counted in. Stores: the memory message, artifact and agent state stores; \"turn lock\" adds MemoryTurnLock. The Agents are made from one AgentTemplate (AgentBuilder::template), as looopy serve makes the Agent of each conversation: they share the loop, its layers and its tool registry, listed at the first turn; \"each Agent built on its own\" builds every Agent with AgentBuilder::build instead, so each lists its tools at its turn. The floor case runs the same shape with no Looopy code: a task per session and one for its turn, the 100 ms sleeps, 17 events of 56 bytes (the size of an AgentEvent) over an unbounded channel. Tokio multi-thread runtime, one worker per core; mimalloc, the allocator of the looopy binary, for every case. Budget (docs/performance.md): within 1.2x of the ideal wall time, under 50 KB per live session beyond its history.",
    );
}
