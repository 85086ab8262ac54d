//! Reading an SSE response into stream items.

use eventsource_stream::Eventsource;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde_json::Value;

use super::error::{A2aClientError, TransportError, rpc_error};
use crate::jsonrpc;
use crate::model::StreamEvent;
use crate::version::ProtocolVersion;
use crate::wire;

/// One item of a stream with its SSE event id (pass the last one seen to
/// [`A2aClient::resubscribe`](crate::A2aClient::resubscribe) to get only
/// what came after it).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamItem {
    /// The SSE `id:` (the server's event log id), when the event had one.
    pub id: Option<String>,
    /// The item.
    pub event: StreamEvent,
}

/// The items of a stream, until the server closes it (after the turn's end).
pub type A2aStream = BoxStream<'static, Result<StreamItem, A2aClientError>>;

/// The items of an SSE response, each decoded in `version`.
pub(super) fn events(version: ProtocolVersion, response: reqwest::Response) -> A2aStream {
    response
        .bytes_stream()
        .eventsource()
        .map(move |item| {
            let event = item.map_err(|e| A2aClientError::Transport(TransportError::new(e)))?;
            let value: Value = serde_json::from_str(&event.data)
                .map_err(|e| A2aClientError::Decode(e.to_string()))?;
            let result = jsonrpc::into_result(value).map_err(rpc_error)?;
            let decoded =
                wire::decode_stream_event(version, result).map_err(A2aClientError::Decode)?;
            Ok(StreamItem {
                id: (!event.id.is_empty()).then_some(event.id),
                event: decoded,
            })
        })
        .boxed()
}
