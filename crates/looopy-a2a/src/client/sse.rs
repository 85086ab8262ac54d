//! Reading an SSE response into stream items.

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;

use super::{A2aClientError, A2aStream, Answer, StreamItem, rpc_error};
use crate::jsonrpc;
use crate::version::ProtocolVersion;
use crate::wire;

/// The items of an SSE response (or the error of a JSON one).
pub(super) async fn events(
    version: ProtocolVersion,
    answer: Answer,
) -> Result<A2aStream, A2aClientError> {
    let response = match answer {
        Answer::Stream(response) => response,
        Answer::Json(value) => {
            return Err(match jsonrpc::into_result(value) {
                Err(e) => rpc_error(e),
                Ok(_) => A2aClientError::Decode("expected an event stream".into()),
            });
        }
    };
    let stream = response.bytes_stream().eventsource().map(move |item| {
        let event =
            item.map_err(|e| A2aClientError::Transport(crate::client::TransportError::new(e)))?;
        let value: Value =
            serde_json::from_str(&event.data).map_err(|e| A2aClientError::Decode(e.to_string()))?;
        let result = jsonrpc::into_result(value).map_err(rpc_error)?;
        let decoded = wire::decode_stream_event(version, result).map_err(A2aClientError::Decode)?;
        Ok(StreamItem {
            id: (!event.id.is_empty()).then_some(event.id),
            event: decoded,
        })
    });
    Ok(stream.boxed())
}
