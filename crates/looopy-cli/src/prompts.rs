//! `GET /web/prompts`: the prompts of the agent's MCP servers, for the chat
//! page's prompt menu (`docs/web.md`). The page picks one, asks for its
//! arguments and sends an `mcpPrompt` reference part
//! (`looopy_core::mcp_ref`), which the server fills in before the model
//! call like any other reference.
//!
//! Served beside A2A through [`A2aServerBuilder::routes`](looopy_a2a::A2aServerBuilder::routes),
//! so behind the same tokens.

use axum::Json;
use axum::routing::get;
use looopy_tools::McpReferences;
use serde_json::{Value, json};

/// Where the prompt list is served.
pub const PROMPTS_PATH: &str = "/web/prompts";

/// The route serving [`PROMPTS_PATH`] from `references`' servers.
pub fn routes(references: McpReferences) -> axum::Router {
    axum::Router::new().route(
        PROMPTS_PATH,
        get(move || {
            let references = references.clone();
            async move { Json(listing(&references).await) }
        }),
    )
}

/// `{"prompts": [{server, name, title, description, arguments: [{name,
/// description, required}]}], "errors": [{server, message}]}`: every
/// server's prompts, the servers by name and each one's prompts in its
/// own order; a server that could not be asked is named in `errors` and
/// the others are still listed.
pub async fn listing(references: &McpReferences) -> Value {
    let mut prompts = Vec::new();
    let mut errors = Vec::new();
    for (server, listed) in references.prompts().await {
        match listed {
            Ok(listed) => prompts.extend(listed.into_iter().map(|p| {
                let arguments: Vec<Value> = p
                    .arguments
                    .into_iter()
                    .map(|a| {
                        json!({
                            "name": a.name,
                            "description": a.description,
                            "required": a.required,
                        })
                    })
                    .collect();
                json!({
                    "server": server,
                    "name": p.name,
                    "title": p.title,
                    "description": p.description,
                    "arguments": arguments,
                })
            })),
            Err(e) => errors.push(json!({ "server": server, "message": e.to_string() })),
        }
    }
    json!({ "prompts": prompts, "errors": errors })
}
