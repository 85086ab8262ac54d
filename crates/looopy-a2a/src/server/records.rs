//! `GET /v1/tasks/{id}/record` and `GET /v1/tasks/{id}/records`: a task's
//! execution records, for the task's own principal (the same credentials
//! as the A2A routes). A task runs a turn per message it is sent (after
//! `input-required`, say) and each turn has a record: `/record` answers the
//! latest turn's (or turn `N`'s, with `?turn=N`), `/records` every turn's,
//! oldest first, as `{"records": [...]}`. A task of another principal, a
//! task (or turn) without a record, and a server that keeps no records all
//! answer 404.
//! Each record is served as a
//! [`RecordView`](looopy_core::record::RecordView): the record with the cost
//! estimates of its model calls at the server's prices.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use looopy_core::record::RecordView;
use looopy_core::store::RecordStore;
use serde::Serialize;

use crate::RpcError;
use crate::server::extract::Caller;
use crate::server::state::ServerState;

/// Where the latest (or one) turn's record is served.
pub(crate) const RECORD_ROUTE: &str = "/v1/tasks/{task}/record";

/// Where every turn's record is served.
pub(crate) const RECORDS_ROUTE: &str = "/v1/tasks/{task}/records";

/// The body of [`RECORDS_ROUTE`].
#[derive(Serialize)]
struct TaskRecords {
    records: Vec<RecordView>,
}

/// The turn `?turn=N` asks for; `None` without one. Anything but a whole
/// number is a bad request.
fn turn_asked(uri: &Uri) -> Result<Option<u64>, RpcError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map_err(|e| RpcError::invalid_params(e.body_text()))?;
    let Some((_, value)) = pairs.iter().find(|(k, _)| k == "turn") else {
        return Ok(None);
    };
    value.parse().map(Some).map_err(|_| {
        RpcError::invalid_params(format_args!(
            "`turn` must be a turn number (a whole number, 0 or more), not `{value}`"
        ))
    })
}

/// The record store, once the caller is known to own `task`.
async fn owned_records<'a>(
    state: &'a ServerState,
    principal: &str,
    task: &str,
) -> Result<&'a Arc<dyn RecordStore>, RpcError> {
    let Some(records) = &state.records else {
        return Err(RpcError::task_not_found(task));
    };
    // Another principal's task is not found, as on the A2A routes.
    state.tasks.owned(task, principal).await?;
    Ok(records)
}

fn unreadable(e: impl std::fmt::Display) -> RpcError {
    RpcError::internal(format_args!("the execution record could not be read: {e}"))
}

/// The handler of [`RECORD_ROUTE`].
pub(crate) async fn get_record(
    State(state): State<Arc<ServerState>>,
    Caller(auth): Caller,
    Path(task): Path<String>,
    uri: Uri,
) -> Result<Response, RpcError> {
    let turn = turn_asked(&uri)?;
    let records = owned_records(&state, &auth.principal, &task).await?;
    let found = match turn {
        Some(turn) => records.get_turn(&task, turn).await,
        None => records.get(&task).await,
    };
    match found {
        Ok(Some(record)) => Ok(Json(RecordView::priced(record, &state.prices)).into_response()),
        Ok(None) => Err(RpcError::task_not_found(&task)),
        Err(e) => Err(unreadable(e)),
    }
}

/// The handler of [`RECORDS_ROUTE`].
pub(crate) async fn get_records(
    State(state): State<Arc<ServerState>>,
    Caller(auth): Caller,
    Path(task): Path<String>,
) -> Result<Response, RpcError> {
    let records = owned_records(&state, &auth.principal, &task).await?;
    match records.list_task(&task).await {
        Ok(records) if records.is_empty() => Err(RpcError::task_not_found(&task)),
        Ok(records) => Ok(Json(TaskRecords {
            records: records
                .into_iter()
                .map(|r| RecordView::priced(r, &state.prices))
                .collect(),
        })
        .into_response()),
        Err(e) => Err(unreadable(e)),
    }
}
