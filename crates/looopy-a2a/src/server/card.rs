//! The agent card: [`AgentCardConfig`] and its two wire forms.
//!
//! `GET /.well-known/agent-card.json` answers the 1.0 card (built with the
//! official `a2a-lf` types) when the request says `A2A-Version: 1.x`, and the
//! 0.3 card otherwise (no header means 0.3, spec §3.6.2). The 0.3 card also
//! lists `supportedInterfaces`, so a 1.0 client that fetched it without the
//! header still finds the 1.0 interface. `/.well-known/agent.json` (the path
//! of 0.2 clients) always answers the 0.3 card.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::server::auth::{API_KEY_HEADER, AuthConfig};
use crate::server::progress::{self, TOOL_PROGRESS_EXTENSION};
use crate::version::ProtocolVersion;

/// A skill listed on the agent card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSkill {
    /// Unique id.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Keywords.
    pub tags: Vec<String>,
    /// Example prompts.
    pub examples: Vec<String>,
}

impl AgentSkill {
    /// A skill without tags or examples.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        AgentSkill {
            id: id.into(),
            name: name.into(),
            description: description.into(),
            tags: Vec::new(),
            examples: Vec::new(),
        }
    }

    /// Adds a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Adds an example prompt.
    pub fn example(mut self, example: impl Into<String>) -> Self {
        self.examples.push(example.into());
        self
    }
}

/// What the agent card says about the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCardConfig {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The agent's own version (not the protocol's).
    pub version: String,
    /// The base URL clients reach the server at (`https://agents.example.com`).
    /// When `None` the URL is derived from each request's `Host` header.
    pub public_url: Option<String>,
    /// Its skills.
    pub skills: Vec<AgentSkill>,
    /// Media types it accepts (default `text/plain`, `application/json`).
    /// File parts of other types are refused with -32005.
    pub input_modes: Vec<String>,
    /// Media types it produces (default `text/plain`, `application/json`).
    pub output_modes: Vec<String>,
    /// The provider: organization and URL.
    pub provider: Option<(String, String)>,
    /// Where its documentation lives.
    pub documentation_url: Option<String>,
    /// Whether the server sends push notifications (set by
    /// [`A2aServerBuilder::push_notifications`](crate::A2aServerBuilder::push_notifications)).
    pub(crate) push_notifications: bool,
}

impl AgentCardConfig {
    /// A card with a name and description and the defaults.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        AgentCardConfig {
            name: name.into(),
            description: description.into(),
            version: "0.1.0".into(),
            public_url: None,
            skills: Vec::new(),
            input_modes: vec!["text/plain".into(), "application/json".into()],
            output_modes: vec!["text/plain".into(), "application/json".into()],
            provider: None,
            documentation_url: None,
            push_notifications: false,
        }
    }

    /// Sets the agent's version.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Sets the public base URL.
    pub fn public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = Some(url.into());
        self
    }

    /// Adds a skill.
    pub fn skill(mut self, skill: AgentSkill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Whether a part of this media type may be sent to the agent
    /// (`image/*` and `*/*` patterns match).
    pub(crate) fn accepts(&self, media_type: &str) -> bool {
        let media_type = media_type.split(';').next().unwrap_or("").trim();
        self.input_modes.iter().any(|mode| {
            mode == "*/*"
                || mode.eq_ignore_ascii_case(media_type)
                || mode.strip_suffix("/*").is_some_and(|prefix| {
                    media_type
                        .split_once('/')
                        .is_some_and(|(t, _)| t.eq_ignore_ascii_case(prefix))
                })
        })
    }
}

/// Everything the card is built from.
pub(crate) struct CardInputs<'a> {
    pub(crate) config: &'a AgentCardConfig,
    pub(crate) auth: &'a AuthConfig,
    /// The URL of the JSON-RPC endpoint.
    pub(crate) rpc_url: String,
    /// The URL of the HTTP+JSON binding.
    pub(crate) rest_url: String,
    /// `host:port` of the gRPC binding, when it is served.
    pub(crate) grpc_url: Option<String>,
    /// Whether the tool-progress extension is offered.
    pub(crate) tool_progress: bool,
}

/// The extensions the card lists (1.0 form).
fn extensions_v1(inputs: &CardInputs<'_>) -> Option<Vec<a2a::AgentExtension>> {
    inputs.tool_progress.then(|| {
        vec![a2a::AgentExtension {
            uri: TOOL_PROGRESS_EXTENSION.into(),
            description: Some(progress::DESCRIPTION.into()),
            required: Some(false),
            params: None,
        }]
    })
}

fn skills_v1(config: &AgentCardConfig) -> Vec<a2a::AgentSkill> {
    config
        .skills
        .iter()
        .map(|s| a2a::AgentSkill {
            id: s.id.clone(),
            name: s.name.clone(),
            description: s.description.clone(),
            tags: s.tags.clone(),
            examples: (!s.examples.is_empty()).then(|| s.examples.clone()),
            input_modes: None,
            output_modes: None,
            security_requirements: None,
        })
        .collect()
}

/// The interfaces, preferred first: JSON-RPC 1.0, HTTP+JSON 1.0, JSON-RPC
/// 0.3 (the same endpoint, chosen by `A2A-Version`), gRPC 1.0 when served.
fn interfaces(inputs: &CardInputs<'_>) -> Vec<a2a::AgentInterface> {
    let interface = |url: &str, binding: &str, version: ProtocolVersion| {
        let mut i = a2a::AgentInterface::new(url, binding);
        i.protocol_version = version.as_str().into();
        i
    };
    vec![
        interface(
            &inputs.rpc_url,
            a2a::TRANSPORT_PROTOCOL_JSONRPC,
            ProtocolVersion::V1_0,
        ),
        interface(
            &inputs.rest_url,
            a2a::TRANSPORT_PROTOCOL_HTTP_JSON,
            ProtocolVersion::V1_0,
        ),
        interface(
            &inputs.rpc_url,
            a2a::TRANSPORT_PROTOCOL_JSONRPC,
            ProtocolVersion::V0_3,
        ),
    ]
    .into_iter()
    .chain(
        inputs
            .grpc_url
            .as_deref()
            .map(|url| interface(url, a2a::TRANSPORT_PROTOCOL_GRPC, ProtocolVersion::V1_0)),
    )
    .collect()
}

/// The 1.0 card.
pub(crate) fn card_v1(inputs: &CardInputs<'_>) -> Value {
    let config = inputs.config;
    let mut schemes = HashMap::new();
    let mut requirements = Vec::new();
    if inputs.auth.has_bearer() {
        schemes.insert(
            "bearer".to_owned(),
            a2a::SecurityScheme::HttpAuth(a2a::HttpAuthSecurityScheme {
                scheme: "Bearer".into(),
                description: Some("A token from the server's configuration".into()),
                bearer_format: None,
            }),
        );
        requirements.push(HashMap::from([("bearer".to_owned(), Vec::new())]));
    }
    if inputs.auth.has_api_keys() {
        schemes.insert(
            "apiKey".to_owned(),
            a2a::SecurityScheme::ApiKey(a2a::ApiKeySecurityScheme {
                location: "header".into(),
                name: API_KEY_HEADER.into(),
                description: Some("A key from the server's configuration".into()),
            }),
        );
        requirements.push(HashMap::from([("apiKey".to_owned(), Vec::new())]));
    }
    let card = a2a::AgentCard {
        name: config.name.clone(),
        description: config.description.clone(),
        version: config.version.clone(),
        supported_interfaces: interfaces(inputs),
        capabilities: a2a::AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(config.push_notifications),
            extensions: extensions_v1(inputs),
            extended_agent_card: Some(false),
        },
        default_input_modes: config.input_modes.clone(),
        default_output_modes: config.output_modes.clone(),
        skills: skills_v1(config),
        provider: config
            .provider
            .as_ref()
            .map(|(organization, url)| a2a::AgentProvider {
                organization: organization.clone(),
                url: url.clone(),
            }),
        documentation_url: config.documentation_url.clone(),
        icon_url: None,
        security_schemes: (!schemes.is_empty()).then_some(schemes),
        security_requirements: (!requirements.is_empty()).then_some(requirements),
        signatures: None,
    };
    serde_json::to_value(card).unwrap_or(Value::Null)
}

/// The 0.3 card (plus `supportedInterfaces`).
pub(crate) fn card_v03(inputs: &CardInputs<'_>) -> Value {
    let config = inputs.config;
    let mut schemes = serde_json::Map::new();
    let mut security = Vec::new();
    if inputs.auth.has_bearer() {
        schemes.insert(
            "bearer".into(),
            json!({"type": "http", "scheme": "bearer",
                   "description": "A token from the server's configuration"}),
        );
        security.push(json!({"bearer": []}));
    }
    if inputs.auth.has_api_keys() {
        schemes.insert(
            "apiKey".into(),
            json!({"type": "apiKey", "in": "header", "name": API_KEY_HEADER,
                   "description": "A key from the server's configuration"}),
        );
        security.push(json!({"apiKey": []}));
    }
    let skills: Vec<Value> = config
        .skills
        .iter()
        .map(|s| {
            let mut v =
                json!({"id": s.id, "name": s.name, "description": s.description, "tags": s.tags});
            if !s.examples.is_empty() {
                v["examples"] = json!(s.examples);
            }
            v
        })
        .collect();
    let mut card = json!({
        "protocolVersion": "0.3.0",
        "name": config.name,
        "description": config.description,
        "url": inputs.rpc_url,
        "preferredTransport": "JSONRPC",
        "version": config.version,
        "capabilities": {"streaming": true, "pushNotifications": config.push_notifications, "stateTransitionHistory": false},
        "defaultInputModes": config.input_modes,
        "defaultOutputModes": config.output_modes,
        "skills": skills,
        "supportsAuthenticatedExtendedCard": false,
        "supportedInterfaces": serde_json::to_value(interfaces(inputs)).unwrap_or(Value::Null),
    });
    if let Some(extensions) = extensions_v1(inputs) {
        card["capabilities"]["extensions"] = serde_json::to_value(extensions).unwrap_or_default();
    }
    if !schemes.is_empty() {
        card["securitySchemes"] = Value::Object(schemes);
        card["security"] = Value::Array(security);
    }
    if let Some((organization, url)) = &config.provider {
        card["provider"] = json!({"organization": organization, "url": url});
    }
    if let Some(url) = &config.documentation_url {
        card["documentationUrl"] = json!(url);
    }
    card
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn both_cards_describe_both_interfaces_and_the_auth() {
        let config = AgentCardConfig::new("Echo", "Echoes")
            .skill(AgentSkill::new("echo", "Echo", "Echoes text").tag("test"));
        let auth = AuthConfig::none().bearer("t", "alice").api_key("k", "bob");
        let inputs = CardInputs {
            config: &config,
            auth: &auth,
            rpc_url: "http://h/".into(),
            rest_url: "http://h/rest".into(),
            grpc_url: None,
            tool_progress: true,
        };

        let v1 = card_v1(&inputs);
        assert_eq!(v1["supportedInterfaces"][0]["protocolVersion"], "1.0");
        assert_eq!(v1["supportedInterfaces"][1]["protocolBinding"], "HTTP+JSON");
        assert_eq!(v1["supportedInterfaces"][1]["url"], "http://h/rest");
        assert_eq!(v1["supportedInterfaces"][2]["protocolVersion"], "0.3");
        assert_eq!(v1["capabilities"]["streaming"], true);
        assert_eq!(
            v1["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        assert_eq!(
            v1["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"],
            "X-API-Key"
        );
        assert_eq!(v1["skills"][0]["id"], "echo");
        let ext = &v1["capabilities"]["extensions"][0];
        assert_eq!(ext["uri"], TOOL_PROGRESS_EXTENSION);
        assert_eq!(ext["required"], false);
        // The official types read it back.
        let _: a2a::AgentCard = serde_json::from_value(v1).unwrap();

        let v03 = card_v03(&inputs);
        assert_eq!(v03["protocolVersion"], "0.3.0");
        assert_eq!(v03["url"], "http://h/");
        assert_eq!(v03["securitySchemes"]["bearer"]["type"], "http");
        assert_eq!(v03["security"][1]["apiKey"], json!([]));
        assert_eq!(
            v03["capabilities"]["extensions"][0]["uri"],
            TOOL_PROGRESS_EXTENSION
        );

        let open = AuthConfig::none();
        let inputs = CardInputs {
            config: &config,
            auth: &open,
            rpc_url: "http://h/".into(),
            rest_url: "http://h/rest".into(),
            grpc_url: None,
            tool_progress: false,
        };
        assert!(card_v1(&inputs).get("securitySchemes").is_none());
        assert!(card_v1(&inputs)["capabilities"].get("extensions").is_none());
        assert!(card_v03(&inputs).get("security").is_none());
    }

    #[test]
    fn media_types_match_patterns() {
        let mut c = AgentCardConfig::new("a", "b");
        assert!(c.accepts("text/plain; charset=utf-8"));
        assert!(!c.accepts("image/png"));
        c.input_modes.push("image/*".into());
        assert!(c.accepts("image/png"));
        assert!(!c.accepts("video/mp4"));
    }
}
