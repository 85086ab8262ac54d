//! The schema's versioned migrations, embedded in the binary and applied
//! at start.
//!
//! [`apply`] runs in one transaction that first takes a transaction-level
//! advisory lock named after the schema: replicas that start together
//! queue on it, and each finds the migrations the first one applied. DDL is
//! transactional in PostgreSQL, so a failed migration leaves nothing
//! behind. `looopy_migrations` records each version applied; a schema with
//! a version this build does not know was written by a newer Looopy and is
//! refused ([`PostgresError::SchemaTooNew`]) rather than misread.
//!
//! The upgrade rule: a migration, once released, is never edited; a change
//! of the schema is a new migration with the next version, which only adds
//! (tables, columns with defaults, indexes), so that an older replica still
//! running beside a newer one keeps working until it is replaced.

use sqlx::postgres::PgPool;
use sqlx::{AssertSqlSafe, Executor};

use crate::error::PostgresError;

/// The migrations, oldest first: `(version, name, SQL)`.
pub(crate) const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "initial schema", V1),
    (2, "checkpoints on the stored history", V2),
];

/// The newest version this build knows.
pub const SCHEMA_VERSION: i64 = 2;

const V1: &str = r#"
CREATE TABLE checkpoints (
    task_id TEXT COLLATE "C" PRIMARY KEY,
    context_id TEXT COLLATE "C" NOT NULL,
    body TEXT NOT NULL,
    saved_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX checkpoints_saved_at ON checkpoints (saved_at);

CREATE TABLE histories (
    context_id TEXT COLLATE "C" PRIMARY KEY,
    len BIGINT NOT NULL,
    epoch TEXT COLLATE "C" NOT NULL,
    touched_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX histories_touched_at ON histories (touched_at);
CREATE TABLE messages (
    context_id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (context_id, seq)
);

CREATE TABLE artifacts (
    context_id TEXT COLLATE "C" NOT NULL,
    artifact_id TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C" NOT NULL,
    meta TEXT NOT NULL,
    nparts BIGINT NOT NULL,
    created_ns BIGINT NOT NULL,
    updated_ns BIGINT NOT NULL,
    ord BIGSERIAL,
    touched_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (context_id, artifact_id)
);
CREATE INDEX artifacts_touched_at ON artifacts (touched_at);
CREATE TABLE artifact_parts (
    context_id TEXT COLLATE "C" NOT NULL,
    artifact_id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (context_id, artifact_id, seq)
);

CREATE TABLE agents (
    context_id TEXT COLLATE "C" PRIMARY KEY,
    owner TEXT COLLATE "C",
    activity_ns BIGINT NOT NULL,
    body TEXT NOT NULL,
    touched_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX agents_owner ON agents (owner, activity_ns DESC, context_id);
CREATE INDEX agents_touched_at ON agents (touched_at);

CREATE TABLE event_logs (
    task_id TEXT COLLATE "C" PRIMARY KEY,
    last_seq BIGINT NOT NULL,
    touched_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX event_logs_touched_at ON event_logs (touched_at);
CREATE TABLE events (
    task_id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    is_final BOOLEAN NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);

CREATE TABLE leases (
    context_id TEXT COLLATE "C" PRIMARY KEY,
    owner TEXT COLLATE "C" NOT NULL,
    task_id TEXT COLLATE "C",
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX leases_expiry ON leases (expires_at);

CREATE TABLE task_records (
    task_id TEXT COLLATE "C" PRIMARY KEY,
    context_id TEXT COLLATE "C" NOT NULL,
    owner TEXT COLLATE "C",
    updated_ns BIGINT NOT NULL,
    version BIGINT NOT NULL,
    body TEXT NOT NULL,
    touched_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX task_records_listing ON task_records (updated_ns DESC, task_id);
CREATE INDEX task_records_owner ON task_records (owner, updated_ns DESC, task_id);
CREATE INDEX task_records_context ON task_records (context_id, updated_ns DESC, task_id);
CREATE INDEX task_records_touched_at ON task_records (touched_at);
CREATE TABLE task_cancels (
    task_id TEXT COLLATE "C" PRIMARY KEY,
    raised_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE push_configs (
    task_id TEXT COLLATE "C" NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    body TEXT NOT NULL,
    touched_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, id)
);
CREATE INDEX push_configs_touched_at ON push_configs (touched_at);

CREATE TABLE cache_entries (
    key TEXT COLLATE "C" PRIMARY KEY,
    body TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX cache_entries_expiry ON cache_entries (expires_at);
"#;

/// A checkpoint that builds on the conversation's stored history keeps only
/// the turn's own messages: `messages` holds them (a JSON array) and `body`
/// the checkpoint without its messages (its `storedHistory` says how many
/// of the history's first messages go in front of them). A row written by
/// version 1 has no `messages`: its `body` is the whole checkpoint.
const V2: &str = r#"
ALTER TABLE checkpoints ADD COLUMN messages TEXT;
"#;

/// A lock key for the schema's migrations (stable across builds).
fn lock_key(schema: &str) -> i64 {
    // FNV-1a: the same on every replica, whatever the build.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in format!("looopy-migrations:{schema}").bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// Applies the migrations `schema` lacks (see the module docs).
pub(crate) async fn apply(pool: &PgPool, schema: &str) -> Result<(), PostgresError> {
    let failed = |version: i64| {
        move |source: sqlx::Error| PostgresError::Migration {
            schema: schema.to_owned(),
            version,
            source,
        }
    };
    let mut tx = pool.begin().await.map_err(failed(0))?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(lock_key(schema))
        .execute(&mut *tx)
        .await
        .map_err(failed(0))?;
    // The name was checked (`PostgresConfig::validate`): letters, digits, `_`.
    tx.execute(AssertSqlSafe(format!(
        "CREATE SCHEMA IF NOT EXISTS \"{schema}\""
    )))
    .await
    .map_err(failed(0))?;
    tx.execute(
        "CREATE TABLE IF NOT EXISTS looopy_migrations (
            version BIGINT PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )",
    )
    .await
    .map_err(failed(0))?;
    let found: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM looopy_migrations")
        .fetch_one(&mut *tx)
        .await
        .map_err(failed(0))?;
    if found > SCHEMA_VERSION {
        return Err(PostgresError::SchemaTooNew {
            schema: schema.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for &(version, name, sql) in MIGRATIONS.iter().filter(|(v, _, _)| *v > found) {
        tx.execute(sql).await.map_err(failed(version))?;
        sqlx::query("INSERT INTO looopy_migrations (version, name) VALUES ($1, $2)")
            .bind(version)
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(failed(version))?;
        tracing::info!(schema, version, name, "postgres schema migrated");
    }
    tx.commit().await.map_err(failed(found))?;
    Ok(())
}
