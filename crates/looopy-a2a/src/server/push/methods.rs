//! The push config methods, and configs given with a message.

use std::sync::Arc;

use looopy_core::store::{PushConfig, StoreError};
use looopy_core::{AuthContext, TaskState};
use serde_json::Value;

use super::config::{self, ConfigInput, ConfigQuery};
use super::delivery::Push;
use super::ssrf;
use crate::RpcError;
use crate::server::state::ServerState;
use crate::server::tasks::Started;
use crate::version::ProtocolVersion;

fn store_error(e: StoreError) -> RpcError {
    RpcError::internal(format!("push config store: {e}"))
}

fn config_not_found(task_id: &str, id: &str) -> RpcError {
    // As the official SDKs answer: the task's config is not there.
    RpcError::new(
        a2a::error_code::TASK_NOT_FOUND,
        "Push notification config not found",
    )
    .with_meta("taskId", task_id)
    .with_meta("configId", id)
}

/// Checks a webhook URL (see `ssrf.rs`): -32602 when refused.
async fn check_url(state: &ServerState, url: &str) -> Result<(), RpcError> {
    let allow = state
        .push
        .as_ref()
        .is_some_and(|p| p.settings.allow_private_webhooks);
    ssrf::check_url(url, allow)
        .await
        .map(drop)
        .map_err(|e| RpcError::invalid_params(format!("url: {e}")).with_meta("field", "url"))
}

/// The push settings, or -32003 when this server sends no push
/// notifications.
fn on(state: &ServerState) -> Result<&Arc<Push>, RpcError> {
    state.push.as_ref().ok_or_else(RpcError::push_not_supported)
}

/// Stores a config for a task the caller may see, and follows the task's
/// running turn for it.
pub(crate) async fn create(
    state: &ServerState,
    auth: &AuthContext,
    v: ProtocolVersion,
    task_id: String,
    input: ConfigInput,
) -> Result<PushConfig, RpcError> {
    let push = on(state)?;
    let record = state.tasks.owned(&task_id, &auth.principal).await?;
    check_url(state, &input.url).await?;
    let config = input.into_config(&task_id, v)?;
    put_checked(state, &config).await?;
    // A turn that runs now: its updates from here on go to the new
    // webhook too.
    if matches!(
        record.status.state,
        TaskState::Submitted | TaskState::Working
    ) {
        push.watch(
            Arc::clone(&state.tasks),
            &task_id,
            record.turn_start_event_id.clone(),
            record.last_event_id.clone(),
            state.tasks.reader(&task_id),
        );
    }
    push.touch(&task_id);
    Ok(config)
}

/// One config of a task the caller may see.
pub(crate) async fn get(
    state: &ServerState,
    auth: &AuthContext,
    v: ProtocolVersion,
    q: &ConfigQuery,
) -> Result<PushConfig, RpcError> {
    let push = on(state)?;
    state.tasks.owned(&q.task_id, &auth.principal).await?;
    let id = q.id.as_deref().unwrap_or(&q.task_id);
    let found = match push.store.get(&q.task_id, id).await.map_err(store_error)? {
        Some(c) => Some(c),
        // 0.3: the task's first config when the id is left out or
        // unknown, as the 0.3 SDK answers (it ignores the id; the
        // 0.3 TCK asks for "default" after setting a config
        // without one).
        None if q.id.is_none() || v == ProtocolVersion::V0_3 => push
            .store
            .list(&q.task_id)
            .await
            .map_err(store_error)?
            .into_iter()
            .next(),
        None => None,
    };
    found.ok_or_else(|| config_not_found(&q.task_id, id))
}

/// Every config of a task the caller may see.
pub(crate) async fn list(
    state: &ServerState,
    auth: &AuthContext,
    q: &ConfigQuery,
) -> Result<Vec<PushConfig>, RpcError> {
    let push = on(state)?;
    state.tasks.owned(&q.task_id, &auth.principal).await?;
    push.store.list(&q.task_id).await.map_err(store_error)
}

/// Deletes a config of a task the caller may see (one that is not there
/// is deleted already).
pub(crate) async fn delete(
    state: &ServerState,
    auth: &AuthContext,
    v: ProtocolVersion,
    q: ConfigQuery,
) -> Result<(), RpcError> {
    let push = on(state)?;
    state.tasks.owned(&q.task_id, &auth.principal).await?;
    let Some(id) = q.id else {
        let field = match v {
            ProtocolVersion::V1_0 => "id",
            ProtocolVersion::V0_3 => "pushNotificationConfigId",
        };
        return Err(
            RpcError::invalid_params(format!("{field}: required")).with_meta("field", field)
        );
    };
    push.store
        .delete(&q.task_id, &id)
        .await
        .map_err(store_error)?;
    push.touch(&q.task_id);
    Ok(())
}

/// Stores a config unless the task has too many already.
async fn put_checked(state: &ServerState, config: &PushConfig) -> Result<(), RpcError> {
    let Some(push) = &state.push else {
        return Err(RpcError::push_not_supported());
    };
    let existing = push
        .store
        .list(&config.task_id)
        .await
        .map_err(store_error)?;
    let max = push.settings.max_configs_per_task;
    if existing.len() >= max && !existing.iter().any(|c| c.id == config.id) {
        return Err(RpcError::invalid_params(format!(
            "the task has {max} push notification configs already (the most this server keeps)"
        )));
    }
    push.store.put(config).await.map_err(store_error)
}

/// A config given with a message, checked before the turn starts.
pub(crate) struct Inline {
    input: ConfigInput,
    version: ProtocolVersion,
}

/// Reads and checks the config a message came with (none: `Ok(None)`).
/// -32003 when this server sends no push notifications.
pub(crate) async fn inline(
    state: &ServerState,
    v: ProtocolVersion,
    value: Option<Value>,
) -> Result<Option<Inline>, RpcError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    if state.push.is_none() {
        return Err(RpcError::push_not_supported());
    }
    let input = config::decode_inline(v, value)?;
    // Checked in full before the turn starts (the task id comes later).
    input.clone().into_config("task", v)?;
    check_url(state, &input.url).await?;
    Ok(Some(Inline { input, version: v }))
}

/// After a turn started: stores the config the message came with, and
/// follows the turn for the task's webhooks.
pub(crate) async fn started(
    state: &ServerState,
    started: &Started,
    inline: Option<Inline>,
) -> Result<(), RpcError> {
    let Some(push) = &state.push else {
        return Ok(());
    };
    if let Some(Inline { input, version }) = inline {
        let config = input.into_config(&started.task_id, version)?;
        put_checked(state, &config).await?;
    }
    push.watch(
        Arc::clone(&state.tasks),
        &started.task_id,
        started.after.clone(),
        started.after.clone(),
        Some(started.reader.clone()),
    );
    Ok(())
}
