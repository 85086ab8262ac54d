//! [`StoredEvent`]: an event as an [`EventLog`](super::EventLog) stored it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::event::AgentEvent;

/// An event as the log stored it, with its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Position in the task's log; ids of one task sort in append order as
    /// the log compares them (opaque to callers: pass them back as `after`).
    pub id: String,
    /// The event, shared: a log that keeps events in memory hands every
    /// reader the one it stored instead of a copy.
    pub event: Arc<AgentEvent>,
}
