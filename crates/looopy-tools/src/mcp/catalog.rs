//! What an MCP server offers besides tools: resources (data the client
//! reads by URI) and prompts (message templates with arguments), and the
//! two tools through which the model reads resources.

use looopy_core::{FileContent, Message, Part, Role, ToolCall, ToolDefinition, ToolResult};
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, Prompt, ReadResourceRequestParams, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate,
};
use serde_json::{Map, Value, json};

use super::content;

/// The name (behind the provider's prefix) of the tool that lists a
/// server's resources and resource templates.
pub const LIST_RESOURCES_TOOL: &str = "list_resources";

/// The name (behind the provider's prefix) of the tool that reads one of a
/// server's resources by URI.
pub const READ_RESOURCE_TOOL: &str = "read_resource";

/// A resource an MCP server offers: data read by URI
/// ([`McpToolProvider::read_resource`](super::McpToolProvider::read_resource)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpResource {
    /// Its URI, which reads it.
    pub uri: String,
    /// The server's name for it.
    pub name: String,
    /// A title for people, if the server gives one.
    pub title: Option<String>,
    /// What it holds.
    pub description: Option<String>,
    /// Its media type, if known.
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    pub size: Option<u64>,
}

impl From<Resource> for McpResource {
    fn from(r: Resource) -> Self {
        McpResource {
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            size: r.size,
        }
    }
}

/// A family of resources an MCP server offers, named by an RFC 6570 URI
/// template (`file:///{path}`): filled in, it gives a URI to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// The server's name for it.
    pub name: String,
    /// A title for people, if the server gives one.
    pub title: Option<String>,
    /// What its resources hold.
    pub description: Option<String>,
    /// The media type of its resources, if they share one.
    pub mime_type: Option<String>,
}

impl From<ResourceTemplate> for McpResourceTemplate {
    fn from(t: ResourceTemplate) -> Self {
        McpResourceTemplate {
            uri_template: t.uri_template,
            name: t.name,
            title: t.title,
            description: t.description,
            mime_type: t.mime_type,
        }
    }
}

/// A prompt an MCP server offers: messages made from its arguments
/// ([`McpToolProvider::prompt`](super::McpToolProvider::prompt)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrompt {
    /// Its name, which fetches it.
    pub name: String,
    /// A title for people, if the server gives one.
    pub title: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// The arguments it takes.
    pub arguments: Vec<McpPromptArgument>,
}

impl From<Prompt> for McpPrompt {
    fn from(p: Prompt) -> Self {
        McpPrompt {
            name: p.name,
            title: p.title,
            description: p.description,
            arguments: p
                .arguments
                .unwrap_or_default()
                .into_iter()
                .map(|a| McpPromptArgument {
                    name: a.name,
                    description: a.description,
                    required: a.required == Some(true),
                })
                .collect(),
        }
    }
}

/// One argument of an [`McpPrompt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPromptArgument {
    /// Its name.
    pub name: String,
    /// What it means.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A prompt filled in with its arguments: the messages to start a turn
/// from, user and assistant messages in the server's order.
#[derive(Debug, Clone, PartialEq)]
pub struct McpPromptMessages {
    /// What the server says of the filled-in prompt.
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<Message>,
}

impl McpPromptMessages {
    /// Maps a `prompts/get` result: each message's content block becomes
    /// its one part (text, an inline image or audio file, an embedded
    /// resource's text or file, a resource link's file by URI).
    pub(crate) fn from_result(result: GetPromptResult) -> Self {
        let messages = result
            .messages
            .into_iter()
            .map(|m| {
                let role = match m.role {
                    rmcp::model::Role::Assistant => Role::Assistant,
                    _ => Role::User,
                };
                let parts = content::to_part(m.content).into_iter().collect();
                Message::with_parts(role, parts)
            })
            .collect();
        McpPromptMessages {
            description: result.description,
            messages,
        }
    }
}

/// The parts of a `resources/read` result: text contents as text, binary
/// contents as inline files with their URI and media type.
pub(crate) fn resource_parts(result: ReadResourceResult) -> Vec<Part> {
    result
        .contents
        .into_iter()
        .filter_map(|contents| match contents {
            ResourceContents::TextResourceContents { text, .. } => Some(Part::text(text)),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Some(Part::file(FileContent {
                blob: None,
                name: None,
                mime_type,
                uri: Some(uri),
                bytes: Some(blob),
            })),
            // The union is non-exhaustive: contents of a later protocol
            // version are kept as JSON rather than lost.
            #[allow(unreachable_patterns)]
            other => serde_json::to_value(&other).ok().map(Part::data),
        })
        .collect()
}

/// The parameters of a `resources/read` of `uri`.
pub(crate) fn read_params(uri: &str) -> ReadResourceRequestParams {
    ReadResourceRequestParams::new(uri)
}

/// The parameters of a `prompts/get` of `name` with `arguments`.
pub(crate) fn prompt_params(name: &str, arguments: Map<String, Value>) -> GetPromptRequestParams {
    let params = GetPromptRequestParams::new(name);
    if arguments.is_empty() {
        params
    } else {
        params.with_arguments(arguments)
    }
}

/// The definitions of the two resource tools, named `list` and `read`.
pub(crate) fn resource_tools(server: &str, list: String, read: String) -> [ToolDefinition; 2] {
    [
        ToolDefinition::new(
            list,
            format!(
                "Lists the resources (data readable by URI) and resource templates \
                 of the MCP server '{server}'."
            ),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        )
        .idempotent(true),
        ToolDefinition::new(
            read,
            format!(
                "Reads a resource of the MCP server '{server}' by its URI (one listed, \
                 or a resource template filled in)."
            ),
            json!({
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
                "required": ["uri"],
                "additionalProperties": false
            }),
        )
        .idempotent(true),
    ]
}

/// The result of the listing tool: one line per resource and template.
pub(crate) fn listing_result(
    call: &ToolCall,
    resources: &[McpResource],
    templates: &[McpResourceTemplate],
) -> ToolResult {
    let mut text = String::new();
    if resources.is_empty() && templates.is_empty() {
        text.push_str("The server offers no resources.");
    }
    for r in resources {
        line(
            &mut text,
            &r.uri,
            &r.name,
            r.mime_type.as_deref(),
            r.description.as_deref(),
        );
    }
    if !templates.is_empty() {
        if !resources.is_empty() {
            text.push('\n');
        }
        text.push_str("Templates (fill in the braces to get a URI):\n");
        for t in templates {
            line(
                &mut text,
                &t.uri_template,
                &t.name,
                t.mime_type.as_deref(),
                t.description.as_deref(),
            );
        }
    }
    ToolResult::text(call.id.clone(), text.trim_end())
}

fn line(out: &mut String, uri: &str, name: &str, mime: Option<&str>, description: Option<&str>) {
    out.push_str("- ");
    out.push_str(uri);
    out.push_str(" (");
    out.push_str(name);
    if let Some(mime) = mime {
        out.push_str(", ");
        out.push_str(mime);
    }
    out.push(')');
    if let Some(description) = description.filter(|d| !d.is_empty()) {
        out.push_str(": ");
        out.push_str(description);
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_contents_become_files_and_text_stays_text() {
        let result = ReadResourceResult::new(vec![
            ResourceContents::text("hello", "mem://a"),
            ResourceContents::BlobResourceContents {
                uri: "mem://b".into(),
                mime_type: Some("image/png".into()),
                blob: "AAEC".into(),
                meta: None,
            },
        ]);
        let parts = resource_parts(result);
        assert_eq!(parts[0], Part::text("hello"));
        let Part::File { file } = &parts[1] else {
            panic!("{:?}", parts[1]);
        };
        assert_eq!(file.uri.as_deref(), Some("mem://b"));
        assert_eq!(file.mime_type.as_deref(), Some("image/png"));
        assert_eq!(file.bytes.as_deref(), Some("AAEC"));
    }

    #[test]
    fn the_listing_names_each_resource_and_template() {
        let call = ToolCall::new("c1", "list_resources", "{}");
        let resources = [McpResource {
            uri: "mem://a".into(),
            name: "a".into(),
            title: None,
            description: Some("the first".into()),
            mime_type: Some("text/plain".into()),
            size: None,
        }];
        let templates = [McpResourceTemplate {
            uri_template: "mem://item/{id}".into(),
            name: "item".into(),
            title: None,
            description: None,
            mime_type: None,
        }];
        let text = listing_result(&call, &resources, &templates).text_content();
        assert!(
            text.contains("- mem://a (a, text/plain): the first"),
            "{text}"
        );
        assert!(text.contains("- mem://item/{id} (item)"), "{text}");
        let none = listing_result(&call, &[], &[]).text_content();
        assert_eq!(none, "The server offers no resources.");
    }
}
