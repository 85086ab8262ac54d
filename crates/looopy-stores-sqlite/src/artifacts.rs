//! [`SqliteArtifactStore`].

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::store::{ArtifactStore, ArtifactWrite, StoredArtifact};
use looopy_core::{Artifact, Part, StoreError};
use sqlx::Row;
use sqlx::sqlite::{SqliteConnection, SqliteRow};

use crate::backend::{SqliteBackend, now_ms};
use crate::error::Db;

/// Artifacts in the `artifacts` table, one row per artifact with its parts;
/// `ord` keeps the creation order that listings follow. An append reads
/// and rewrites the row in one write transaction, so concurrent appends
/// lose nothing.
#[derive(Debug, Clone)]
pub struct SqliteArtifactStore {
    backend: SqliteBackend,
}

impl SqliteArtifactStore {
    /// The artifact store on `backend`.
    pub fn new(backend: SqliteBackend) -> Self {
        SqliteArtifactStore { backend }
    }
}

fn decode(row: &SqliteRow) -> Result<StoredArtifact, StoreError> {
    let body: &str = row.try_get(0).db("read an artifact")?;
    Ok(serde_json::from_str(body)?)
}

async fn get_in(
    conn: &mut SqliteConnection,
    context_id: &str,
    artifact_id: &str,
) -> Result<Option<StoredArtifact>, StoreError> {
    sqlx::query("SELECT body FROM artifacts WHERE context_id = ? AND artifact_id = ?")
        .bind(context_id)
        .bind(artifact_id)
        .fetch_optional(conn)
        .await
        .db("read an artifact")?
        .as_ref()
        .map(decode)
        .transpose()
}

async fn store_in(conn: &mut SqliteConnection, stored: &StoredArtifact) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO artifacts (context_id, artifact_id, ord, touched_ms, body)
         VALUES (?1, ?2, (SELECT COALESCE(MAX(ord), 0) + 1 FROM artifacts WHERE context_id = ?1), ?3, ?4)
         ON CONFLICT (context_id, artifact_id) DO UPDATE SET touched_ms = ?3, body = ?4",
    )
    .bind(&stored.context_id)
    .bind(&stored.artifact.artifact_id)
    .bind(now_ms())
    .bind(serde_json::to_string(stored)?)
    .execute(conn)
    .await
    .db("write an artifact")?;
    Ok(())
}

/// [`ArtifactStore::put`] within the caller's transaction.
pub(crate) async fn put_in(
    conn: &mut SqliteConnection,
    context_id: &str,
    task_id: &str,
    artifact: &Artifact,
) -> Result<(), StoreError> {
    let now = Utc::now();
    let stored = match get_in(&mut *conn, context_id, &artifact.artifact_id).await? {
        Some(mut stored) => {
            stored.replace(task_id, artifact.clone(), now);
            stored
        }
        None => StoredArtifact::created(context_id, task_id, artifact.clone(), now),
    };
    store_in(conn, &stored).await
}

/// [`ArtifactStore::append_parts`] within the caller's transaction.
pub(crate) async fn append_in(
    conn: &mut SqliteConnection,
    context_id: &str,
    task_id: &str,
    artifact_id: &str,
    parts: &[Part],
) -> Result<(), StoreError> {
    let now = Utc::now();
    let stored = match get_in(&mut *conn, context_id, artifact_id).await? {
        Some(mut stored) => {
            stored.append(parts.iter().cloned(), now);
            stored
        }
        None => StoredArtifact::created(
            context_id,
            task_id,
            Artifact::new(artifact_id, parts.to_vec()),
            now,
        ),
    };
    store_in(conn, &stored).await
}

/// One held-back write, within the caller's transaction.
pub(crate) async fn apply_in(
    conn: &mut SqliteConnection,
    context_id: &str,
    task_id: &str,
    write: &ArtifactWrite,
) -> Result<(), StoreError> {
    match write {
        ArtifactWrite::Put(artifact) => put_in(conn, context_id, task_id, artifact).await,
        ArtifactWrite::Append { artifact_id, parts } => {
            append_in(conn, context_id, task_id, artifact_id, parts).await
        }
    }
}

#[async_trait]
impl ArtifactStore for SqliteArtifactStore {
    async fn put(
        &self,
        context_id: &str,
        task_id: &str,
        artifact: &Artifact,
    ) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        put_in(tx.conn(), context_id, task_id, artifact).await?;
        tx.commit().await
    }

    async fn append_parts(
        &self,
        context_id: &str,
        task_id: &str,
        artifact_id: &str,
        parts: &[Part],
    ) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        append_in(tx.conn(), context_id, task_id, artifact_id, parts).await?;
        tx.commit().await
    }

    async fn get(
        &self,
        context_id: &str,
        artifact_id: &str,
    ) -> Result<Option<StoredArtifact>, StoreError> {
        let mut conn = self.backend.pool().acquire().await.db("connect")?;
        get_in(&mut conn, context_id, artifact_id).await
    }

    async fn list(&self, context_id: &str) -> Result<Vec<StoredArtifact>, StoreError> {
        sqlx::query("SELECT body FROM artifacts WHERE context_id = ? ORDER BY ord")
            .bind(context_id)
            .fetch_all(self.backend.pool())
            .await
            .db("list artifacts")?
            .iter()
            .map(decode)
            .collect()
    }

    async fn delete(&self, context_id: &str, artifact_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        sqlx::query("DELETE FROM artifacts WHERE context_id = ? AND artifact_id = ?")
            .bind(context_id)
            .bind(artifact_id)
            .execute(tx.conn())
            .await
            .db("delete an artifact")?;
        tx.commit().await
    }

    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        sqlx::query("DELETE FROM artifacts WHERE context_id = ?")
            .bind(context_id)
            .execute(tx.conn())
            .await
            .db("clear artifacts")?;
        tx.commit().await
    }
}
