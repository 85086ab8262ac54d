//! [`PostgresAgentStateStore`]: one row a conversation, with its owner and
//! last activity in columns of their own for `list_by_owner`.

use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{AgentState, AgentStateStore};
use sqlx::PgConnection;

use crate::backend::{PostgresBackend, Retry, int, nanos};
use crate::error::bad_json;

/// Stores (replaces) `state`; one statement.
pub(crate) async fn save_state(
    conn: &mut PgConnection,
    state: &AgentState,
    body: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO agents (context_id, owner, activity_ns, body) VALUES ($1, $2, $3, $4)
         ON CONFLICT (context_id) DO UPDATE SET owner = EXCLUDED.owner,
             activity_ns = EXCLUDED.activity_ns, body = EXCLUDED.body, touched_at = now()",
    )
    .bind(&state.context_id)
    .bind(state.owner.as_deref())
    .bind(nanos(state.last_activity))
    .bind(body)
    .execute(conn)
    .await?;
    Ok(())
}

/// The stored state of `context_id`, as JSON.
pub(crate) async fn load_state(
    conn: &mut PgConnection,
    context_id: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT body FROM agents WHERE context_id = $1")
        .bind(context_id)
        .fetch_optional(conn)
        .await
}

/// A state from its JSON.
pub(crate) fn decode_state(body: &str) -> Result<AgentState, StoreError> {
    serde_json::from_str(body).map_err(|e| bad_json("agent state", e))
}

/// Agent lifecycle metadata in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresAgentStateStore {
    backend: PostgresBackend,
}

impl PostgresAgentStateStore {
    /// The store on `backend`.
    pub fn new(backend: PostgresBackend) -> Self {
        PostgresAgentStateStore { backend }
    }
}

#[async_trait]
impl AgentStateStore for PostgresAgentStateStore {
    async fn save(&self, state: &AgentState) -> Result<(), StoreError> {
        let body = serde_json::to_string(state)?;
        let pool = self.backend.pool();
        let body = &body;
        self.backend
            .run(Retry::Safe, || async move {
                let mut conn = pool.acquire().await?;
                save_state(&mut conn, state, body).await
            })
            .await
    }

    async fn save_shared(&self, state: &Arc<AgentState>) -> Result<(), StoreError> {
        self.save(state).await
    }

    async fn load(&self, context_id: &str) -> Result<Option<AgentState>, StoreError> {
        let pool = self.backend.pool();
        let body = self
            .backend
            .run(Retry::Safe, || async move {
                let mut conn = pool.acquire().await?;
                load_state(&mut conn, context_id).await
            })
            .await?;
        body.as_deref().map(decode_state).transpose()
    }

    async fn delete(&self, context_id: &str) -> Result<(), StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query("DELETE FROM agents WHERE context_id = $1")
                    .bind(context_id)
                    .execute(pool)
                    .await
            })
            .await?;
        Ok(())
    }

    async fn list_by_owner(
        &self,
        owner: &str,
        limit: usize,
    ) -> Result<Vec<AgentState>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let pool = self.backend.pool();
        let limit = int(limit);
        let bodies: Vec<String> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar(
                    "SELECT body FROM agents WHERE owner = $1
                     ORDER BY activity_ns DESC, context_id LIMIT $2",
                )
                .bind(owner)
                .bind(limit)
                .fetch_all(pool)
                .await
            })
            .await?;
        bodies.iter().map(|b| decode_state(b)).collect()
    }
}
