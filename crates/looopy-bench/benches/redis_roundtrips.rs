//! Redis round trips and added latency, on a private
//! `redis-server` (looopy-testkit's `RedisServer`):
//!
//! - checkpoints: `AgentLoop` turns of 10 iterations with two no-op tool
//!   calls each (plus the wrap-up call) with `RedisCheckpointStore`, against
//!   the same turns with no store; per iteration: added latency, round
//!   trips, Redis commands; at history 10, 100 and 1000;
//! - message appends and the rest of an Agent turn: `Agent` turns (two
//!   iterations: one tool call, then the answer) with every store in Redis
//!   (messages, artifacts, agent state, turn lease, checkpoints) against
//!   the same with the memory stores; per turn.
//!
//! Round trips are counted by a TCP proxy between the stores and Redis: a
//! round trip begins each time the client sends after Redis last answered,
//! so commands written together (a pipeline, concurrent commands on the
//! multiplexed connection) count once. Commands are `INFO commandstats`
//! deltas. Latencies are measured without the proxy.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::{
    Connections, NoopTools, OneTool, Proxy, RedisAgentStores, commands, connect, history,
    on_private_redis, three_proxies,
};
use futures::StreamExt;
use looopy_agent::Agent;
use looopy_bench::{Case, comment, percentile, us};
use looopy_core::store::{CheckpointStore, MessageStore, Stores};
use looopy_core::{
    History, LlmError, LlmProvider, LlmRequest, LlmResponse, Message, ToolCall, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_stores_redis::RedisConfig;
use looopy_testkit::{RedisServer, ScriptStep, ScriptedLlm};

/// The allocator `looopy serve` runs with (see `looopy_bench::Allocator`).
#[global_allocator]
static GLOBAL: looopy_bench::Allocator = looopy_bench::Allocator;

const BENCH: &str = "redis_roundtrips";
/// Tool-call iterations per loop turn (each with two calls), plus the wrap-up.
const K: u32 = 10;
const HISTORIES: [usize; 3] = [10, 100, 1000];

/// The histories to run: all, or the one `BENCH_HISTORY` names (for profiling).
fn histories() -> Vec<usize> {
    match std::env::var("BENCH_HISTORY")
        .ok()
        .and_then(|h| h.parse().ok())
    {
        Some(h) => vec![h],
        None => HISTORIES.to_vec(),
    }
}

async fn redis_stores(url: &str, prefix: &str) -> Stores {
    looopy_stores_redis::connect(RedisConfig::new(url).with_key_prefix(prefix.to_owned()))
        .await
        .expect("connect to the bench Redis")
}

/// The floor: one bare round trip (`PING`) on a multiplexed connection.
async fn ping(conn: &redis::aio::MultiplexedConnection) {
    let mut conn = conn.clone();
    let mut times = Vec::with_capacity(2000);
    for i in 0..2200 {
        let started = Instant::now();
        let _: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
        if i >= 200 {
            times.push(started.elapsed());
        }
    }
    times.sort();
    Case::new(BENCH, "one round trip (PING), for reference", "µs")
        .median_p99(us(percentile(&times, 0.5)), us(percentile(&times, 0.99)))
        .notes("redis-rs multiplexed connection on loopback, one command at a time")
        .print();
}

// ------------------------------------------------------------------ loop turns

fn tool_loop(store: Option<Arc<dyn CheckpointStore>>) -> AgentLoop {
    let calls = LlmResponse::tool_calls(
        "",
        vec![
            ToolCall::new("a", "noop_a", "{}"),
            ToolCall::new("b", "noop_b", "{}"),
        ],
    );
    let llm = ScriptedLlm::repeating(ScriptStep::Respond(calls));
    let mut b = AgentLoop::builder(llm)
        .tools(NoopTools::default())
        .max_iterations(K);
    if let Some(store) = store {
        b = b.task_store(store);
    }
    b.build()
}

/// Runs `turns` loop turns from `base`; returns the per-iteration times.
async fn loop_turns(agent: &AgentLoop, base: &History, turns: usize, tag: &str) -> Vec<Duration> {
    let mut times = Vec::with_capacity(turns);
    for i in 0..turns {
        let cx = TurnContext::new(format!("{tag}-{i}"), "bench");
        let started = Instant::now();
        let mut s = agent.start_turn(base.clone(), cx);
        while s.next().await.is_some() {}
        times.push(started.elapsed() / (K + 1));
    }
    times.sort();
    times
}

async fn checkpoints(
    server: &RedisServer,
    proxy: &Proxy,
    info: &redis::aio::MultiplexedConnection,
) {
    let plain = tool_loop(None);
    let direct = redis_stores(&server.url(), "bench-cp").await;
    let redis_loop = tool_loop(Some(direct.checkpoints.clone()));
    let proxied = redis_stores(&proxy.url, "bench-cp-proxied").await;
    let proxied_loop = tool_loop(Some(proxied.checkpoints.clone()));
    let iterations = f64::from(K + 1);
    for n in histories() {
        let base = History::from(history(n));
        let turns = if n >= 1000 { 100 } else { 200 };
        // Warm up both, then alternate so that load on the machine hits both alike.
        loop_turns(&plain, &base, 20, &format!("w{n}")).await;
        loop_turns(&redis_loop, &base, 20, &format!("wr{n}")).await;
        let mut none = Vec::new();
        let mut with = Vec::new();
        for round in 0..4 {
            none.extend(loop_turns(&plain, &base, turns / 4, &format!("p{n}-{round}")).await);
            with.extend(loop_turns(&redis_loop, &base, turns / 4, &format!("r{n}-{round}")).await);
        }
        none.sort();
        with.sort();
        let (m0, m1) = (us(percentile(&none, 0.5)), us(percentile(&with, 0.5)));
        let (p0, p1) = (us(percentile(&none, 0.99)), us(percentile(&with, 0.99)));

        // Round trips and commands, through the proxy, a few turns.
        loop_turns(&proxied_loop, &base, 2, &format!("wc{n}")).await;
        let counted = 20;
        let (rt0, c0) = (proxy.round_trips(), commands(info).await);
        loop_turns(&proxied_loop, &base, counted, &format!("c{n}")).await;
        let (rt, cmds) = (proxy.round_trips() - rt0, commands(info).await - c0);
        let per_iter = |x: u64| x as f64 / (counted as f64 * iterations);
        Case::new(BENCH, format!("checkpoints (RedisCheckpointStore), history {n}, added per iteration"), "µs")
            .median_p99(m1 - m0, p1 - m0)
            .num("no_store_median_us", m0)
            .num("redis_median_us", m1)
            .num("no_store_p99_us", p0)
            .num("redis_p99_us", p1)
            .num("round_trips_per_iteration", per_iter(rt))
            .num("commands_per_iteration", per_iter(cmds))
            .notes(format!(
                "{:.2} round trips and {:.2} commands per iteration; iteration {m0:.1} µs with no store, {m1:.1} µs with Redis (medians; added = a Redis iteration minus the median one without a store, so its p99 is the Redis p99 minus that median)",
                per_iter(rt),
                per_iter(cmds),
            ))
            .print();
    }
    // Leave the private server empty for the next part.
    let mut conn = info.clone();
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await.unwrap();
}

// ------------------------------------------------------------------ agent turns

/// Every store an Agent uses, in Redis: checkpoints through `tasks_url`,
/// the history through `messages_url`, artifacts, agent state, the turn
/// lease and the turn store's start and end scripts through `rest_url`.
async fn redis_agent_stores(
    tasks_url: &str,
    messages_url: &str,
    rest_url: &str,
    prefix: &str,
) -> RedisAgentStores {
    let (tasks, messages, rest) = (
        connect(tasks_url, prefix).await,
        connect(messages_url, prefix).await,
        connect(rest_url, prefix).await,
    );
    RedisAgentStores::new(Connections {
        tasks,
        messages,
        artifacts: rest.clone(),
        agents: rest.clone(),
        lock: rest,
    })
}

/// Where an Agent keeps things: every store in Redis, or every one in memory.
#[derive(Clone)]
enum AgentStores {
    Redis(RedisAgentStores),
    Memory(Stores),
}

/// What an Agent turn does besides the stores.
#[derive(Clone, Copy, Debug, Default)]
enum Shape {
    /// One call of a tool that is not idempotent, then the answer.
    #[default]
    Tool,
    /// One call of an idempotent tool, then the answer.
    IdempotentTool,
    /// The answer at once.
    Answer,
}

/// A model that answers at once.
struct Answers;

#[async_trait]
impl LlmProvider for Answers {
    async fn call(&self, _: LlmRequest, _cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        Ok(LlmResponse::text("done"))
    }
}

fn agent(context: &str, stores: &AgentStores, shape: Shape) -> Agent {
    let b = Agent::builder(context.to_owned());
    let b = match shape {
        Shape::Answer => b.llm(Answers),
        Shape::Tool | Shape::IdempotentTool => b.llm(OneTool("noop_a")),
    }
    .tools(NoopTools {
        idempotent: matches!(shape, Shape::IdempotentTool),
    });
    match stores {
        AgentStores::Redis(s) => b
            .message_store(s.messages.clone())
            .artifact_store(s.artifacts.clone())
            .state_store(s.agents.clone())
            .turn_lock(s.lock.clone())
            .task_store(s.tasks.clone())
            .turn_store(s.turns.clone()),
        AgentStores::Memory(s) => b
            .message_store(s.messages.clone())
            .artifact_store(s.artifacts.clone())
            .state_store(s.agents.clone())
            .turn_lock(s.locks.clone())
            .task_store(s.checkpoints.clone()),
    }
    .build()
    .expect("agent")
}

async fn preload(stores: &AgentStores, context: &str, base: &[Message]) {
    match stores {
        AgentStores::Redis(s) => s.messages.append(context, base).await.unwrap(),
        AgentStores::Memory(s) => s.messages.append(context, base).await.unwrap(),
    }
}

/// Runs one turn and reads it to its end.
async fn one_turn(agent: &Agent) {
    let summary = agent
        .execute_turn(Some(Message::user("go")), None)
        .await
        .expect("turn starts")
        .finish()
        .await
        .expect("summary");
    assert!(summary.saved, "{:?}", summary.save_error);
}

/// An Agent on a fresh context holding `base` that already ran one turn
/// (so that what is measured next is a steady-state turn: the Agent
/// started, as an A2A server keeps it between turns).
async fn ready_agent(stores: &AgentStores, context: &str, base: &[Message], shape: Shape) -> Agent {
    preload(stores, context, base).await;
    let a = agent(context, stores, shape);
    one_turn(&a).await;
    a
}

/// One steady-state turn on each of `contexts` fresh contexts holding
/// `base`; per-turn times.
async fn agent_turns(
    stores: &AgentStores,
    base: &[Message],
    contexts: usize,
    tag: &str,
) -> Vec<Duration> {
    let mut agents = Vec::with_capacity(contexts);
    for i in 0..contexts {
        agents.push(ready_agent(stores, &format!("{tag}-{i}"), base, Shape::Tool).await);
    }
    let mut times = Vec::with_capacity(contexts);
    for a in agents {
        let started = Instant::now();
        one_turn(&a).await;
        times.push(started.elapsed());
    }
    times.sort();
    times
}

async fn agent_part(server: &RedisServer, info: &redis::aio::MultiplexedConnection) {
    let url = server.url();
    let redis = AgentStores::Redis(redis_agent_stores(&url, &url, &url, "bench-agent").await);
    let memory = AgentStores::Memory(looopy_stores_memory::stores());
    let proxies = three_proxies(server.port()).await;
    let proxied = AgentStores::Redis(
        redis_agent_stores(
            &proxies[0].url,
            &proxies[1].url,
            &proxies[2].url,
            "bench-agent-proxied",
        )
        .await,
    );
    for n in histories() {
        let base = history(n);
        let turns = if n >= 1000 { 60 } else { 150 };
        agent_turns(&memory, &base, 10, &format!("wm{n}")).await;
        agent_turns(&redis, &base, 10, &format!("wr{n}")).await;
        let mut mem = Vec::new();
        let mut red = Vec::new();
        for round in 0..3 {
            mem.extend(agent_turns(&memory, &base, turns / 3, &format!("m{n}-{round}")).await);
            red.extend(agent_turns(&redis, &base, turns / 3, &format!("r{n}-{round}")).await);
        }
        mem.sort();
        red.sort();
        let (m0, m1) = (us(percentile(&mem, 0.5)), us(percentile(&red, 0.5)));
        let (p0, p1) = (us(percentile(&mem, 0.99)), us(percentile(&red, 0.99)));

        agent_turns(&proxied, &base, 2, &format!("wc{n}")).await;
        let (rts, cmds) = counted_turns(
            &proxied,
            &proxies,
            info,
            &base,
            &format!("c{n}"),
            Shape::Tool,
        )
        .await;
        let total: f64 = rts.iter().sum();
        Case::new(
            BENCH,
            format!("Agent turn, every store in Redis vs in memory, history {n}, added per turn"),
            "µs",
        )
        .median_p99(m1 - m0, p1 - m0)
        .num("memory_median_us", m0)
        .num("redis_median_us", m1)
        .num("memory_p99_us", p0)
        .num("redis_p99_us", p1)
        .nums(round_trip_nums(rts, cmds))
        .notes(format!(
            "{:.1} round trips per turn of 2 iterations ({:.1} checkpoints, {:.1} message store calls, {:.1} turn start and end (RedisTurnStore: lease, agent state, history, input, messages, checkpoint delete) and artifacts), {:.1} commands; turn {m0:.0} µs with the memory stores, {m1:.0} µs with Redis (medians; added = a Redis turn minus the median in-memory turn)",
            total, rts[0], rts[1], rts[2], cmds,
        ))
        .print();
    }
    turn_shapes(&proxied, &proxies, info).await;
}

/// The figures of [`counted_turns`], named as the bench's JSON names them.
fn round_trip_nums(rts: [f64; 3], cmds: f64) -> [(&'static str, f64); 5] {
    [
        ("round_trips_per_turn", rts.iter().sum()),
        ("checkpoint_round_trips_per_turn", rts[0]),
        ("message_round_trips_per_turn", rts[1]),
        ("other_round_trips_per_turn", rts[2]),
        ("commands_per_turn", cmds),
    ]
}

/// Round trips (checkpoints, message store, the rest) and Redis commands
/// per steady-state turn of `shape`, over 20 fresh contexts holding `base`
/// (the preloading and each Agent's first turn not counted).
async fn counted_turns(
    proxied: &AgentStores,
    proxies: &[Proxy; 3],
    info: &redis::aio::MultiplexedConnection,
    base: &[Message],
    tag: &str,
    shape: Shape,
) -> ([f64; 3], f64) {
    const COUNTED: u32 = 20;
    let round_trips = || proxies.each_ref().map(Proxy::round_trips);
    let mut rts = [0u64; 3];
    let mut cmds = 0;
    for i in 0..COUNTED {
        let a = ready_agent(proxied, &format!("{tag}-{i}"), base, shape).await;
        let (rt0, c0) = (round_trips(), commands(info).await);
        one_turn(&a).await;
        let rt1 = round_trips();
        for k in 0..3 {
            rts[k] += rt1[k] - rt0[k];
        }
        cmds += commands(info).await - c0;
    }
    let per_turn = |x: u64| x as f64 / f64::from(COUNTED);
    (rts.map(per_turn), per_turn(cmds))
}

/// Round trips per turn by what the turn does, at history 10: which of them
/// the turn waits for depends on its tools.
async fn turn_shapes(
    proxied: &AgentStores,
    proxies: &[Proxy; 3],
    info: &redis::aio::MultiplexedConnection,
) {
    let base = history(10);
    for (shape, what) in [
        (Shape::Answer, "the answer at once"),
        (
            Shape::IdempotentTool,
            "one idempotent tool call, then the answer",
        ),
        (
            Shape::Tool,
            "one call of a tool that is not idempotent, then the answer",
        ),
    ] {
        let tag = format!("shape-{shape:?}");
        let (rts, cmds) = counted_turns(proxied, proxies, info, &base, &tag, shape).await;
        let total: f64 = rts.iter().sum();
        Case::new(BENCH, format!("Agent turn on Redis, {what}: round trips"), "round trips")
            .nums(round_trip_nums(rts, cmds))
            .notes(format!(
                "{total:.1} round trips per turn ({:.1} checkpoints, {:.1} message store calls, {:.1} turn start and end), {cmds:.1} commands; history 10",
                rts[0], rts[1], rts[2],
            ))
            .print();
    }
}

fn main() {
    on_private_redis(|server, info| async move {
        let proxy = Proxy::start(server.port()).await;
        ping(&info).await;
        // BENCH_PART=checkpoints|agent runs one part (for profiling).
        let part = std::env::var("BENCH_PART").unwrap_or_default();
        if part.is_empty() || part == "checkpoints" {
            checkpoints(&server, &proxy, &info).await;
        }
        if part.is_empty() || part == "agent" {
            agent_part(&server, &info).await;
        }
    });
    comment(&format!(
        "A private redis-server (looopy-testkit RedisServer, no persistence) on loopback, on the same 2 cores as the bench, which were shared with other work: latencies are noisy. Loop turns: {K} iterations of two no-op tool calls plus the wrap-up call, each a fresh task id (so the first checkpoint of a turn writes the whole history, the next ones only what is new); the model and tools answer at once, so the difference is all checkpointing. Agent turns: the second turn of an Agent on a context holding the history (the first turn starts the Agent, as an A2A server keeps its Agents between turns), one user message, a tool call then the answer, with the turn lease, agent state, message appends and checkpoints in Redis, the turn's start and end through RedisTurnStore (one Lua script each; the Agent holds the history between turns and reads only what others appended; the streamed answer's artifact writes ride with the end script), and the turn's checkpoints build on the stored history (they hold the turn's own messages, not the history). Round trips are counted by TCP proxies in front of Redis (a round trip = the client sends after Redis answered; in Agent turns the checkpoints, the message store and the other stores with the turn store each go through a proxy of their own), commands by INFO commandstats (commands run by scripts included); the timed runs do not go through the proxy. Budget (docs/performance.md): an Agent turn costs at most 3 store round trips, flat in history length."
    ));
}
