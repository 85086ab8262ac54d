//! What a caller brings into a turn from the agent's MCP servers, by
//! reference: a resource (`@server:uri` in `looopy chat`) or a prompt
//! (`/prompt server:name key=value`), as typed data parts of the user
//! message.
//!
//! ```json
//! {"mcpResource": {"server": "files", "uri": "file:///srv/notes.md"}}
//! {"mcpPrompt": {"server": "files", "name": "review", "arguments": {"language": "Rust"}}}
//! ```
//!
//! The conversation stores the reference, not the content. Before every
//! model call the agent's MCP servers fill it in (`looopy_tools::McpReferences`):
//! a resource's current content, a prompt's messages. So the model always
//! reads a resource as it is now, and a long document does not sit in the
//! history.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Message, Part};

/// The key of a resource reference in a data part.
pub const RESOURCE_PART_KEY: &str = "mcpResource";

/// The key of a prompt reference in a data part.
pub const PROMPT_PART_KEY: &str = "mcpPrompt";

/// A resource of one of the agent's MCP servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpResourceRef {
    /// The server's name (`[[tools.mcp]] name`).
    pub server: String,
    /// The resource's URI.
    pub uri: String,
}

/// A prompt of one of the agent's MCP servers, with its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpPromptRef {
    /// The server's name.
    pub server: String,
    /// The prompt's name.
    pub name: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub arguments: Map<String, Value>,
}

/// A reference part: a resource or a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpRef {
    /// A resource.
    Resource(McpResourceRef),
    /// A prompt.
    Prompt(McpPromptRef),
}

impl McpRef {
    /// The reference a part carries; `None` for any other part (a data
    /// part under the key that does not read as one included: it stays
    /// data).
    pub fn from_part(part: &Part) -> Option<Self> {
        let Part::Data {
            data: Value::Object(data),
        } = part
        else {
            return None;
        };
        if let Some(value) = data.get(RESOURCE_PART_KEY) {
            return serde_json::from_value(value.clone())
                .ok()
                .map(McpRef::Resource);
        }
        let value = data.get(PROMPT_PART_KEY)?;
        serde_json::from_value(value.clone())
            .ok()
            .map(McpRef::Prompt)
    }

    /// The data part carrying this reference.
    pub fn to_part(&self) -> Part {
        let (key, value) = match self {
            McpRef::Resource(r) => (RESOURCE_PART_KEY, serde_json::to_value(r)),
            McpRef::Prompt(p) => (PROMPT_PART_KEY, serde_json::to_value(p)),
        };
        let mut data = Map::new();
        data.insert(key.into(), value.unwrap_or(Value::Null));
        Part::data(Value::Object(data))
    }

    /// Whether `message` carries any reference.
    pub fn in_message(message: &Message) -> bool {
        message.parts.iter().any(|p| Self::from_part(p).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_read_back_from_their_parts() {
        let resource = McpRef::Resource(McpResourceRef {
            server: "files".into(),
            uri: "file:///a.md".into(),
        });
        assert_eq!(
            McpRef::from_part(&resource.to_part()),
            Some(resource.clone())
        );
        let mut arguments = Map::new();
        arguments.insert("language".into(), json!("Rust"));
        let prompt = McpRef::Prompt(McpPromptRef {
            server: "files".into(),
            name: "review".into(),
            arguments,
        });
        assert_eq!(McpRef::from_part(&prompt.to_part()), Some(prompt));
        let bare = Part::data(json!({"mcpPrompt": {"server": "s", "name": "p"}}));
        assert!(
            matches!(McpRef::from_part(&bare), Some(McpRef::Prompt(p)) if p.arguments.is_empty())
        );
        assert_eq!(
            McpRef::from_part(&Part::data(json!({"mcpResource": 3}))),
            None
        );
        assert_eq!(McpRef::from_part(&Part::text("@files:x")), None);
        let message = Message::with_parts(
            crate::Role::User,
            vec![Part::text("hi"), resource.to_part()],
        );
        assert!(McpRef::in_message(&message));
        assert!(!McpRef::in_message(&Message::user("hi")));
    }
}
