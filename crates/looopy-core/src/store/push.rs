//! [`PushConfigStore`]: where a task's push notifications go (A2A webhooks).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::StoreError;

/// How the server authenticates itself to a webhook: an `Authorization`
/// header `<scheme> <credentials>` (A2A `AuthenticationInfo`).
///
/// A2A 1.0 names one scheme, 0.3 a list; the first one is used.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushAuthentication {
    /// HTTP authentication schemes (`Bearer`, `Basic`...), the first one used.
    pub schemes: Vec<String>,
    /// The credentials sent with the scheme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

impl std::fmt::Debug for PushAuthentication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials never reach a log.
        f.debug_struct("PushAuthentication")
            .field("schemes", &self.schemes)
            .field("credentials", &self.credentials.as_ref().map(|_| "…"))
            .finish()
    }
}

/// One webhook of a task (A2A `TaskPushNotificationConfig`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfig {
    /// The task whose updates are sent.
    pub task_id: String,
    /// The config's id, unique within the task.
    pub id: String,
    /// Where updates are POSTed.
    pub url: String,
    /// Sent back as `X-A2A-Notification-Token`, for the receiver to check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How the server authenticates to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushAuthentication>,
    /// The A2A protocol version the config was created with (`"1.0"`,
    /// `"0.3"`): it decides the form of what is POSTed.
    pub protocol_version: String,
}

impl std::fmt::Debug for PushConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushConfig")
            .field("task_id", &self.task_id)
            .field("id", &self.id)
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("authentication", &self.authentication)
            .field("protocol_version", &self.protocol_version)
            .finish()
    }
}

/// The push notification configs of tasks, keyed by task id and config id.
///
/// Rules (checked by the conformance suite of `looopy-testkit`):
/// - [`put`](PushConfigStore::put) creates or replaces the config of that
///   task and id, atomically (a reader sees the old or the new one);
/// - [`list`](PushConfigStore::list) returns a task's configs ordered by id;
/// - deleting a missing config (or the configs of a task that has none)
///   succeeds;
/// - a store with a time to live (Redis) lets a task's configs expire with
///   it; every `put` renews the time.
#[async_trait]
pub trait PushConfigStore: Send + Sync {
    /// Stores `config`, replacing the one of the same task and id.
    async fn put(&self, config: &PushConfig) -> Result<(), StoreError>;
    /// One config.
    async fn get(&self, task_id: &str, id: &str) -> Result<Option<PushConfig>, StoreError>;
    /// Every config of a task, ordered by id.
    async fn list(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError>;
    /// Forgets one config; `Ok(true)` when it existed.
    async fn delete(&self, task_id: &str, id: &str) -> Result<bool, StoreError>;
    /// Forgets every config of a task.
    async fn delete_all(&self, task_id: &str) -> Result<(), StoreError>;
}
