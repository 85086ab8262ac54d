//! Shared by the PostgreSQL integration tests: the test server and a
//! schema of each test's own.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use looopy_core::store::Stores;
use looopy_stores_postgres::{PostgresBackend, PostgresConfig};
use looopy_testkit::TestPostgres;

/// The shared test PostgreSQL (`LOOOPY_TEST_POSTGRES_URL`) or one of this
/// test's own; `None` (the test is skipped, the reason printed) when there
/// is none outside CI.
pub fn postgres(test: &str) -> Option<TestPostgres> {
    looopy_testkit::test_postgres_or_skip(test)
}

/// A schema no other test uses.
pub fn schema() -> String {
    format!("t_{}", uuid::Uuid::new_v4().simple())
}

/// Settings for `url` in a fresh schema, no background prune.
pub fn config(url: &str) -> PostgresConfig {
    PostgresConfig::new(url)
        .with_schema(schema())
        .with_prune_interval_secs(0)
}

/// A connected, migrated backend.
pub async fn backend(config: PostgresConfig) -> PostgresBackend {
    match PostgresBackend::connect(config).await {
        Ok(backend) => backend,
        Err(e) => panic!("could not connect to the test PostgreSQL: {e}"),
    }
}

/// Every store, connected.
pub async fn stores(config: PostgresConfig) -> Stores {
    looopy_stores_postgres::stores(backend(config).await)
}

/// Drops the test's schema (tests on the shared server leave nothing behind).
pub async fn drop_schema(backend: &PostgresBackend) {
    let sql = format!(
        "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
        backend.config().schema
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(backend.pool())
        .await
        .unwrap();
}

/// A TCP proxy in front of a PostgreSQL server that counts round trips: a
/// round trip begins each time a client sends after the server last
/// answered on that connection (so messages written together, a pipeline,
/// count once).
pub struct RoundTrips {
    /// The URL to connect through the proxy.
    pub url: String,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl RoundTrips {
    /// A proxy in front of the server of `url` (`postgres://user@host:port/db`).
    pub async fn start(url: &str) -> RoundTrips {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        use tokio::net::{TcpListener, TcpStream};

        let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (user, upstream) = match authority.rsplit_once('@') {
            Some((user, host)) => (format!("{user}@"), host.to_owned()),
            None => (String::new(), authority.to_owned()),
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxied = format!("{scheme}://{user}{}/{path}", listener.local_addr().unwrap());
        let count = Arc::new(AtomicU64::new(0));
        let counter = count.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream.as_str()).await else {
                    continue;
                };
                let count = counter.clone();
                tokio::spawn(async move {
                    let (mut cr, mut cw) = client.into_split();
                    let (mut sr, mut sw) = server.into_split();
                    // Whether the server answered since the client last sent.
                    let answered = Arc::new(AtomicBool::new(true));
                    let a = answered.clone();
                    let up = async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        while let Ok(n @ 1..) = cr.read(&mut buf).await {
                            if a.swap(false, Ordering::SeqCst) {
                                count.fetch_add(1, Ordering::SeqCst);
                            }
                            if sw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    };
                    let down = async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        while let Ok(n @ 1..) = sr.read(&mut buf).await {
                            answered.store(true, Ordering::SeqCst);
                            if cw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    };
                    tokio::join!(up, down);
                });
            }
        });
        RoundTrips {
            url: proxied,
            count,
        }
    }

    /// Round trips so far, on every connection through the proxy.
    pub fn count(&self) -> u64 {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until no round trip has begun for 100 ms (what the pool does
    /// in the background, such as its check of a connection given back,
    /// is over), and returns the count.
    pub async fn quiet(&self) -> u64 {
        let mut seen = self.count();
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let now = self.count();
            if now == seen {
                return now;
            }
            seen = now;
        }
    }
}
