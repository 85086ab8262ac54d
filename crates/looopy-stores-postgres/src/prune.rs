//! Retention: what outlived its lifetime is deleted by a periodic prune,
//! in batches of at most `prune_batch` rows (or conversations) a
//! statement, so that it never holds many locks nor a long transaction.
//!
//! - checkpoints `task_ttl_secs` after their last save;
//! - with `ttl_secs`, conversations (history, artifacts), agent states,
//!   event logs, task records and their cancel flags, and push configs
//!   that long after their last write; a conversation whose turn still
//!   holds its lease is kept;
//! - cache entries and taskless leases once they expired.
//!
//! Rows are picked with `FOR UPDATE SKIP LOCKED`, so replicas pruning at
//! once split the work instead of queueing on each other.

use looopy_core::StoreError;

use crate::backend::{PostgresBackend, Retry};

/// What one prune deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PruneReport {
    /// Checkpoints.
    pub checkpoints: u64,
    /// Conversation histories.
    pub conversations: u64,
    /// Artifacts.
    pub artifacts: u64,
    /// Agent states.
    pub agent_states: u64,
    /// Event logs.
    pub event_logs: u64,
    /// Task records.
    pub task_records: u64,
    /// Push configs.
    pub push_configs: u64,
    /// Cache entries.
    pub cache_entries: u64,
    /// Expired leases without a turn.
    pub leases: u64,
}

/// At most this many batches a table in one prune: a prune ends even when
/// writers outpace it; the next one goes on.
const MAX_BATCHES: usize = 100;

const CHECKPOINTS: &str = "WITH doomed AS (
        SELECT task_id FROM checkpoints
        WHERE saved_at < now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM checkpoints WHERE task_id IN (SELECT task_id FROM doomed)";

const CONVERSATIONS: &str = "WITH doomed AS (
        SELECT context_id FROM histories h
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
          AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.context_id = h.context_id)
        LIMIT $2 FOR UPDATE SKIP LOCKED),
    m AS (DELETE FROM messages WHERE context_id IN (SELECT context_id FROM doomed))
    DELETE FROM histories WHERE context_id IN (SELECT context_id FROM doomed)";

const ARTIFACTS: &str = "WITH doomed AS (
        SELECT context_id, artifact_id FROM artifacts a
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
          AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.context_id = a.context_id)
        LIMIT $2 FOR UPDATE SKIP LOCKED),
    p AS (DELETE FROM artifact_parts WHERE (context_id, artifact_id) IN (SELECT context_id, artifact_id FROM doomed))
    DELETE FROM artifacts WHERE (context_id, artifact_id) IN (SELECT context_id, artifact_id FROM doomed)";

const AGENTS: &str = "WITH doomed AS (
        SELECT context_id FROM agents a
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
          AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.context_id = a.context_id)
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM agents WHERE context_id IN (SELECT context_id FROM doomed)";

const EVENT_LOGS: &str = "WITH doomed AS (
        SELECT task_id FROM event_logs
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED),
    e AS (DELETE FROM events WHERE task_id IN (SELECT task_id FROM doomed))
    DELETE FROM event_logs WHERE task_id IN (SELECT task_id FROM doomed)";

const TASK_RECORDS: &str = "WITH doomed AS (
        SELECT task_id FROM task_records
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED),
    c AS (DELETE FROM task_cancels WHERE task_id IN (SELECT task_id FROM doomed))
    DELETE FROM task_records WHERE task_id IN (SELECT task_id FROM doomed)";

const PUSH_CONFIGS: &str = "WITH doomed AS (
        SELECT task_id, id FROM push_configs
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM push_configs WHERE (task_id, id) IN (SELECT task_id, id FROM doomed)";

const CACHE: &str = "WITH doomed AS (
        SELECT key FROM cache_entries WHERE expires_at <= now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM cache_entries WHERE key IN (SELECT key FROM doomed)";

const LEASES: &str = "WITH doomed AS (
        SELECT context_id FROM leases
        WHERE task_id IS NULL AND expires_at <= now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM leases WHERE context_id IN (SELECT context_id FROM doomed)";

/// Deletes in batches with `sql` (bound to the age in milliseconds and the
/// batch size) until a batch deletes less than a whole one.
async fn batches(
    backend: &PostgresBackend,
    sql: &'static str,
    age_ms: i64,
) -> Result<u64, StoreError> {
    let pool = backend.pool();
    let batch = i64::from(backend.config().prune_batch);
    let mut deleted = 0;
    for _ in 0..MAX_BATCHES {
        let done = backend
            .run(Retry::Safe, || async move {
                sqlx::query(sql)
                    .bind(age_ms)
                    .bind(batch)
                    .execute(pool)
                    .await
            })
            .await?
            .rows_affected();
        deleted += done;
        if done < u64::try_from(batch).unwrap_or(u64::MAX) {
            break;
        }
    }
    Ok(deleted)
}

/// One prune (see the module docs).
pub(crate) async fn run(backend: &PostgresBackend) -> Result<PruneReport, StoreError> {
    let mut report = PruneReport::default();
    let task_ttl = backend.task_ttl_ms();
    if task_ttl > 0 {
        report.checkpoints = batches(backend, CHECKPOINTS, task_ttl).await?;
    }
    let ttl = backend.ttl_ms();
    if ttl > 0 {
        report.conversations = batches(backend, CONVERSATIONS, ttl).await?;
        report.artifacts = batches(backend, ARTIFACTS, ttl).await?;
        report.agent_states = batches(backend, AGENTS, ttl).await?;
        report.event_logs = batches(backend, EVENT_LOGS, ttl).await?;
        report.task_records = batches(backend, TASK_RECORDS, ttl).await?;
        report.push_configs = batches(backend, PUSH_CONFIGS, ttl).await?;
    }
    report.cache_entries = batches(backend, CACHE, 0).await?;
    report.leases = batches(backend, LEASES, 0).await?;
    Ok(report)
}
