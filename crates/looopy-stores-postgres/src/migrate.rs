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
    (3, "a turn's start and end as functions", V3),
    (4, "execution records", V4),
];

/// The newest version this build knows.
pub const SCHEMA_VERSION: i64 = 4;

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

/// A turn's start and its end as one function each, so that each is one
/// statement (one round trip) and still one transaction: the steps a
/// client-side transaction would send one statement at a time, in the same
/// order and with the same locks. Tables are found through the
/// caller's `search_path` (the schema), as every other statement's are.
///
/// `looopy_append_messages` is the append of `messages.rs` (the history's
/// row bumped and locked, the batch after its old length); it returns the
/// length before the batch.
///
/// `looopy_begin_turn` takes the lease (when `p_owner` is given; a refusal
/// returns `r_refused`, `held` or `stranded`, and writes nothing), reads the
/// agent state (when asked), locks the history's row (made when missing),
/// reads the messages from the caller's mark (when it still holds: same
/// epoch, not longer than the history; else from 0) and appends the input
/// when the mark is the whole history.
///
/// `looopy_commit_turn` applies the held-back artifact writes (parallel
/// arrays; `w_nparts[i]` parts of the flat `w_parts` each), checks the
/// lease (returns `false`, the artifacts kept, when it is not
/// `p_owner`'s), appends the messages, stores the state (when
/// `p_state_body` is given), releases the lease and deletes the checkpoint
/// (when `p_forget` is given), and returns `true`.
const V3: &str = r#"
CREATE FUNCTION looopy_append_messages(p_context TEXT, p_bodies TEXT[], p_new_epoch TEXT)
RETURNS BIGINT LANGUAGE sql AS $$
    WITH h AS (
        INSERT INTO histories AS h (context_id, len, epoch)
        VALUES (p_context, cardinality(p_bodies), p_new_epoch)
        ON CONFLICT (context_id) DO UPDATE SET len = h.len + EXCLUDED.len, touched_at = now()
        RETURNING len
    ), m AS (
        INSERT INTO messages (context_id, seq, body)
        SELECT p_context, (SELECT len FROM h) - cardinality(p_bodies) + t.ord - 1, t.body
        FROM unnest(p_bodies) WITH ORDINALITY AS t(body, ord)
    )
    SELECT len - cardinality(p_bodies) FROM h
$$;

CREATE FUNCTION looopy_begin_turn(
    p_context TEXT,
    p_owner TEXT,
    p_task TEXT,
    p_ttl_ms BIGINT,
    p_load_state BOOLEAN,
    p_known_epoch TEXT,
    p_known_len BIGINT,
    p_input TEXT[],
    p_new_epoch TEXT,
    OUT r_refused TEXT,
    OUT r_held_task TEXT,
    OUT r_state TEXT,
    OUT r_len BIGINT,
    OUT r_epoch TEXT,
    OUT r_from BIGINT,
    OUT r_bodies TEXT[],
    OUT r_saved BOOLEAN
) LANGUAGE plpgsql AS $$
DECLARE
    v_got BOOLEAN;
    v_live BOOLEAN;
BEGIN
    r_len := 0;
    r_epoch := '';
    r_from := 0;
    r_bodies := '{}';
    r_saved := false;
    IF p_owner IS NOT NULL THEN
        -- The outer read sees the row as it was before the statement: what
        -- refused the caller.
        WITH up AS (
            INSERT INTO leases AS l (context_id, owner, task_id, expires_at)
            VALUES (p_context, p_owner, p_task,
                    clock_timestamp() + p_ttl_ms::float8 * interval '1 millisecond')
            ON CONFLICT (context_id) DO UPDATE SET owner = EXCLUDED.owner,
                task_id = EXCLUDED.task_id, expires_at = EXCLUDED.expires_at
            WHERE l.owner = EXCLUDED.owner
               OR (l.task_id IS NULL AND l.expires_at <= clock_timestamp())
            RETURNING true AS got
        )
        SELECT (SELECT got FROM up), old.task_id, old.expires_at > clock_timestamp()
        INTO v_got, r_held_task, v_live
        FROM (SELECT 1) AS one LEFT JOIN leases AS old ON old.context_id = p_context;
        IF v_got IS NOT TRUE THEN
            IF r_held_task IS NOT NULL AND v_live IS FALSE THEN
                r_refused := 'stranded';
            ELSE
                r_refused := 'held';
                r_held_task := NULL;
            END IF;
            RETURN;
        END IF;
        r_held_task := NULL;
    END IF;
    IF p_load_state THEN
        SELECT a.body INTO r_state FROM agents a WHERE a.context_id = p_context;
    END IF;
    -- Locks the history (made when missing, so that it has an epoch to
    -- mark): no append slips in before the input.
    INSERT INTO histories AS h (context_id, len, epoch) VALUES (p_context, 0, p_new_epoch)
    ON CONFLICT (context_id) DO UPDATE SET len = h.len
    RETURNING h.len, h.epoch INTO r_len, r_epoch;
    IF p_known_epoch IS NOT NULL AND p_known_epoch = r_epoch AND p_known_len <= r_len THEN
        r_from := p_known_len;
    END IF;
    SELECT COALESCE(array_agg(m.body ORDER BY m.seq), '{}') INTO r_bodies
    FROM messages m
    WHERE m.context_id = p_context AND m.seq >= r_from AND m.seq < r_len;
    IF cardinality(p_input) > 0 AND p_known_epoch IS NOT NULL
       AND p_known_epoch = r_epoch AND p_known_len = r_len THEN
        PERFORM looopy_append_messages(p_context, p_input, p_new_epoch);
        r_saved := true;
    END IF;
END
$$;

CREATE FUNCTION looopy_commit_turn(
    p_context TEXT,
    p_owner TEXT,
    p_messages TEXT[],
    p_state_context TEXT,
    p_state_owner TEXT,
    p_state_activity_ns BIGINT,
    p_state_body TEXT,
    p_forget TEXT,
    p_new_epoch TEXT,
    p_task TEXT,
    p_now_ns BIGINT,
    w_put BOOLEAN[],
    w_ids TEXT[],
    w_metas TEXT[],
    w_nparts BIGINT[],
    w_parts TEXT[]
) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
DECLARE
    v_off BIGINT := 0;
    v_parts TEXT[];
    v_holder TEXT;
BEGIN
    FOR i IN 1 .. COALESCE(cardinality(w_ids), 0) LOOP
        v_parts := w_parts[v_off + 1 : v_off + w_nparts[i]];
        v_off := v_off + w_nparts[i];
        IF w_put[i] THEN
            INSERT INTO artifacts (context_id, artifact_id, task_id, meta, nparts, created_ns, updated_ns)
            VALUES (p_context, w_ids[i], p_task, w_metas[i], w_nparts[i], p_now_ns, p_now_ns)
            ON CONFLICT (context_id, artifact_id) DO UPDATE SET task_id = EXCLUDED.task_id,
                meta = EXCLUDED.meta, nparts = EXCLUDED.nparts, updated_ns = EXCLUDED.updated_ns,
                touched_at = now();
            DELETE FROM artifact_parts p WHERE p.context_id = p_context AND p.artifact_id = w_ids[i];
            INSERT INTO artifact_parts (context_id, artifact_id, seq, body)
            SELECT p_context, w_ids[i], t.ord - 1, t.body
            FROM unnest(v_parts) WITH ORDINALITY AS t(body, ord);
        ELSE
            WITH a AS (
                INSERT INTO artifacts AS a (context_id, artifact_id, task_id, meta, nparts, created_ns, updated_ns)
                VALUES (p_context, w_ids[i], p_task, w_metas[i], w_nparts[i], p_now_ns, p_now_ns)
                ON CONFLICT (context_id, artifact_id) DO UPDATE SET nparts = a.nparts + EXCLUDED.nparts,
                    updated_ns = EXCLUDED.updated_ns, touched_at = now()
                RETURNING a.nparts
            )
            INSERT INTO artifact_parts (context_id, artifact_id, seq, body)
            SELECT p_context, w_ids[i], (SELECT nparts FROM a) - w_nparts[i] + t.ord - 1, t.body
            FROM unnest(v_parts) WITH ORDINALITY AS t(body, ord);
        END IF;
    END LOOP;
    IF p_owner IS NOT NULL THEN
        SELECT l.owner INTO v_holder FROM leases l WHERE l.context_id = p_context
           AND (l.task_id IS NOT NULL OR l.expires_at > clock_timestamp())
        FOR UPDATE;
        IF v_holder IS DISTINCT FROM p_owner THEN
            -- The artifacts stand, as if written while they streamed.
            RETURN false;
        END IF;
    END IF;
    IF cardinality(p_messages) > 0 THEN
        PERFORM looopy_append_messages(p_context, p_messages, p_new_epoch);
    END IF;
    IF p_state_body IS NOT NULL THEN
        INSERT INTO agents (context_id, owner, activity_ns, body)
        VALUES (p_state_context, p_state_owner, p_state_activity_ns, p_state_body)
        ON CONFLICT (context_id) DO UPDATE SET owner = EXCLUDED.owner,
            activity_ns = EXCLUDED.activity_ns, body = EXCLUDED.body, touched_at = now();
    END IF;
    IF p_owner IS NOT NULL THEN
        DELETE FROM leases l WHERE l.context_id = p_context AND l.owner = p_owner
           AND (l.task_id IS NOT NULL OR l.expires_at > clock_timestamp());
    END IF;
    IF p_forget IS NOT NULL THEN
        DELETE FROM checkpoints c WHERE c.task_id = p_forget;
    END IF;
    RETURN true;
END
$$;
"#;

/// Execution records, one row per turn of a task (`turn` is the record's
/// turn number, 0 when it has none): `started_ns` orders listings,
/// `started_ms` is what the record retention's age compares.
const V4: &str = r#"
CREATE TABLE execution_records (
    task_id TEXT COLLATE "C" NOT NULL,
    turn BIGINT NOT NULL,
    context_id TEXT COLLATE "C" NOT NULL,
    started_ns BIGINT NOT NULL,
    started_ms BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (task_id, turn)
);
CREATE INDEX execution_records_context ON execution_records (context_id, started_ns DESC, task_id);
CREATE INDEX execution_records_started ON execution_records (started_ms);
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
