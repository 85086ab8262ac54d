//! A logged event as an A2A 1.0 `StreamResponse`, written straight from the
//! borrowed event: the JSON that the `a2a-lf` types give (`v1::stream_result`),
//! without building them first. A stream sends each of its turn's events
//! this way, so that an item costs no copy of the event's ids, parts,
//! message or metadata; the typed form stays for everything else (and the
//! tests hold the two to the same JSON).

use std::sync::Arc;

use looopy_core::{
    AgentEvent, Artifact, EventPayload, Message, Part, Role, StatusMetadata, TaskStatus,
};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::timestamp::{Millis, Rfc3339Millis};
use super::v1;

/// A logged event that has a 1.0 stream form (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct StreamUpdate(Arc<AgentEvent>);

impl StreamUpdate {
    /// The event's stream form; `None` for events that never leave (the
    /// ones `v1::stream_result` has no form for).
    pub(crate) fn of(event: &Arc<AgentEvent>) -> Option<Self> {
        matches!(
            *event.payload,
            EventPayload::Task { .. }
                | EventPayload::StatusUpdate { .. }
                | EventPayload::ArtifactUpdate { .. }
        )
        .then(|| StreamUpdate(Arc::clone(event)))
    }
}

impl Serialize for StreamUpdate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let e = &*self.0;
        let ids = Ids {
            task: &e.task_id,
            context: &e.context_id,
        };
        let mut map = serializer.serialize_map(Some(1))?;
        match &*e.payload {
            EventPayload::Task { status, metadata } => map.serialize_entry(
                "task",
                &Update {
                    ids,
                    task_key: "id",
                    status: Some(status),
                    artifact: None,
                    metadata,
                },
            )?,
            EventPayload::StatusUpdate {
                status, metadata, ..
            } => map.serialize_entry(
                "statusUpdate",
                &Update {
                    ids,
                    task_key: "taskId",
                    status: Some(status),
                    artifact: None,
                    metadata,
                },
            )?,
            EventPayload::ArtifactUpdate {
                artifact,
                append,
                last_chunk,
            } => map.serialize_entry(
                "artifactUpdate",
                &Update {
                    ids,
                    task_key: "taskId",
                    status: None,
                    artifact: Some((artifact, *append, *last_chunk)),
                    metadata: &Map::new(),
                },
            )?,
            // `of` lets no other event in.
            _ => {}
        }
        map.end()
    }
}

#[derive(Clone, Copy)]
struct Ids<'a> {
    task: &'a str,
    context: &'a str,
}

/// The object inside the wrapper: a `Task` (its id under `id`), a
/// `TaskStatusUpdateEvent` or a `TaskArtifactUpdateEvent`.
struct Update<'a, M> {
    ids: Ids<'a>,
    task_key: &'static str,
    status: Option<&'a TaskStatus>,
    /// The artifact, `append` and `lastChunk`.
    artifact: Option<(&'a Artifact, bool, bool)>,
    /// A task event's free-form map, or a status update's metadata (a
    /// turn report beside free-form entries).
    metadata: &'a M,
}

impl<M: Metadata> Serialize for Update<'_, M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.task_key, self.ids.task)?;
        map.serialize_entry("contextId", self.ids.context)?;
        if let Some(status) = self.status {
            map.serialize_entry(
                "status",
                &Status {
                    status,
                    ids: self.ids,
                },
            )?;
        }
        if let Some((artifact, append, last_chunk)) = self.artifact {
            map.serialize_entry("artifact", &ArtifactRef(artifact))?;
            map.serialize_entry("append", &append)?;
            map.serialize_entry("lastChunk", &last_chunk)?;
        }
        metadata_entry(&mut map, self.metadata)?;
        map.end()
    }
}

/// Metadata, which may be empty.
trait Metadata: Serialize {
    fn is_empty(&self) -> bool;
}

impl Metadata for Map<String, Value> {
    fn is_empty(&self) -> bool {
        Map::is_empty(self)
    }
}

impl Metadata for StatusMetadata {
    fn is_empty(&self) -> bool {
        StatusMetadata::is_empty(self)
    }
}

/// `metadata`, left out when empty (as the typed form leaves out `None`).
fn metadata_entry<M: SerializeMap>(map: &mut M, metadata: &impl Metadata) -> Result<(), M::Error> {
    if metadata.is_empty() {
        Ok(())
    } else {
        map.serialize_entry("metadata", metadata)
    }
}

struct Status<'a> {
    status: &'a TaskStatus,
    ids: Ids<'a>,
}

impl Serialize for Status<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("state", &v1::state(self.status.state))?;
        if let Some(message) = &self.status.message {
            map.serialize_entry(
                "message",
                &MessageRef {
                    message,
                    ids: self.ids,
                },
            )?;
        }
        // Millisecond precision (spec §5.6.1), as the typed form.
        let timestamp = Rfc3339Millis(&self.status.timestamp, Millis::WhenNonZero);
        map.serialize_entry("timestamp", &timestamp)?;
        map.end()
    }
}

/// A status message, with the task's and context's ids.
struct MessageRef<'a> {
    message: &'a Message,
    ids: Ids<'a>,
}

impl Serialize for MessageRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let m = self.message;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("messageId", &m.message_id)?;
        map.serialize_entry("contextId", self.ids.context)?;
        map.serialize_entry("taskId", self.ids.task)?;
        let role = match m.role {
            Role::User => a2a::Role::User,
            _ => a2a::Role::Agent,
        };
        map.serialize_entry("role", &role)?;
        map.serialize_entry("parts", &Parts(&m.parts))?;
        metadata_entry(&mut map, &m.metadata)?;
        map.end()
    }
}

struct ArtifactRef<'a>(&'a Artifact);

impl Serialize for ArtifactRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("artifactId", &a.artifact_id)?;
        if let Some(name) = &a.name {
            map.serialize_entry("name", name)?;
        }
        if let Some(description) = &a.description {
            map.serialize_entry("description", description)?;
        }
        map.serialize_entry("parts", &Parts(&a.parts))?;
        metadata_entry(&mut map, &a.metadata)?;
        map.end()
    }
}

struct Parts<'a>(&'a [Part]);

impl Serialize for Parts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(PartRef))
    }
}

struct PartRef<'a>(&'a Part);

impl Serialize for PartRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Part::Text { text } => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("text", text)?;
                map.end()
            }
            Part::Data { data } => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("data", data)?;
                map.end()
            }
            // Files (their bytes are decoded and encoded again) and part
            // kinds newer than this code: the typed form, built.
            other => v1::part(other).serialize(serializer),
        }
    }
}
