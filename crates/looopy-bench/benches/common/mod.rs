//! What the Redis benches share: a TCP proxy that counts round trips, what
//! Redis itself reports (commands run, CPU used), and the Agent they run:
//! its stores in Redis, its model and its history.
#![allow(dead_code, reason = "each bench uses part of it")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::future::Future;

use async_trait::async_trait;
use looopy_core::{
    LlmError, LlmProvider, LlmRequest, LlmResponse, Message, Role, ToolCall, ToolDefinition,
    ToolError, ToolProvider, ToolResult, TurnContext,
};
use looopy_stores_redis::{
    RedisAgentStateStore, RedisArtifactStore, RedisBackend, RedisCheckpointStore, RedisConfig,
    RedisMessageStore, RedisTurnLock, RedisTurnStore,
};
use looopy_testkit::RedisServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A TCP proxy in front of Redis (or PostgreSQL) that counts round trips:
/// a round trip begins each time the client sends after the server last
/// answered, so commands written together (a pipeline, concurrent commands
/// on the multiplexed connection) count once.
pub(crate) struct Proxy {
    pub(crate) url: String,
    round_trips: Arc<AtomicU64>,
    statements: Arc<AtomicU64>,
}

impl Proxy {
    /// A proxy in front of Redis (`redis://` URL).
    pub(crate) async fn start(upstream_port: u16) -> Proxy {
        Proxy::start_for("redis", upstream_port, false).await
    }

    /// A proxy in front of PostgreSQL (`postgres://` address, without the
    /// user and database) that also counts statements ([`Proxy::statements`]).
    pub(crate) async fn start_postgres(upstream_port: u16) -> Proxy {
        Proxy::start_for("postgres", upstream_port, true).await
    }

    async fn start_for(scheme: &str, upstream_port: u16, postgres: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("{scheme}://{}", listener.local_addr().unwrap());
        let round_trips = Arc::new(AtomicU64::new(0));
        let statements = Arc::new(AtomicU64::new(0));
        let (counter, stmts) = (round_trips.clone(), statements.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(("127.0.0.1", upstream_port))
                    .await
                    .unwrap();
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let watch = postgres.then(|| PgStatements::new(stmts.clone()));
                tokio::spawn(pump(client, server, counter.clone(), watch));
            }
        });
        Proxy {
            url,
            round_trips,
            statements,
        }
    }

    pub(crate) fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::SeqCst)
    }

    /// Statements the clients sent through a PostgreSQL proxy: simple
    /// queries (`Q`) and executions of prepared ones (`E`), `BEGIN` and
    /// `COMMIT` included.
    pub(crate) fn statements(&self) -> u64 {
        self.statements.load(Ordering::SeqCst)
    }
}

/// Reads the PostgreSQL frontend protocol as it goes by and counts the
/// statements in it. A connection opens with a startup message without a
/// type byte (the URL must say `sslmode=disable`, so that no SSL request
/// comes first); every later message is a type byte and a length.
struct PgStatements {
    count: Arc<AtomicU64>,
    buf: Vec<u8>,
    started: bool,
}

impl PgStatements {
    fn new(count: Arc<AtomicU64>) -> Self {
        PgStatements {
            count,
            buf: Vec::new(),
            started: false,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            let rest = &self.buf[at..];
            let (header, kind) = if self.started {
                (5, rest.first().copied())
            } else {
                (4, None)
            };
            if rest.len() < header {
                break;
            }
            let len_at = header - 4;
            let len = u32::from_be_bytes(rest[len_at..header].try_into().unwrap()) as usize;
            let total = len_at + len;
            if rest.len() < total {
                break;
            }
            if matches!(kind, Some(b'Q' | b'E')) {
                self.count.fetch_add(1, Ordering::SeqCst);
            }
            self.started = true;
            at += total;
        }
        self.buf.drain(..at);
    }
}

/// Three proxies in front of Redis at `upstream_port`, one per group of
/// stores whose round trips a bench counts apart.
pub(crate) async fn three_proxies(upstream_port: u16) -> [Proxy; 3] {
    [
        Proxy::start(upstream_port).await,
        Proxy::start(upstream_port).await,
        Proxy::start(upstream_port).await,
    ]
}

/// Runs `bench` on a multi-threaded runtime with a private `redis-server`
/// and a connection that reads what the server reports (see [`commands`]).
pub(crate) fn on_private_redis<F, Fut>(bench: F)
where
    F: FnOnce(RedisServer, redis::aio::MultiplexedConnection) -> Fut,
    Fut: Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let server = RedisServer::start().expect("redis-server (scripts/provision.sh redis)");
        let info = redis::Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        bench(server, info).await;
    });
}

async fn pump(
    client: TcpStream,
    server: TcpStream,
    round_trips: Arc<AtomicU64>,
    mut watch: Option<PgStatements>,
) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    // Whether Redis answered since the client last sent.
    let answered = Arc::new(AtomicBool::new(true));
    let a = answered.clone();
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if a.swap(false, Ordering::SeqCst) {
                round_trips.fetch_add(1, Ordering::SeqCst);
            }
            if let Some(watch) = &mut watch {
                watch.feed(&buf[..n]);
            }
            if sw.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match sr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            answered.store(true, Ordering::SeqCst);
            if cw.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    tokio::join!(up, down);
}

async fn info(conn: &redis::aio::MultiplexedConnection, section: &str) -> String {
    let mut conn = conn.clone();
    redis::cmd("INFO")
        .arg(section)
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Commands Redis ran so far (`INFO commandstats`), not counting `INFO`.
pub(crate) async fn commands(conn: &redis::aio::MultiplexedConnection) -> u64 {
    info(conn, "commandstats")
        .await
        .lines()
        .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:"))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// CPU seconds (user + system) the Redis server used so far (`INFO cpu`,
/// microsecond precision).
pub(crate) async fn redis_cpu_seconds(conn: &redis::aio::MultiplexedConnection) -> f64 {
    info(conn, "cpu")
        .await
        .lines()
        .filter(|l| l.starts_with("used_cpu_user:") || l.starts_with("used_cpu_sys:"))
        .filter_map(|l| l.split(':').nth(1)?.trim().parse::<f64>().ok())
        .sum()
}

/// A connection to the bench Redis whose keys start with `prefix`.
pub(crate) async fn connect(url: &str, prefix: &str) -> RedisBackend {
    RedisBackend::connect(RedisConfig::new(url).with_key_prefix(prefix.to_owned()))
        .await
        .expect("connect to the bench Redis")
}

/// The connection each group of an Agent's stores reaches Redis through:
/// a bench puts proxies in front of them to count each group's round trips.
pub(crate) struct Connections {
    pub(crate) tasks: RedisBackend,
    pub(crate) messages: RedisBackend,
    pub(crate) artifacts: RedisBackend,
    pub(crate) agents: RedisBackend,
    /// The turn lease, and the turn store's start and end scripts.
    pub(crate) lock: RedisBackend,
}

/// Every store an Agent uses, in Redis.
#[derive(Clone)]
pub(crate) struct RedisAgentStores {
    pub(crate) tasks: Arc<RedisCheckpointStore>,
    pub(crate) messages: Arc<RedisMessageStore>,
    pub(crate) artifacts: Arc<RedisArtifactStore>,
    pub(crate) agents: Arc<RedisAgentStateStore>,
    pub(crate) lock: Arc<RedisTurnLock>,
    /// A turn's start and end (one script each), through the lease's
    /// connection, as `looopy serve` does.
    pub(crate) turns: Arc<RedisTurnStore>,
}

impl RedisAgentStores {
    pub(crate) fn new(connections: Connections) -> Self {
        let Connections {
            tasks,
            messages,
            artifacts,
            agents,
            lock,
        } = connections;
        let tasks = Arc::new(RedisCheckpointStore::new(tasks));
        let messages = Arc::new(RedisMessageStore::new(messages));
        let agents = Arc::new(RedisAgentStateStore::new(agents));
        let turn_lock = Arc::new(RedisTurnLock::new(lock.clone()));
        let artifacts = Arc::new(RedisArtifactStore::new(artifacts));
        // The answer's artifact rides with the turn's end, as in
        // `looopy_stores_redis::stores`.
        let turns = Arc::new(
            RedisTurnStore::new(
                lock,
                messages.clone(),
                agents.clone(),
                turn_lock.clone(),
                tasks.clone(),
            )
            .with_artifacts(artifacts.clone()),
        );
        RedisAgentStores {
            tasks,
            messages,
            artifacts,
            agents,
            lock: turn_lock,
            turns,
        }
    }
}

/// Two tools that do nothing, declared idempotent or not (a call of a tool
/// that is not idempotent waits for the checkpoint that holds it).
#[derive(Default)]
pub(crate) struct NoopTools {
    pub(crate) idempotent: bool,
}

#[async_trait]
impl ToolProvider for NoopTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(["noop_a", "noop_b"]
            .into_iter()
            .map(|name| {
                ToolDefinition::without_parameters(name, "does nothing").idempotent(self.idempotent)
            })
            .collect())
    }
    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        ToolResult::text(&call.id, "ok")
    }
    // Rust tools made once: listed once per loop, as a library user declares.
    fn tools_are_fixed(&self) -> bool {
        true
    }
}

/// A model that calls the tool it names once, then (once it sees a tool
/// result) answers.
pub(crate) struct OneTool(pub(crate) &'static str);

#[async_trait]
impl LlmProvider for OneTool {
    async fn call(&self, request: LlmRequest, _cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let answered = request
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Tool);
        Ok(if answered {
            LlmResponse::text("done")
        } else {
            LlmResponse::tool_calls("", vec![ToolCall::new("a", self.0, "{}")])
        })
    }
}

/// A conversation of `n` messages, user and assistant in turn.
pub(crate) fn history(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("question {i}: what about this one?"))
            } else {
                Message::assistant(format!("answer {i}: here is what I found."))
            }
        })
        .collect()
}
