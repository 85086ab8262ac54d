//! What the durable stores cost an Agent turn, side by side in one run:
//! SQLite (a file in a temporary directory), PostgreSQL (a private server,
//! looopy-testkit's `PostgresServer`) and Redis (a private `redis-server`),
//! each bundle as `looopy serve` builds it (`Stores` with its turn store),
//! against the same turns on the memory stores.
//!
//! - per-turn latency at history 10 and 1,000: the second turn of an Agent
//!   on a context holding the history (the first starts the Agent, as an
//!   A2A server keeps its Agents between turns), in alternated rounds;
//! - what a turn sends: round trips (PostgreSQL and Redis, counted by a TCP
//!   proxy in front of the server: a round trip begins each time the client
//!   sends after the server answered), statements (PostgreSQL: the simple
//!   queries and prepared-statement executions the proxy reads in the
//!   wire protocol, `BEGIN` and `COMMIT` included) and write transactions
//!   (SQLite: `SqliteBackend::write_commits`). The timed runs do not go
//!   through the proxies.
//!
//! Two turn shapes: the answer at once, and one call of a tool that is not
//! idempotent (its call waits for the checkpoint that holds it) then the
//! answer.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{NoopTools, OneTool, Proxy, history};
use looopy_agent::Agent;
use looopy_bench::{Case, comment, percentile, us};
use looopy_core::store::Stores;
use looopy_core::{LlmResponse, Message};
use looopy_stores_postgres::PostgresConfig;
use looopy_stores_redis::RedisConfig;
use looopy_stores_sqlite::{SqliteBackend, SqliteConfig};
use looopy_testkit::{PostgresServer, RedisServer, ScriptStep, ScriptedLlm};

/// The allocator `looopy serve` runs with (see `looopy_bench::Allocator`).
#[global_allocator]
static GLOBAL: looopy_bench::Allocator = looopy_bench::Allocator;

const BENCH: &str = "store_roundtrips";
const HISTORIES: [usize; 2] = [10, 1000];
/// Turns counted per backend, shape and history.
const COUNTED: u32 = 20;

/// What an Agent turn does besides the stores.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// The answer at once.
    Answer,
    /// One call of a tool that is not idempotent, then the answer.
    Tool,
}

impl Shape {
    fn what(self) -> &'static str {
        match self {
            Shape::Answer => "the answer at once",
            Shape::Tool => "one tool call (not idempotent), then the answer",
        }
    }
}

/// How a backend's traffic is counted.
enum Counter {
    /// Not counted (the memory stores; the timed bundles).
    None,
    /// Round trips (and, on PostgreSQL, statements) through a proxy.
    Proxy(Proxy),
    /// Write transactions of the SQLite file.
    Sqlite(SqliteBackend),
}

/// Counts so far: (round trips, statements, write transactions).
fn counts(counter: &Counter) -> [u64; 3] {
    match counter {
        Counter::None => [0; 3],
        Counter::Proxy(p) => [p.round_trips(), p.statements(), 0],
        Counter::Sqlite(b) => [0, 0, b.write_commits()],
    }
}

/// One backend: the bundle timed and the bundle counted.
struct Backend {
    name: &'static str,
    timed: Stores,
    counted: Stores,
    counter: Counter,
}

fn agent(context: &str, stores: &Stores, shape: Shape) -> Agent {
    let b = Agent::builder(context.to_owned());
    let b = match shape {
        Shape::Answer => b.llm(ScriptedLlm::repeating(ScriptStep::Respond(
            LlmResponse::text("done"),
        ))),
        Shape::Tool => b.llm(OneTool("noop_a")),
    };
    b.tools(NoopTools { idempotent: false })
        .stores(stores)
        .build()
        .expect("agent")
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

/// An Agent on a fresh context holding `base` that already ran one turn.
async fn ready_agent(stores: &Stores, context: &str, base: &[Message], shape: Shape) -> Agent {
    stores.messages.append(context, base).await.unwrap();
    let a = agent(context, stores, shape);
    one_turn(&a).await;
    a
}

/// One steady-state turn on each of `contexts` fresh contexts; the times.
async fn timed_turns(
    stores: &Stores,
    base: &[Message],
    contexts: usize,
    shape: Shape,
    tag: &str,
) -> Vec<Duration> {
    let mut agents = Vec::with_capacity(contexts);
    for i in 0..contexts {
        agents.push(ready_agent(stores, &format!("{tag}-{i}"), base, shape).await);
    }
    let mut times = Vec::with_capacity(contexts);
    for a in agents {
        let started = Instant::now();
        one_turn(&a).await;
        times.push(started.elapsed());
    }
    times
}

/// Round trips, statements and write transactions per steady-state turn.
async fn counted_turns(backend: &Backend, base: &[Message], shape: Shape, tag: &str) -> [f64; 3] {
    let mut total = [0u64; 3];
    for i in 0..COUNTED {
        let a = ready_agent(&backend.counted, &format!("{tag}-{i}"), base, shape).await;
        let before = counts(&backend.counter);
        one_turn(&a).await;
        let after = counts(&backend.counter);
        for k in 0..3 {
            total[k] += after[k] - before[k];
        }
    }
    total.map(|x| x as f64 / f64::from(COUNTED))
}

async fn redis_stores(url: &str, prefix: &str) -> Stores {
    looopy_stores_redis::connect(RedisConfig::new(url).with_key_prefix(prefix.to_owned()))
        .await
        .expect("connect to the bench Redis")
}

async fn postgres_stores(url: &str, schema: &str) -> Stores {
    let config = PostgresConfig::new(url)
        .with_schema(schema.to_owned())
        .with_prune_interval_secs(0);
    looopy_stores_postgres::connect(config)
        .await
        .expect("connect to the bench PostgreSQL")
}

/// A fresh SQLite file (and its `-wal`, `-shm`), removed on drop.
struct TempDb(PathBuf);

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

async fn backends(redis: &RedisServer, postgres: &PostgresServer, db: &TempDb) -> Vec<Backend> {
    let memory = looopy_stores_memory::stores();
    let sqlite = SqliteBackend::open(SqliteConfig::new(&db.0).with_prune_interval(None))
        .await
        .expect("open the bench SQLite file");
    let redis_proxy = Proxy::start(redis.port()).await;
    let pg_proxy = Proxy::start_postgres(postgres.port()).await;
    let pg_proxied = format!(
        "{}/postgres?sslmode=disable",
        pg_proxy.url.replace("postgres://", "postgres://postgres@")
    );
    vec![
        Backend {
            name: "memory",
            timed: memory.clone(),
            counted: memory,
            counter: Counter::None,
        },
        Backend {
            name: "SQLite",
            timed: looopy_stores_sqlite::stores(sqlite.clone()),
            counted: looopy_stores_sqlite::stores(sqlite.clone()),
            counter: Counter::Sqlite(sqlite),
        },
        Backend {
            name: "PostgreSQL",
            timed: postgres_stores(&postgres.url(), "bench").await,
            counted: postgres_stores(&pg_proxied, "bench_counted").await,
            counter: Counter::Proxy(pg_proxy),
        },
        Backend {
            name: "Redis",
            timed: redis_stores(&redis.url(), "bench").await,
            counted: redis_stores(&redis_proxy.url, "bench-counted").await,
            counter: Counter::Proxy(redis_proxy),
        },
    ]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let redis = RedisServer::start().expect("redis-server (scripts/provision.sh redis)");
        let postgres = PostgresServer::start().expect("PostgreSQL (scripts/provision.sh postgres)");
        let db = TempDb(std::env::temp_dir().join(format!(
            "looopy-bench-store-roundtrips-{}.db",
            std::process::id()
        )));
        let backends = backends(&redis, &postgres, &db).await;
        for n in HISTORIES {
            let base = history(n);
            for shape in [Shape::Answer, Shape::Tool] {
                let contexts = if n >= 1000 { 80 } else { 200 };
                let tag = format!("{shape:?}-{n}");
                // Warm up, then alternate rounds so that load on the machine hits all alike.
                for b in &backends {
                    timed_turns(&b.timed, &base, 5, shape, &format!("w-{tag}")).await;
                }
                let mut times: Vec<Vec<Duration>> = vec![Vec::new(); backends.len()];
                for round in 0..4 {
                    for (i, b) in backends.iter().enumerate() {
                        let t = &format!("r{round}-{tag}");
                        times[i].extend(timed_turns(&b.timed, &base, contexts / 4, shape, t).await);
                    }
                }
                for t in &mut times {
                    t.sort();
                }
                let floor = us(percentile(&times[0], 0.5));
                for (i, b) in backends.iter().enumerate().skip(1) {
                    let (median, p99) = (us(percentile(&times[i], 0.5)), us(percentile(&times[i], 0.99)));
                    let [rts, statements, writes] =
                        counted_turns(b, &base, shape, &format!("c-{tag}")).await;
                    let counted = match b.counter {
                        Counter::Sqlite(_) => format!("{writes:.1} write transactions per turn"),
                        Counter::Proxy(_) if b.name == "PostgreSQL" => {
                            format!("{rts:.1} round trips and {statements:.1} statements per turn")
                        }
                        _ => format!("{rts:.1} round trips per turn"),
                    };
                    Case::new(
                        BENCH,
                        format!("Agent turn on {}, {}, history {n}", b.name, shape.what()),
                        "µs",
                    )
                    .median_p99(median, p99)
                    .num("memory_median_us", floor)
                    .num("added_median_us", median - floor)
                    .num("history", n as f64)
                    .num("round_trips_per_turn", rts)
                    .num("statements_per_turn", statements)
                    .num("write_transactions_per_turn", writes)
                    .notes(format!(
                        "{counted}; turn {median:.0} µs median against {floor:.0} µs on the memory stores"
                    ))
                    .print();
                }
            }
        }
        drop(backends);
        drop(db);
    });
    comment(
        "Each turn: one user message on a context holding the history, the second turn of its Agent (the first starts it), every store of the backend's bundle with its turn store (the turn's start and end as one operation each: a Lua script on Redis, a transaction on SQLite and PostgreSQL), checkpoints building on the stored history. Servers are private (a redis-server without persistence, a PostgreSQL cluster with fsync off, a SQLite file in WAL mode with synchronous = NORMAL) on the same 2 shared cores as the bench: latencies are noisy, counts are not. Round trips and statements are counted by TCP proxies in front of PostgreSQL and Redis, write transactions by SqliteBackend::write_commits; the timed runs do not go through the proxies. Budget (docs/performance.md): at most 3 round trips per turn on PostgreSQL, flat in history length; one write transaction per turn end on SQLite.",
    );
}
