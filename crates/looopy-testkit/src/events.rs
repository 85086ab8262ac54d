//! Reading the events of a turn in tests: the one final event, its
//! metadata, the kinds in order.

use futures::{Stream, StreamExt};
use looopy_core::{AgentEvent, EventPayload, StatusMetadata, TurnReport};
use serde_json::{Map, Value};

/// Every event of a stream, until it ends.
pub async fn collect(stream: impl Stream<Item = AgentEvent>) -> Vec<AgentEvent> {
    stream.collect().await
}

/// The kind of each event, in order (`status-update`, `tool-start`, ...).
pub fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(AgentEvent::kind).collect()
}

/// The turn's final event, checking that it is the last one and the only
/// final one. Panics, saying which rule broke, otherwise.
pub fn final_event(events: &[AgentEvent]) -> &AgentEvent {
    let Some(last) = events.last() else {
        panic!("no events");
    };
    assert!(last.is_final(), "the last event is not final: {last:?}");
    assert_eq!(
        events.iter().filter(|e| e.is_final()).count(),
        1,
        "exactly one final event"
    );
    last
}

/// The metadata of the turn's final status as the wire carries it
/// (`finishReason`, the limits reached, the error type ...), checked as
/// [`final_event`] does.
pub fn final_metadata(events: &[AgentEvent]) -> Map<String, Value> {
    match &*final_event(events).payload {
        EventPayload::StatusUpdate { metadata, .. } => metadata.to_map(),
        other => panic!("the final event is not a status update: {other:?}"),
    }
}

/// The report of the turn's final status, checked as [`final_event`] does.
pub fn final_report(events: &[AgentEvent]) -> TurnReport {
    match &*final_event(events).payload {
        EventPayload::StatusUpdate {
            metadata:
                StatusMetadata {
                    report: Some(report),
                    ..
                },
            ..
        } => (**report).clone(),
        other => panic!("the final event carries no turn report: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use looopy_core::{TaskState, TaskStatus, TurnEnd};

    use super::*;

    fn status(state: TaskState, is_final: bool, reason: &str) -> AgentEvent {
        let mut metadata = Map::new();
        metadata.insert("finishReason".into(), reason.into());
        let metadata = StatusMetadata::from_map(metadata);
        AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::StatusUpdate {
                status: TaskStatus::new(state),
                is_final,
                metadata,
            },
        )
    }

    #[tokio::test]
    async fn the_final_events_metadata_is_read_and_a_second_final_is_refused() {
        let working = status(TaskState::Working, false, "");
        let done = status(TaskState::Completed, true, "finished");
        let events = collect(futures::stream::iter(vec![working, done.clone()])).await;
        assert_eq!(kinds(&events), vec!["status-update", "status-update"]);
        assert_eq!(final_metadata(&events)["finishReason"], "finished");
        assert_eq!(final_report(&events).finish_reason, TurnEnd::Finished);

        let twice = vec![done.clone(), done];
        let caught = std::panic::catch_unwind(|| final_event(&twice).kind());
        assert!(caught.is_err(), "two final events are refused");
        let not_last = vec![
            status(TaskState::Completed, true, "x"),
            status(TaskState::Working, false, ""),
        ];
        assert!(std::panic::catch_unwind(|| final_event(&not_last).kind()).is_err());
    }
}
