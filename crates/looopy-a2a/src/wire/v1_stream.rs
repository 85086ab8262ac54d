//! A logged event as an A2A 1.0 `StreamResponse`, written straight from the
//! borrowed event into the bytes sent. This is the one 1.0 encoder of an
//! event: a stream sends each of its turn's events this way, so that an
//! item costs no copy of the event's ids, parts, message or metadata, and
//! its fields are written by the small writer in `json` rather than serde's
//! map machinery. Its JSON is the official `a2a-lf` types' JSON for the
//! same event: the tests (in `wire/mod.rs`) build those types from each
//! kind of event and compare. Tasks and messages (the first item of a task
//! stream, a direct reply) are the official types, built in `v1`.

use std::sync::Arc;

use looopy_core::{
    AgentEvent, Artifact, EventPayload, Message, Part, Role, StatusMetadata, TaskStatus,
};
use serde::ser::{Error as _, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::json::{self, Object};
use super::timestamp::{self, Millis};
use super::v1;

/// A logged event that has a 1.0 stream form (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct StreamUpdate(Arc<AgentEvent>);

impl StreamUpdate {
    /// The event's stream form; `None` for events that never leave (any
    /// but a task, status or artifact event).
    pub(crate) fn of(event: &Arc<AgentEvent>) -> Option<Self> {
        matches!(
            *event.payload,
            EventPayload::Task { .. }
                | EventPayload::StatusUpdate { .. }
                | EventPayload::ArtifactUpdate { .. }
        )
        .then(|| StreamUpdate(Arc::clone(event)))
    }

    /// Writes the item's JSON at the end of `out`.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        let e = &*self.0;
        let ids = Ids {
            task: &e.task_id,
            context: &e.context_id,
        };
        let mut wrapper = Object::open(out);
        match &*e.payload {
            EventPayload::Task { status, metadata } => Update {
                ids,
                task_key: "id",
                status: Some(status),
                artifact: None,
                metadata,
            }
            .write(wrapper.key("task")),
            EventPayload::StatusUpdate {
                status, metadata, ..
            } => Update {
                ids,
                task_key: "taskId",
                status: Some(status),
                artifact: None,
                metadata,
            }
            .write(wrapper.key("statusUpdate")),
            EventPayload::ArtifactUpdate {
                artifact,
                append,
                last_chunk,
            } => Update {
                ids,
                task_key: "taskId",
                status: None,
                artifact: Some((artifact, *append, *last_chunk)),
                metadata: &Map::new(),
            }
            .write(wrapper.key("artifactUpdate")),
            // `of` lets no other event in.
            _ => {}
        }
        wrapper.end();
    }
}

/// The same JSON for serde's other writers (a `Value` for the gRPC binding
/// and push bodies; not on a stream's SSE path).
impl Serialize for StreamUpdate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = Vec::with_capacity(256);
        self.write_json(&mut out);
        let text = String::from_utf8(out).map_err(S::Error::custom)?;
        RawValue::from_string(text)
            .map_err(S::Error::custom)?
            .serialize(serializer)
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

impl<M: Metadata> Update<'_, M> {
    fn write(&self, out: &mut Vec<u8>) {
        let mut o = Object::open(out);
        o.string(self.task_key, self.ids.task);
        o.string("contextId", self.ids.context);
        if let Some(status) = self.status {
            write_status(o.key("status"), status, self.ids);
        }
        if let Some((artifact, append, last_chunk)) = self.artifact {
            write_artifact(o.key("artifact"), artifact);
            o.bool("append", append);
            o.bool("lastChunk", last_chunk);
        }
        metadata_field(&mut o, self.metadata);
        o.end();
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
fn metadata_field(o: &mut Object<'_>, metadata: &impl Metadata) {
    if !metadata.is_empty() {
        o.value("metadata", metadata);
    }
}

fn write_status(out: &mut Vec<u8>, status: &TaskStatus, ids: Ids<'_>) {
    let mut o = Object::open(out);
    o.value("state", &v1::state(status.state));
    if let Some(message) = &status.message {
        write_message(o.key("message"), message, ids);
    }
    // Millisecond precision (spec §5.6.1), as the typed form.
    timestamp::write_json(o.key("timestamp"), &status.timestamp, Millis::WhenNonZero);
    o.end();
}

/// A status message, with the task's and context's ids.
fn write_message(out: &mut Vec<u8>, m: &Message, ids: Ids<'_>) {
    let mut o = Object::open(out);
    o.string("messageId", &m.message_id);
    o.string("contextId", ids.context);
    o.string("taskId", ids.task);
    let role = match m.role {
        Role::User => a2a::Role::User,
        _ => a2a::Role::Agent,
    };
    o.value("role", &role);
    write_parts(o.key("parts"), &m.parts);
    metadata_field(&mut o, &m.metadata);
    o.end();
}

fn write_artifact(out: &mut Vec<u8>, a: &Artifact) {
    let mut o = Object::open(out);
    o.string("artifactId", &a.artifact_id);
    if let Some(name) = &a.name {
        o.string("name", name);
    }
    if let Some(description) = &a.description {
        o.string("description", description);
    }
    write_parts(o.key("parts"), &a.parts);
    metadata_field(&mut o, &a.metadata);
    o.end();
}

fn write_parts(out: &mut Vec<u8>, parts: &[Part]) {
    out.push(b'[');
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match part {
            Part::Text { text } => {
                let mut o = Object::open(out);
                o.string("text", text);
                o.end();
            }
            Part::Data { data } => {
                let mut o = Object::open(out);
                o.value("data", data);
                o.end();
            }
            // Files (their bytes are decoded and encoded again) and part
            // kinds newer than this code: the typed form, built.
            other => json::value(out, &v1::part(other)),
        }
    }
    out.push(b']');
}
