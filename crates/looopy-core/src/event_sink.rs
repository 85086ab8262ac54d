//! [`EventSink`]: how a tool adds events to the turn that runs it.

use std::fmt;
use std::sync::Arc;

use crate::event::EventPayload;

/// Adds events to a turn's stream, after the events emitted so far. The
/// loop puts one in the [`TurnContext`](crate::TurnContext) of every tool
/// call (`cx.events`), so that a tool can report what happens while it
/// runs (a remote agent's events, for instance).
#[derive(Clone)]
pub struct EventSink(Arc<dyn Fn(EventPayload) + Send + Sync>);

impl EventSink {
    /// A sink that hands every payload to `f`.
    pub fn new(f: impl Fn(EventPayload) + Send + Sync + 'static) -> Self {
        EventSink(Arc::new(f))
    }

    /// Adds an event with this payload to the turn.
    pub fn emit(&self, payload: EventPayload) {
        (self.0)(payload)
    }
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventSink")
    }
}
