//! What the Redis benches share: a TCP proxy that counts round trips, and
//! what Redis itself reports (commands run, CPU used).
#![allow(dead_code, reason = "each bench uses part of it")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A TCP proxy in front of Redis that counts round trips: a round trip
/// begins each time the client sends after Redis last answered, so
/// commands written together (a pipeline, concurrent commands on the
/// multiplexed connection) count once.
pub(crate) struct Proxy {
    pub(crate) url: String,
    round_trips: Arc<AtomicU64>,
}

impl Proxy {
    pub(crate) async fn start(upstream_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("redis://{}", listener.local_addr().unwrap());
        let round_trips = Arc::new(AtomicU64::new(0));
        let counter = round_trips.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(("127.0.0.1", upstream_port))
                    .await
                    .unwrap();
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                tokio::spawn(pump(client, server, counter.clone()));
            }
        });
        Proxy { url, round_trips }
    }

    pub(crate) fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::SeqCst)
    }
}

async fn pump(client: TcpStream, server: TcpStream, round_trips: Arc<AtomicU64>) {
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
