//! `GET /v1/tasks/{id}/record`: a task's execution record, for the task's
//! own principal (the same credentials as the A2A routes), with the cost
//! estimates of its model calls beside it (a
//! [`RecordView`](looopy_core::record::RecordView) at the server's prices).
//! A task of another principal, a task without a record, and a server that
//! keeps no records all answer 404.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use looopy_core::record::RecordView;

use crate::RpcError;
use crate::server::extract::Caller;
use crate::server::state::ServerState;

/// Where the route is served.
pub(crate) const RECORD_ROUTE: &str = "/v1/tasks/{task}/record";

/// The handler of [`RECORD_ROUTE`].
pub(crate) async fn get_record(
    State(state): State<Arc<ServerState>>,
    Caller(auth): Caller,
    Path(task): Path<String>,
) -> Result<Response, RpcError> {
    let Some(records) = &state.records else {
        return Err(RpcError::task_not_found(&task));
    };
    // Another principal's task is not found, as on the A2A routes.
    state.tasks.owned(&task, &auth.principal).await?;
    match records.get(&task).await {
        Ok(Some(record)) => Ok(Json(RecordView::priced(record, &state.prices)).into_response()),
        Ok(None) => Err(RpcError::task_not_found(&task)),
        Err(e) => Err(RpcError::internal(format_args!(
            "the execution record could not be read: {e}"
        ))),
    }
}
