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
