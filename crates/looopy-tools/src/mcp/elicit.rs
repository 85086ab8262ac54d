//! A server's questions for the person (`elicitation/create`, form mode):
//! the call that asked pauses, its turn ends `input-required`, and the
//! answer of the next turn goes to the question (see
//! `looopy_core::elicitation` for the shapes on the wire).
//!
//! Two ways an answer reaches the server:
//! - the call is still paused in this process: the answer goes to the
//!   question it is waiting on, and the call goes on;
//! - it is not (a restart, another replica, a pause longer than the
//!   provider's elicitation timeout): the call runs again, and when its
//!   tool asks the question the answer names (the same
//!   [`request_id`](ElicitationRequest::request_id)), the answer is given
//!   at once, without pausing.
//!
//! Content that does not fit the requested schema is never sent: the
//! question is asked again with the validation error.

use looopy_core::CancellationToken;
use looopy_core::elicitation::{
    ElicitationAction, ElicitationAnswer, ElicitationAnswers, ElicitationRequest,
};
use rmcp::model::{ElicitRequestParams, ElicitResult, ErrorData};
use serde_json::Value;
use tokio::sync::oneshot;

use super::calls::{Notices, Question};

/// The error a server gets when elicitation is off.
pub(crate) fn refused(server: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "elicitation is off for MCP server '{server}': the client does not offer it \
             (turn it on with the server's elicitation setting)"
        ),
        None,
    )
}

/// Handles one `elicitation/create` of `server`: answers it from the answer
/// the caller's turn carries, or hands it to the call (which pauses) and
/// waits for the answer. `token`: the progress token in the request's
/// `_meta`, naming the call; without one, the only running call.
pub(crate) async fn ask(
    notices: &Notices,
    server: &str,
    token: Option<&str>,
    request: ElicitRequestParams,
    cancel: CancellationToken,
) -> Result<ElicitResult, ErrorData> {
    let (message, schema) = match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (
            message,
            serde_json::to_value(&requested_schema).unwrap_or(Value::Null),
        ),
        _ => {
            return Err(ErrorData::invalid_params(
                "only form elicitation is offered, not URL elicitation",
                None,
            ));
        }
    };
    ask_form(notices, server, token, message, schema, cancel).await
}

/// Asks the person `message`, the answer's content of `schema`, on behalf
/// of the call of `server` that `token` names (see [`ask`]): the
/// elicitation of a server, or the client's own question about one of the
/// server's requests (a sampling request that waits for approval).
pub(crate) async fn ask_form(
    notices: &Notices,
    server: &str,
    token: Option<&str>,
    message: String,
    schema: Value,
    cancel: CancellationToken,
) -> Result<ElicitResult, ErrorData> {
    let (respond, answer) = oneshot::channel();
    let asked = notices.with_caller(token, |call| {
        let mut request =
            ElicitationRequest::new(&call.call_id, &call.tool, server, message, schema);
        let carried = call
            .cx
            .deps
            .get::<ElicitationAnswers>()
            .and_then(|answers| answers.for_call(&call.call_id).cloned())
            .filter(|a| !call.answered && a.request_id == request.request_id);
        if let Some(answer) = carried {
            call.answered = true;
            match to_result(&answer, &request) {
                Ok(result) => return Some(result),
                Err(error) => request = request.with_error(error),
            }
        }
        // The call pauses; a call that already ended is not asking.
        let _ = call.asks.send(Question { request, respond });
        None
    });
    match asked {
        None => Err(ErrorData::invalid_request(
            format!(
                "MCP server '{server}' asked a question that belongs to no running tool call \
                 (send the call's progress token in the request's _meta when several run)"
            ),
            None,
        )),
        Some(Some(result)) => Ok(result),
        Some(None) => tokio::select! {
            answer = answer => answer.map_err(|_| ErrorData::internal_error(
                "the question was not answered: the paused call ended (its turn was not \
                 continued within the elicitation timeout, or the client shut down)",
                None,
            )),
            () = cancel.cancelled() => Err(ErrorData::internal_error(
                "the server cancelled its question",
                None,
            )),
        },
    }
}

/// What the server is sent for `answer` to `request`; the validation error
/// when accepted content does not fit the schema.
pub(crate) fn to_result(
    answer: &ElicitationAnswer,
    request: &ElicitationRequest,
) -> Result<ElicitResult, String> {
    Ok(match answer.action {
        ElicitationAction::Accept => {
            let content = request.conform(answer.content.clone().unwrap_or_default())?;
            ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(Value::Object(content))
        }
        ElicitationAction::Decline => ElicitResult::new(rmcp::model::ElicitationAction::Decline),
        ElicitationAction::Cancel => ElicitResult::new(rmcp::model::ElicitationAction::Cancel),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepted_content_is_checked_and_other_actions_pass() {
        let request = ElicitationRequest::new(
            "c",
            "t",
            "s",
            "How many?",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        );
        let good =
            ElicitationAnswer::accept(&request, json!({"n": 2}).as_object().unwrap().clone());
        let result = to_result(&good, &request).unwrap();
        assert_eq!(result.content, Some(json!({"n": 2})));
        let bad =
            ElicitationAnswer::accept(&request, json!({"n": "two"}).as_object().unwrap().clone());
        assert_eq!(
            to_result(&bad, &request).unwrap_err(),
            "n: must be an integer"
        );
        let declined = to_result(&ElicitationAnswer::decline(&request), &request).unwrap();
        assert_eq!(declined.action, rmcp::model::ElicitationAction::Decline);
        assert!(declined.content.is_none());
    }
}
