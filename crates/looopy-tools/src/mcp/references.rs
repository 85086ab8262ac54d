//! [`McpReferences`]: fills in the resource and prompt references of a
//! conversation (`looopy_core::mcp_ref`) from the agent's MCP servers,
//! before a model call.

use std::collections::BTreeMap;
use std::sync::Arc;

use looopy_core::mcp_ref::{McpPromptRef, McpRef, McpResourceRef};
use looopy_core::{History, Message, Part};
use serde_json::Value;

use super::{McpPrompt, McpToolProvider};
use crate::error::ToolsError;

/// The agent's MCP servers, by name, as the references of a conversation
/// name them.
///
/// [`expand`](Self::expand) gives the messages a model is sent: each
/// resource reference replaced by the resource's current content (a line
/// naming it, then its text and files), each prompt reference by the
/// prompt's messages, placed before the rest of the message that carried
/// it. Nothing is cached: a resource is read afresh for every model call
/// that is sent it, so an update is always seen (and no subscription is
/// needed for that). A reference that cannot be filled in (an unknown
/// server, a failed read) becomes a line saying why, so that the model and
/// the person learn it and the turn goes on.
#[derive(Clone, Default)]
pub struct McpReferences {
    servers: Arc<BTreeMap<String, McpToolProvider>>,
}

impl McpReferences {
    /// The servers, named by [`McpToolProvider::name`].
    pub fn new(providers: impl IntoIterator<Item = McpToolProvider>) -> Self {
        let servers = providers
            .into_iter()
            .map(|p| (p.name().to_owned(), p))
            .collect();
        McpReferences {
            servers: Arc::new(servers),
        }
    }

    /// Whether there is no server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The history with its references filled in; `None` when no message
    /// carries a reference (nothing to change). Messages without one are
    /// shared with `history`, not copied.
    pub async fn expand(&self, history: &History) -> Option<History> {
        if !history.iter().any(McpRef::in_message) {
            return None;
        }
        let mut out = History::new();
        for message in history.iter_from(0) {
            if !McpRef::in_message(message) {
                out.push_shared(message.clone());
                continue;
            }
            let mut rest = Message::clone(message);
            let mut parts = Vec::with_capacity(message.parts.len());
            for part in std::mem::take(&mut rest.parts) {
                match McpRef::from_part(&part) {
                    None => parts.push(part),
                    Some(McpRef::Resource(r)) => parts.extend(self.resource(&r).await),
                    Some(McpRef::Prompt(p)) => match self.prompt(&p).await {
                        Ok(prompted) => out.extend(prompted),
                        Err(why) => parts.push(Part::text(why)),
                    },
                }
            }
            if !parts.is_empty() {
                rest.parts = parts;
                out.push(rest);
            }
        }
        Some(out)
    }

    /// Every server's prompts, by server name in name order: what a person
    /// picks a prompt reference from (the chat page's menu). A server that
    /// cannot be asked gives its error instead of a list.
    pub async fn prompts(&self) -> Vec<(String, Result<Vec<McpPrompt>, ToolsError>)> {
        let mut out = Vec::with_capacity(self.servers.len());
        for (name, server) in self.servers.iter() {
            out.push((name.clone(), server.prompts().await));
        }
        out
    }

    fn server(&self, name: &str) -> Result<&McpToolProvider, String> {
        self.servers.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.servers.keys().map(String::as_str).collect();
            format!(
                "MCP server '{name}' is not one of this agent's ({})",
                known.join(", ")
            )
        })
    }

    async fn resource(&self, r: &McpResourceRef) -> Vec<Part> {
        let read = match self.server(&r.server) {
            Ok(server) => server
                .read_resource(&r.uri)
                .await
                .map_err(|e| e.to_string()),
            Err(why) => Err(why),
        };
        match read {
            Ok(mut parts) => {
                parts.insert(
                    0,
                    Part::text(format!("Resource {} of MCP server '{}':", r.uri, r.server)),
                );
                parts
            }
            Err(why) => vec![Part::text(format!(
                "(the resource {} of MCP server '{}' could not be read: {why})",
                r.uri, r.server
            ))],
        }
    }

    async fn prompt(&self, p: &McpPromptRef) -> Result<Vec<Message>, String> {
        let arguments = p.arguments.iter().map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), v)
        });
        let got = match self.server(&p.server) {
            Ok(server) => server
                .prompt(&p.name, arguments)
                .await
                .map_err(|e| e.to_string()),
            Err(why) => Err(why),
        };
        got.map(|prompted| prompted.messages).map_err(|why| {
            format!(
                "(the prompt '{}' of MCP server '{}' could not be had: {why})",
                p.name, p.server
            )
        })
    }
}

impl std::fmt::Debug for McpReferences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpReferences")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish()
    }
}
