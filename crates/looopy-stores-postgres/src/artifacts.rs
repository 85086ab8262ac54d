//! [`PostgresArtifactStore`]: an artifact's metadata in one row (its parts
//! counted there) and its parts one row each, so that an append adds rows
//! instead of rewriting the artifact.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use looopy_core::store::{ArtifactStore, ArtifactWrite, StoredArtifact};
use looopy_core::{Artifact, Part, StoreError};
use serde_json::Value;
use sqlx::{PgConnection, Row};

use crate::backend::{PostgresBackend, Retry, int, nanos};
use crate::error::bad_json;

/// An artifact's JSON without its parts.
fn meta_json(artifact: &Artifact) -> Result<String, StoreError> {
    let mut meta = serde_json::to_value(artifact)?;
    if let Value::Object(map) = &mut meta {
        map.remove("parts");
    }
    Ok(meta.to_string())
}

fn parts_json(parts: &[Part]) -> Result<Vec<String>, StoreError> {
    parts
        .iter()
        .map(|p| serde_json::to_string(p).map_err(StoreError::from))
        .collect()
}

/// One prepared write: what [`write`] sends.
pub(crate) struct PreparedWrite {
    /// A put (else an append).
    pub(crate) put: bool,
    /// The artifact.
    pub(crate) artifact_id: String,
    /// Its JSON without the parts.
    pub(crate) meta: String,
    /// Each part's JSON.
    pub(crate) parts: Vec<String>,
}

impl PreparedWrite {
    /// A put of `artifact`.
    fn put(artifact: &Artifact) -> Result<Self, StoreError> {
        Ok(PreparedWrite {
            put: true,
            artifact_id: artifact.artifact_id.clone(),
            meta: meta_json(artifact)?,
            parts: parts_json(&artifact.parts)?,
        })
    }

    /// Serializes `write`.
    pub(crate) fn new(write: &ArtifactWrite) -> Result<Self, StoreError> {
        Ok(match write {
            ArtifactWrite::Put(artifact) => Self::put(artifact)?,
            ArtifactWrite::Append { artifact_id, parts } => PreparedWrite {
                put: false,
                artifact_id: artifact_id.clone(),
                meta: meta_json(&Artifact::new(artifact_id.clone(), Vec::new()))?,
                parts: parts_json(parts)?,
            },
        })
    }
}

/// Applies one write: a put replaces metadata and parts (keeping the
/// creation time and place), an append adds parts after the stored ones
/// (creating the artifact without a name). Call it in a transaction for a
/// put (three statements); an append is one.
pub(crate) async fn write(
    conn: &mut PgConnection,
    context_id: &str,
    task_id: &str,
    w: &PreparedWrite,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let now = nanos(now);
    let n = int(w.parts.len());
    if w.put {
        sqlx::query(
            "INSERT INTO artifacts (context_id, artifact_id, task_id, meta, nparts, created_ns, updated_ns)
             VALUES ($1, $2, $3, $4, $5, $6, $6)
             ON CONFLICT (context_id, artifact_id) DO UPDATE SET task_id = EXCLUDED.task_id,
                 meta = EXCLUDED.meta, nparts = EXCLUDED.nparts, updated_ns = EXCLUDED.updated_ns,
                 touched_at = now()",
        )
        .bind(context_id)
        .bind(&w.artifact_id)
        .bind(task_id)
        .bind(&w.meta)
        .bind(n)
        .bind(now)
        .execute(&mut *conn)
        .await?;
        sqlx::query("DELETE FROM artifact_parts WHERE context_id = $1 AND artifact_id = $2")
            .bind(context_id)
            .bind(&w.artifact_id)
            .execute(&mut *conn)
            .await?;
        sqlx::query(
            "INSERT INTO artifact_parts (context_id, artifact_id, seq, body)
             SELECT $1, $2, t.ord - 1, t.body FROM unnest($3::text[]) WITH ORDINALITY AS t(body, ord)",
        )
        .bind(context_id)
        .bind(&w.artifact_id)
        .bind(&w.parts)
        .execute(&mut *conn)
        .await?;
    } else {
        sqlx::query(
            "WITH a AS (
                INSERT INTO artifacts AS a (context_id, artifact_id, task_id, meta, nparts, created_ns, updated_ns)
                VALUES ($1, $2, $3, $4, $5, $6, $6)
                ON CONFLICT (context_id, artifact_id) DO UPDATE SET nparts = a.nparts + EXCLUDED.nparts,
                    updated_ns = EXCLUDED.updated_ns, touched_at = now()
                RETURNING nparts
            )
            INSERT INTO artifact_parts (context_id, artifact_id, seq, body)
            SELECT $1, $2, (SELECT nparts FROM a) - $5 + t.ord - 1, t.body
            FROM unnest($7::text[]) WITH ORDINALITY AS t(body, ord)",
        )
        .bind(context_id)
        .bind(&w.artifact_id)
        .bind(task_id)
        .bind(&w.meta)
        .bind(n)
        .bind(now)
        .bind(&w.parts)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

const SELECT: &str = "SELECT a.task_id, a.meta, a.created_ns, a.updated_ns,
        COALESCE((SELECT array_agg(p.body ORDER BY p.seq) FROM artifact_parts p
                  WHERE p.context_id = a.context_id AND p.artifact_id = a.artifact_id), '{}') AS parts
    FROM artifacts a";

fn decode(context_id: &str, row: &sqlx::postgres::PgRow) -> Result<StoredArtifact, StoreError> {
    let field = |e: sqlx::Error| StoreError::Serialization {
        message: format!("stored artifact: {e}"),
    };
    let task_id: String = row.try_get(0).map_err(field)?;
    let meta: String = row.try_get(1).map_err(field)?;
    let created: i64 = row.try_get(2).map_err(field)?;
    let updated: i64 = row.try_get(3).map_err(field)?;
    let parts: Vec<String> = row.try_get(4).map_err(field)?;
    let mut artifact: Artifact =
        serde_json::from_str(&meta).map_err(|e| bad_json("artifact", e))?;
    artifact.parts = parts
        .iter()
        .map(|p| serde_json::from_str(p).map_err(|e| bad_json("artifact part", e)))
        .collect::<Result<_, _>>()?;
    Ok(StoredArtifact {
        artifact,
        context_id: context_id.to_owned(),
        task_id,
        created_at: DateTime::from_timestamp_nanos(created),
        updated_at: DateTime::from_timestamp_nanos(updated),
    })
}

/// Artifacts in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresArtifactStore {
    backend: PostgresBackend,
}

impl PostgresArtifactStore {
    /// The store on `backend`.
    pub fn new(backend: PostgresBackend) -> Self {
        PostgresArtifactStore { backend }
    }
}

#[async_trait]
impl ArtifactStore for PostgresArtifactStore {
    async fn put(
        &self,
        context_id: &str,
        task_id: &str,
        artifact: &Artifact,
    ) -> Result<(), StoreError> {
        let w = PreparedWrite::put(artifact)?;
        let pool = self.backend.pool();
        let w = &w;
        self.backend
            .run(Retry::Safe, || async move {
                let mut tx = pool.begin().await?;
                write(&mut tx, context_id, task_id, w, Utc::now()).await?;
                tx.commit().await
            })
            .await
    }

    async fn append_parts(
        &self,
        context_id: &str,
        task_id: &str,
        artifact_id: &str,
        parts: &[Part],
    ) -> Result<(), StoreError> {
        let w = PreparedWrite {
            put: false,
            artifact_id: artifact_id.to_owned(),
            meta: meta_json(&Artifact::new(artifact_id, Vec::new()))?,
            parts: parts_json(parts)?,
        };
        let pool = self.backend.pool();
        let w = &w;
        // Not repeated once sent: the parts may have landed.
        self.backend
            .run(Retry::Never, || async move {
                let mut conn = pool.acquire().await?;
                write(&mut conn, context_id, task_id, w, Utc::now()).await
            })
            .await
    }

    async fn get(
        &self,
        context_id: &str,
        artifact_id: &str,
    ) -> Result<Option<StoredArtifact>, StoreError> {
        let pool = self.backend.pool();
        let row = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "{SELECT} WHERE a.context_id = $1 AND a.artifact_id = $2"
                )))
                .bind(context_id)
                .bind(artifact_id)
                .fetch_optional(pool)
                .await
            })
            .await?;
        row.as_ref().map(|r| decode(context_id, r)).transpose()
    }

    async fn list(&self, context_id: &str) -> Result<Vec<StoredArtifact>, StoreError> {
        let pool = self.backend.pool();
        let rows = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "{SELECT} WHERE a.context_id = $1 ORDER BY a.ord"
                )))
                .bind(context_id)
                .fetch_all(pool)
                .await
            })
            .await?;
        rows.iter().map(|r| decode(context_id, r)).collect()
    }

    async fn delete(&self, context_id: &str, artifact_id: &str) -> Result<(), StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "WITH p AS (DELETE FROM artifact_parts WHERE context_id = $1 AND artifact_id = $2)
                     DELETE FROM artifacts WHERE context_id = $1 AND artifact_id = $2",
                )
                .bind(context_id)
                .bind(artifact_id)
                .execute(pool)
                .await
            })
            .await?;
        Ok(())
    }

    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "WITH p AS (DELETE FROM artifact_parts WHERE context_id = $1)
                     DELETE FROM artifacts WHERE context_id = $1",
                )
                .bind(context_id)
                .execute(pool)
                .await
            })
            .await?;
        Ok(())
    }
}
