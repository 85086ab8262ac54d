//! Push notification configs on the wire, both versions.
//!
//! | | A2A 1.0 | A2A 0.3 |
//! |---|---|---|
//! | config | `TaskPushNotificationConfig`: `{taskId, id, url, token, authentication: {scheme, credentials}}` | `{taskId, pushNotificationConfig: {id, url, token, authentication: {schemes, credentials}}}` |
//! | create | the config itself | the same, `tasks/pushNotificationConfig/set` |
//! | get / delete | `{taskId, id}` | `{id: <task id>, pushNotificationConfigId}` |
//! | list | `{taskId, pageSize, pageToken}` → `{configs, nextPageToken}` | `{id}` → an array of configs |
//! | in a send | `configuration.taskPushNotificationConfig` (or `pushNotificationConfig`) | `configuration.pushNotificationConfig` |
//!
//! Field names are read in camelCase and in the proto's snake_case (the
//! TCK sends `task_id`). A config without an id gets the task's id, as the
//! official SDKs do.

use looopy_core::store::{PushAuthentication, PushConfig};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::RpcError;
use crate::jsonrpc;
use crate::version::ProtocolVersion;

/// Longest URL, token, credentials or id accepted.
const MAX_FIELD: usize = 4096;

/// A config as a client sent it, before it is checked and stored.
#[derive(Debug, Clone)]
pub(crate) struct ConfigInput {
    pub(crate) task_id: Option<String>,
    pub(crate) id: Option<String>,
    pub(crate) url: String,
    pub(crate) token: Option<String>,
    pub(crate) authentication: Option<PushAuthentication>,
}

impl ConfigInput {
    /// The config to store for `task_id`, checking field sizes.
    pub(crate) fn into_config(
        self,
        task_id: &str,
        version: ProtocolVersion,
    ) -> Result<PushConfig, RpcError> {
        let id = self
            .id
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| task_id.to_owned());
        for (field, value) in [
            ("id", Some(id.as_str())),
            ("url", Some(self.url.as_str())),
            ("token", self.token.as_deref()),
            (
                "authentication.credentials",
                self.authentication
                    .as_ref()
                    .and_then(|a| a.credentials.as_deref()),
            ),
        ] {
            if value.is_some_and(|v| v.len() > MAX_FIELD) {
                return Err(RpcError::invalid_params(format!(
                    "{field}: longer than {MAX_FIELD} bytes"
                ))
                .with_meta("field", field));
            }
        }
        if let Some(auth) = &self.authentication
            && auth.schemes.iter().all(|s| s.trim().is_empty())
        {
            return Err(RpcError::invalid_params(
                "authentication: a scheme (\"Bearer\", \"Basic\"...) is required",
            )
            .with_meta("field", "authentication"));
        }
        Ok(PushConfig {
            task_id: task_id.to_owned(),
            id,
            url: self.url,
            token: self.token.filter(|t| !t.is_empty()),
            authentication: self.authentication,
            protocol_version: version.as_str().to_owned(),
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Auth1 {
    scheme: String,
    #[serde(default)]
    credentials: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Config1 {
    #[serde(default, alias = "task_id")]
    task_id: Option<String>,
    #[serde(default)]
    id: Option<String>,
    url: String,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    authentication: Option<Auth1>,
}

impl From<Config1> for ConfigInput {
    fn from(c: Config1) -> Self {
        ConfigInput {
            task_id: c.task_id.filter(|t| !t.is_empty()),
            id: c.id,
            url: c.url,
            token: c.token,
            authentication: c.authentication.map(|a| PushAuthentication {
                schemes: vec![a.scheme],
                credentials: a.credentials.filter(|c| !c.is_empty()),
            }),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Auth03 {
    #[serde(default)]
    schemes: Vec<String>,
    #[serde(default)]
    credentials: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Config03 {
    #[serde(default)]
    id: Option<String>,
    url: String,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    authentication: Option<Auth03>,
}

impl Config03 {
    fn into_input(self, task_id: Option<String>) -> ConfigInput {
        ConfigInput {
            task_id,
            id: self.id,
            url: self.url,
            token: self.token,
            authentication: self.authentication.map(|a| PushAuthentication {
                schemes: a.schemes,
                credentials: a.credentials.filter(|c| !c.is_empty()),
            }),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Set03 {
    #[serde(alias = "task_id")]
    task_id: String,
    #[serde(alias = "push_notification_config")]
    push_notification_config: Config03,
}

/// A config given with a message (`configuration.taskPushNotificationConfig`
/// in 1.0, `configuration.pushNotificationConfig` in 0.3).
pub(crate) fn decode_inline(v: ProtocolVersion, value: Value) -> Result<ConfigInput, RpcError> {
    let prefix = |e: RpcError| {
        RpcError::invalid_params(format!(
            "configuration.pushNotificationConfig: {}",
            e.message
        ))
    };
    Ok(match v {
        ProtocolVersion::V1_0 => jsonrpc::params::<Config1>(value).map_err(prefix)?.into(),
        ProtocolVersion::V0_3 => jsonrpc::params::<Config03>(value)
            .map_err(prefix)?
            .into_input(None),
    })
}

/// `CreateTaskPushNotificationConfig` / `tasks/pushNotificationConfig/set`.
pub(crate) fn decode_create(
    v: ProtocolVersion,
    params: Value,
) -> Result<(String, ConfigInput), RpcError> {
    match v {
        ProtocolVersion::V1_0 => {
            let input: ConfigInput = jsonrpc::params::<Config1>(params)?.into();
            let task_id = input
                .task_id
                .clone()
                .ok_or_else(|| RpcError::invalid_params("taskId: required"))?;
            Ok((task_id, input))
        }
        ProtocolVersion::V0_3 => {
            let p: Set03 = jsonrpc::params(params)?;
            let task_id = p.task_id.clone();
            Ok((
                task_id.clone(),
                p.push_notification_config.into_input(Some(task_id)),
            ))
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ById1 {
    #[serde(alias = "task_id")]
    task_id: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default, alias = "page_size")]
    page_size: Option<i64>,
    #[serde(default, alias = "page_token")]
    page_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ById03 {
    id: String,
    #[serde(default, alias = "push_notification_config_id")]
    push_notification_config_id: Option<String>,
}

/// What get, list and delete name: a task, maybe a config, a page.
#[derive(Debug, Clone)]
pub(crate) struct ConfigQuery {
    pub(crate) task_id: String,
    pub(crate) id: Option<String>,
    pub(crate) page_size: Option<usize>,
    pub(crate) offset: usize,
}

/// Get, list and delete params.
pub(crate) fn decode_query(v: ProtocolVersion, params: Value) -> Result<ConfigQuery, RpcError> {
    match v {
        ProtocolVersion::V1_0 => {
            let q: ById1 = jsonrpc::params(params)?;
            let offset = match q.page_token.as_deref() {
                None | Some("") => 0,
                Some(t) => t.parse().map_err(|_| {
                    RpcError::invalid_params("pageToken: not a token this server gave")
                        .with_meta("field", "pageToken")
                })?,
            };
            Ok(ConfigQuery {
                task_id: q.task_id,
                id: q.id.filter(|id| !id.is_empty()),
                page_size: q
                    .page_size
                    .filter(|n| *n > 0)
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                offset,
            })
        }
        ProtocolVersion::V0_3 => {
            let q: ById03 = jsonrpc::params(params)?;
            Ok(ConfigQuery {
                task_id: q.id,
                id: q.push_notification_config_id.filter(|id| !id.is_empty()),
                page_size: None,
                offset: 0,
            })
        }
    }
}

/// A stored config as the version shows it.
pub(crate) fn encode(v: ProtocolVersion, c: &PushConfig) -> Value {
    let mut config = json!({"id": c.id, "url": c.url});
    if let Some(token) = &c.token {
        config["token"] = json!(token);
    }
    match v {
        ProtocolVersion::V1_0 => {
            config["taskId"] = json!(c.task_id);
            if let Some(auth) = &c.authentication {
                let mut a = json!({"scheme": auth.schemes.first().cloned().unwrap_or_default()});
                if let Some(credentials) = &auth.credentials {
                    a["credentials"] = json!(credentials);
                }
                config["authentication"] = a;
            }
            config
        }
        ProtocolVersion::V0_3 => {
            if let Some(auth) = &c.authentication {
                let mut a = json!({"schemes": auth.schemes});
                if let Some(credentials) = &auth.credentials {
                    a["credentials"] = json!(credentials);
                }
                config["authentication"] = a;
            }
            json!({"taskId": c.task_id, "pushNotificationConfig": config})
        }
    }
}

/// A page of configs: 1.0 `{configs, nextPageToken}`, 0.3 an array.
pub(crate) fn encode_list(v: ProtocolVersion, configs: &[PushConfig], q: &ConfigQuery) -> Value {
    let all: Vec<Value> = configs.iter().map(|c| encode(v, c)).collect();
    match v {
        ProtocolVersion::V0_3 => Value::Array(all),
        ProtocolVersion::V1_0 => {
            let size = q.page_size.unwrap_or(usize::MAX);
            let page: Vec<Value> = all.iter().skip(q.offset).take(size).cloned().collect();
            let end = q.offset.saturating_add(page.len());
            let mut out = json!({"configs": page});
            if end < all.len() {
                out["nextPageToken"] = json!(end.to_string());
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn both_versions_round_trip_a_config() {
        let (task, input) = decode_create(
            ProtocolVersion::V1_0,
            json!({"task_id": "t1", "id": "c1", "url": "https://x/h", "token": "tok",
                   "authentication": {"scheme": "Bearer", "credentials": "s"}}),
        )
        .unwrap();
        assert_eq!(task, "t1");
        let config = input.into_config(&task, ProtocolVersion::V1_0).unwrap();
        assert_eq!(config.protocol_version, "1.0");
        assert_eq!(
            encode(ProtocolVersion::V1_0, &config),
            json!({"taskId": "t1", "id": "c1", "url": "https://x/h", "token": "tok",
                   "authentication": {"scheme": "Bearer", "credentials": "s"}})
        );
        assert_eq!(
            encode(ProtocolVersion::V0_3, &config),
            json!({"taskId": "t1", "pushNotificationConfig": {"id": "c1", "url": "https://x/h",
                   "token": "tok", "authentication": {"schemes": ["Bearer"], "credentials": "s"}}})
        );

        let (task, input) = decode_create(
            ProtocolVersion::V0_3,
            json!({"taskId": "t2", "pushNotificationConfig": {"url": "https://x/h"}}),
        )
        .unwrap();
        let config = input.into_config(&task, ProtocolVersion::V0_3).unwrap();
        assert_eq!(config.id, "t2", "a config without an id gets the task's id");
    }

    #[test]
    fn bad_configs_are_invalid_params() {
        let missing_url = decode_create(ProtocolVersion::V1_0, json!({"taskId": "t"}));
        assert_eq!(missing_url.unwrap_err().code, -32602);
        let missing_task = decode_create(ProtocolVersion::V1_0, json!({"url": "https://x"}));
        assert_eq!(missing_task.unwrap_err().code, -32602);
        let (task, input) = decode_create(
            ProtocolVersion::V1_0,
            json!({"taskId": "t", "url": "https://x", "authentication": {"scheme": " "}}),
        )
        .unwrap();
        assert_eq!(
            input
                .into_config(&task, ProtocolVersion::V1_0)
                .unwrap_err()
                .code,
            -32602
        );
    }

    #[test]
    fn lists_page_in_1_0() {
        let configs: Vec<PushConfig> = (0..3)
            .map(|n| PushConfig {
                task_id: "t".into(),
                id: format!("c{n}"),
                url: "https://x".into(),
                token: None,
                authentication: None,
                protocol_version: "1.0".into(),
            })
            .collect();
        let q = decode_query(ProtocolVersion::V1_0, json!({"taskId": "t", "pageSize": 2})).unwrap();
        let first = encode_list(ProtocolVersion::V1_0, &configs, &q);
        assert_eq!(first["configs"].as_array().unwrap().len(), 2);
        assert_eq!(first["nextPageToken"], "2");
        let q = decode_query(
            ProtocolVersion::V1_0,
            json!({"taskId": "t", "pageSize": 2, "pageToken": "2"}),
        )
        .unwrap();
        let second = encode_list(ProtocolVersion::V1_0, &configs, &q);
        assert_eq!(second["configs"][0]["id"], "c2");
        assert!(second.get("nextPageToken").is_none());
        let all = encode_list(ProtocolVersion::V0_3, &configs, &q);
        assert_eq!(all.as_array().unwrap().len(), 3);
    }
}
