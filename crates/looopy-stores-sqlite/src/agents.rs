//! [`SqliteAgentStateStore`].

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{AgentState, AgentStateStore};
use sqlx::Row;
use sqlx::sqlite::SqliteConnection;

use crate::backend::{SqliteBackend, nanos, now_ms};
use crate::error::Db;

/// Agent states in the `agent_states` table, indexed by owner and last
/// activity for [`AgentStateStore::list_by_owner`].
#[derive(Debug, Clone)]
pub struct SqliteAgentStateStore {
    backend: SqliteBackend,
}

impl SqliteAgentStateStore {
    /// The agent state store on `backend`.
    pub fn new(backend: SqliteBackend) -> Self {
        SqliteAgentStateStore { backend }
    }
}

/// Stores a state within the caller's transaction.
pub(crate) async fn save_in(
    conn: &mut SqliteConnection,
    state: &AgentState,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO agent_states (context_id, owner, activity_ns, touched_ms, body) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (context_id) DO UPDATE SET owner = ?2, activity_ns = ?3, touched_ms = ?4, body = ?5",
    )
    .bind(&state.context_id)
    .bind(state.owner.as_deref())
    .bind(nanos(state.last_activity))
    .bind(now_ms())
    .bind(serde_json::to_string(state)?)
    .execute(conn)
    .await
    .db("save an agent state")?;
    Ok(())
}

/// The state of a context, read on `conn`.
pub(crate) async fn load_in(
    conn: &mut SqliteConnection,
    context_id: &str,
) -> Result<Option<AgentState>, StoreError> {
    let row = sqlx::query("SELECT body FROM agent_states WHERE context_id = ?")
        .bind(context_id)
        .fetch_optional(conn)
        .await
        .db("load an agent state")?;
    match row {
        Some(row) => {
            let body: &str = row.try_get(0).db("load an agent state")?;
            Ok(Some(serde_json::from_str(body)?))
        }
        None => Ok(None),
    }
}

#[async_trait]
impl AgentStateStore for SqliteAgentStateStore {
    async fn save(&self, state: &AgentState) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        save_in(tx.conn(), state).await?;
        tx.commit().await
    }

    async fn load(&self, context_id: &str) -> Result<Option<AgentState>, StoreError> {
        let mut conn = self.backend.pool().acquire().await.db("connect")?;
        load_in(&mut conn, context_id).await
    }

    async fn delete(&self, context_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        sqlx::query("DELETE FROM agent_states WHERE context_id = ?")
            .bind(context_id)
            .execute(tx.conn())
            .await
            .db("delete an agent state")?;
        tx.commit().await
    }

    async fn list_by_owner(
        &self,
        owner: &str,
        limit: usize,
    ) -> Result<Vec<AgentState>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(
            "SELECT body FROM agent_states WHERE owner = ? ORDER BY activity_ns DESC, context_id ASC LIMIT ?",
        )
        .bind(owner)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.backend.pool())
        .await
        .db("list agent states")?;
        rows.iter()
            .map(|row| {
                let body: &str = row.try_get(0).db("list agent states")?;
                Ok(serde_json::from_str(body)?)
            })
            .collect()
    }
}
