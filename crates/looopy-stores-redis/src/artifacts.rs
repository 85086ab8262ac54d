//! [`RedisArtifactStore`]: per artifact a hash and a list of parts, per
//! context an index in creation order.

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use looopy_core::store::{ArtifactStore, StoredArtifact};
use looopy_core::{Artifact, Part, StoreError};
use serde_json::Value;

use crate::backend::{RedisBackend, Retry};
use crate::error::corrupt;
use crate::keys::escape;
use crate::scripts::{ARTIFACT_APPEND, ARTIFACT_PUT, ARTIFACTS_CLEAR, ARTIFACTS_LIST};

/// Artifacts in Redis. Each artifact is a hash (`meta`: the artifact as JSON
/// without its parts; `task`; `created`; `updated`) and a list of parts (one
/// JSON part per element), so `append_parts` is an `RPUSH` of the new parts
/// only, inside one Lua script that also creates a missing artifact: it
/// costs O(parts appended), and concurrent appends neither interleave nor
/// lose parts. A sorted set per context keeps creation order; `put` on an
/// existing id keeps its place and `created_at`.
#[derive(Debug, Clone)]
pub struct RedisArtifactStore {
    backend: RedisBackend,
}

/// The fields of one artifact, as stored.
type Row = (String, String, String, String, Vec<String>);

pub(crate) fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

fn parse_time(s: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| corrupt(format!("artifact timestamp `{s}`: {e}")))
}

/// The artifact as JSON without its parts.
pub(crate) fn meta_json(artifact: &Artifact) -> Result<String, StoreError> {
    let mut meta = serde_json::to_value(artifact)?;
    if let Value::Object(map) = &mut meta {
        map.remove("parts");
    }
    Ok(meta.to_string())
}

pub(crate) fn parts_json(parts: &[Part]) -> Result<Vec<String>, StoreError> {
    parts
        .iter()
        .map(|p| serde_json::to_string(p).map_err(StoreError::from))
        .collect()
}

fn decode(context_id: &str, row: Row) -> Result<StoredArtifact, StoreError> {
    let (meta, task_id, created, updated, parts) = row;
    let mut artifact: Artifact = serde_json::from_str(&meta)?;
    artifact.parts = parts
        .iter()
        .map(|p| serde_json::from_str(p))
        .collect::<Result<_, _>>()?;
    Ok(StoredArtifact {
        artifact,
        context_id: context_id.to_owned(),
        task_id,
        created_at: parse_time(&created)?,
        updated_at: parse_time(&updated)?,
    })
}

impl RedisArtifactStore {
    /// Artifacts on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisArtifactStore { backend }
    }

    fn invocation<'s>(
        &self,
        script: &'s redis::Script,
        context_id: &str,
        artifact_id: &str,
    ) -> redis::ScriptInvocation<'s> {
        let keys = self.backend.keys();
        let mut call = script.prepare_invoke();
        call.key(keys.artifacts(context_id))
            .key(keys.artifact(context_id, artifact_id))
            .key(keys.artifact_parts(context_id, artifact_id));
        call
    }
}

#[async_trait]
impl ArtifactStore for RedisArtifactStore {
    async fn put(
        &self,
        context_id: &str,
        task_id: &str,
        artifact: &Artifact,
    ) -> Result<(), StoreError> {
        let mut call = self.invocation(&ARTIFACT_PUT, context_id, &artifact.artifact_id);
        call.arg(escape(&artifact.artifact_id).as_ref())
            .arg(meta_json(artifact)?)
            .arg(task_id)
            .arg(time(Utc::now()))
            .arg(self.backend.ttl_ms());
        for part in parts_json(&artifact.parts)? {
            call.arg(part);
        }
        let _: i64 = self.backend.script(&call, Retry::Safe).await?;
        Ok(())
    }

    async fn append_parts(
        &self,
        context_id: &str,
        task_id: &str,
        artifact_id: &str,
        parts: &[Part],
    ) -> Result<(), StoreError> {
        let mut call = self.invocation(&ARTIFACT_APPEND, context_id, artifact_id);
        call.arg(escape(artifact_id).as_ref())
            .arg(meta_json(&Artifact::new(artifact_id, Vec::new()))?)
            .arg(task_id)
            .arg(time(Utc::now()))
            .arg(self.backend.ttl_ms());
        for part in parts_json(parts)? {
            call.arg(part);
        }
        let _: i64 = self.backend.script(&call, Retry::Never).await?;
        Ok(())
    }

    async fn get(
        &self,
        context_id: &str,
        artifact_id: &str,
    ) -> Result<Option<StoredArtifact>, StoreError> {
        let keys = self.backend.keys();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("HMGET")
            .arg(keys.artifact(context_id, artifact_id))
            .arg(&["meta", "task", "created", "updated"])
            .lrange(keys.artifact_parts(context_id, artifact_id), 0, -1);
        type Fields = (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let ((meta, task, created, updated), parts): (Fields, Vec<String>) =
            self.backend.pipe(&pipe, Retry::Safe).await?;
        let (Some(meta), Some(task), Some(created), Some(updated)) = (meta, task, created, updated)
        else {
            return Ok(None);
        };
        decode(context_id, (meta, task, created, updated, parts)).map(Some)
    }

    async fn list(&self, context_id: &str) -> Result<Vec<StoredArtifact>, StoreError> {
        let keys = self.backend.keys();
        let mut call = ARTIFACTS_LIST.prepare_invoke();
        call.key(keys.artifacts(context_id))
            .arg(keys.artifact_base(context_id));
        let rows: Vec<Row> = self.backend.script(&call, Retry::Safe).await?;
        rows.into_iter()
            .map(|row| decode(context_id, row))
            .collect()
    }

    async fn delete(&self, context_id: &str, artifact_id: &str) -> Result<(), StoreError> {
        let keys = self.backend.keys();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .zrem(keys.artifacts(context_id), escape(artifact_id).as_ref())
            .ignore()
            .del(&[
                keys.artifact(context_id, artifact_id),
                keys.artifact_parts(context_id, artifact_id),
            ])
            .ignore();
        let () = self.backend.pipe(&pipe, Retry::Safe).await?;
        Ok(())
    }

    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        let keys = self.backend.keys();
        let mut call = ARTIFACTS_CLEAR.prepare_invoke();
        call.key(keys.artifacts(context_id))
            .arg(keys.artifact_base(context_id));
        let _: i64 = self.backend.script(&call, Retry::Safe).await?;
        Ok(())
    }
}
