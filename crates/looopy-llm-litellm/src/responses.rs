//! [`OpenAiResponsesProvider`]: the OpenAI Responses API (`POST /responses`).
//!
//! The request is written straight from borrowed core types, as the chat
//! completions one is. The system prompt is the first input item, with the
//! `developer` role; tool calls and their results are `function_call` and
//! `function_call_output` items; structured output is `text.format`.
//! Requests are never stored on the server (`store: false`): the
//! conversation is the history the loop sends.

use std::borrow::Cow;

use async_trait::async_trait;
use looopy_core::{
    History, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, Message, Part, Reasoning,
    ResponseFormat, Role, ToolChoice, ToolDefinition, TurnContext,
};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};
use tracing::Instrument;

use crate::client::{LiteLlmProvider, http_client};
use crate::config::LiteLlmConfig;
use crate::responses_decode::ResponsesDecoder;
use crate::stream::{EventDecoder, event_stream};
use crate::wire::{ContentText, image_url};

/// Keys of the request body that `extra_body` may not override.
const RESERVED: [&str; 12] = [
    "model",
    "input",
    "tools",
    "tool_choice",
    "temperature",
    "max_output_tokens",
    "parallel_tool_calls",
    "text",
    "stream",
    "store",
    "include",
    "instructions",
];

/// A model behind the OpenAI Responses API (`{base_url}/responses`).
///
/// Configured as the chat completions provider is, by a [`LiteLlmConfig`]
/// (the base URL, key, model, defaults and timeouts; `max_tokens` and
/// `max_completion_tokens` become `max_output_tokens`). Cheap to clone.
/// Each call emits a `chat {model}` span as [`LiteLlmProvider`] does.
///
/// Requests ask for `store: false` and
/// `include: ["reasoning.encrypted_content"]`, so that the model's
/// reasoning comes back encrypted and is sent again, unchanged, on the next
/// call of the turn.
#[derive(Clone, Debug)]
pub struct OpenAiResponsesProvider {
    inner: LiteLlmProvider,
}

impl OpenAiResponsesProvider {
    /// A provider with its own HTTP client. Fails with
    /// [`LlmError::NotConfigured`] for a bad base URL or header.
    pub fn new(config: LiteLlmConfig) -> Result<Self, LlmError> {
        let http = http_client(&config)?;
        Self::with_http_client(config, http)
    }

    /// A provider sending through the given client.
    pub fn with_http_client(
        config: LiteLlmConfig,
        http: reqwest::Client,
    ) -> Result<Self, LlmError> {
        let endpoint = responses_endpoint(&config.base_url);
        Ok(OpenAiResponsesProvider {
            inner: LiteLlmProvider::posting_to(config, http, &endpoint)?,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LiteLlmConfig {
        self.inner.config()
    }

    /// The request body.
    pub(crate) fn body(&self, request: &LlmRequest, stream: bool) -> Result<Vec<u8>, LlmError> {
        let c = self.inner.config();
        let body = ResponsesRequest {
            provider: &c.provider_name,
            model: self.inner.model_for(request),
            system_prompt: request.system_prompt.as_deref().map(Cow::Borrowed),
            messages: &request.messages,
            tools: &request.tools,
            tool_choice: request.tool_choice.as_ref().or(c.tool_choice.as_ref()),
            temperature: request.temperature.or(c.temperature),
            max_output_tokens: request
                .max_completion_tokens
                .or(request.max_tokens)
                .or(c.max_completion_tokens)
                .or(c.max_tokens),
            parallel_tool_calls: request.parallel_tool_calls.or(c.parallel_tool_calls),
            response_format: request.response_format.as_ref(),
            stream,
            extra_body: request
                .metadata
                .get("extra_body")
                .and_then(Value::as_object),
        };
        serde_json::to_vec(&body).map_err(|e| LlmError::BadRequest {
            message: format!("cannot serialize the request: {e}"),
        })
    }
}

/// `{base}/responses`.
pub(crate) fn responses_endpoint(base_url: &str) -> String {
    format!("{}/responses", base_url.trim_end_matches('/'))
}

#[async_trait]
impl LlmProvider for OpenAiResponsesProvider {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let span = self.inner.call_span(self.inner.model_for(&request));
        let body = self.body(&request, false);
        let result = self
            .inner
            .call_with(
                body,
                |b| ResponsesDecoder::new(self.provider_name()).whole(b),
                cx,
            )
            .instrument(span.span().clone())
            .await;
        span.outcome(&result);
        result
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        let span = self.inner.call_span(self.inner.model_for(&request));
        let body = self.body(&request, true);
        let decoder = ResponsesDecoder::new(self.provider_name());
        event_stream(&self.inner, span, body, decoder, cx)
    }

    fn provider_name(&self) -> &str {
        &self.inner.config().provider_name
    }

    fn model_name(&self) -> &str {
        &self.inner.config().model
    }
}

// ---------------------------------------------------------------- request

/// A Responses API request, borrowing everything it sends.
pub(crate) struct ResponsesRequest<'a> {
    /// The provider name: reasoning parts it made are sent back.
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) system_prompt: Option<Cow<'a, str>>,
    pub(crate) messages: &'a History,
    pub(crate) tools: &'a [ToolDefinition],
    pub(crate) tool_choice: Option<&'a ToolChoice>,
    pub(crate) temperature: Option<f32>,
    pub(crate) max_output_tokens: Option<u32>,
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) response_format: Option<&'a ResponseFormat>,
    pub(crate) stream: bool,
    pub(crate) extra_body: Option<&'a Map<String, Value>>,
}

impl Serialize for ResponsesRequest<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry(
            "input",
            &Input {
                provider: self.provider,
                system: self.system_prompt.as_deref(),
                history: self.messages,
            },
        )?;
        if !self.tools.is_empty() {
            map.serialize_entry("tools", &Tools(self.tools))?;
            if let Some(choice) = self.tool_choice {
                map.serialize_entry("tool_choice", &WireToolChoice(choice))?;
            }
            if let Some(parallel) = self.parallel_tool_calls {
                map.serialize_entry("parallel_tool_calls", &parallel)?;
            }
        }
        if let Some(t) = self.temperature {
            map.serialize_entry("temperature", &t)?;
        }
        if let Some(m) = self.max_output_tokens {
            map.serialize_entry("max_output_tokens", &m)?;
        }
        if let Some(format) = self.response_format {
            map.serialize_entry("text", &TextConfig(format))?;
        }
        map.serialize_entry("store", &false)?;
        map.serialize_entry("include", &["reasoning.encrypted_content"])?;
        map.serialize_entry("stream", &self.stream)?;
        for (k, v) in self.extra_body.into_iter().flatten() {
            if !RESERVED.contains(&k.as_str()) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// `{"format": {"type": "json_schema", name, schema, strict}}`.
struct TextConfig<'a>(&'a ResponseFormat);

impl Serialize for TextConfig<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Format<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            name: &'a str,
            schema: &'a Value,
            strict: bool,
        }
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(
            "format",
            &Format {
                kind: "json_schema",
                name: &self.0.name,
                schema: &self.0.schema,
                strict: self.0.strict,
            },
        )?;
        map.end()
    }
}

/// The `input` items: the developer message, then the history.
struct Input<'a> {
    provider: &'a str,
    system: Option<&'a str>,
    history: &'a History,
}

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        if let Some(system) = self.system {
            seq.serialize_element(&RoleText("developer", system))?;
        }
        for m in self.history.iter() {
            write_message(&mut seq, m, self.provider)?;
        }
        seq.end()
    }
}

/// `{"role": …, "content": "…"}`.
struct RoleText<'a>(&'static str, &'a str);

impl Serialize for RoleText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("role", self.0)?;
        map.serialize_entry("content", self.1)?;
        map.end()
    }
}

/// The input items of one history message: a message item, and for an
/// assistant its function calls; a tool result is a `function_call_output`.
fn write_message<S: SerializeSeq>(
    seq: &mut S,
    m: &Message,
    provider: &str,
) -> Result<(), S::Error> {
    match m.role {
        Role::Tool => {
            let call_id = m.tool_call_id.as_deref().unwrap_or("");
            seq.serialize_element(&FunctionCallOutput {
                kind: "function_call_output",
                call_id,
                output: ContentText(&m.parts),
            })
        }
        Role::Assistant => {
            // Reasoning this provider made goes back first, unchanged;
            // any other provider's is left out.
            for part in &m.parts {
                if let Part::Reasoning { reasoning } = part
                    && reasoning.is_from(provider)
                    && (reasoning.signature.is_some() || reasoning.id.is_some())
                {
                    seq.serialize_element(&ReasoningItem(reasoning))?;
                }
            }
            let has_text = m.parts.iter().any(|p| match p {
                Part::Text { text } => !text.is_empty(),
                Part::Data { .. } | Part::File { .. } => true,
                _ => false,
            });
            if has_text || m.tool_calls.is_empty() {
                seq.serialize_element(&RoleContent {
                    role: "assistant",
                    parts: &m.parts,
                })?;
            }
            for call in &m.tool_calls {
                let arguments = if call.arguments.trim().is_empty() {
                    "{}"
                } else {
                    call.arguments.as_str()
                };
                seq.serialize_element(&FunctionCallItem {
                    kind: "function_call",
                    call_id: &call.id,
                    name: &call.name,
                    arguments,
                })?;
            }
            Ok(())
        }
        Role::User => seq.serialize_element(&RoleContent {
            role: "user",
            parts: &m.parts,
        }),
        Role::System => seq.serialize_element(&RoleContent {
            role: "developer",
            parts: &m.parts,
        }),
    }
}

/// `{"type": "reasoning", id, summary, encrypted_content}`.
struct ReasoningItem<'a>(&'a Reasoning);

impl Serialize for ReasoningItem<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Summary<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            text: &'a str,
        }
        let r = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", "reasoning")?;
        if let Some(id) = &r.id {
            map.serialize_entry("id", id)?;
        }
        let summary: &[Summary<'_>] = if r.text.is_empty() {
            &[]
        } else {
            &[Summary {
                kind: "summary_text",
                text: &r.text,
            }]
        };
        map.serialize_entry("summary", summary)?;
        if let Some(encrypted) = &r.signature {
            map.serialize_entry("encrypted_content", encrypted)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct FunctionCallOutput<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    output: ContentText<'a>,
}

#[derive(Serialize)]
struct FunctionCallItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    call_id: &'a str,
    name: &'a str,
    arguments: &'a str,
}

/// A message item: its text as one string, or, for a user message with
/// images, `input_text` and `input_image` parts.
struct RoleContent<'a> {
    role: &'static str,
    parts: &'a [Part],
}

impl Serialize for RoleContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("role", self.role)?;
        let has_image = self.role == "user" && self.parts.iter().any(|p| image_url(p).is_some());
        if has_image {
            map.serialize_entry("content", &InputParts(self.parts))?;
        } else {
            map.serialize_entry("content", &ContentText(self.parts))?;
        }
        map.end()
    }
}

struct InputParts<'a>(&'a [Part]);

impl Serialize for InputParts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for part in self.0 {
            seq.serialize_element(&InputPart(part))?;
        }
        seq.end()
    }
}

struct InputPart<'a>(&'a Part);

impl Serialize for InputPart<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        match image_url(self.0) {
            Some(url) => {
                map.serialize_entry("type", "input_image")?;
                map.serialize_entry("image_url", &url)?;
            }
            None => {
                map.serialize_entry("type", "input_text")?;
                map.serialize_entry("text", &ContentText(std::slice::from_ref(self.0)))?;
            }
        }
        map.end()
    }
}

/// Function tools: `{"type": "function", name, description, parameters}`.
struct Tools<'a>(&'a [ToolDefinition]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            name: &'a str,
            #[serde(skip_serializing_if = "str::is_empty")]
            description: &'a str,
            parameters: &'a Value,
        }
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for tool in self.0 {
            seq.serialize_element(&Tool {
                kind: "function",
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            })?;
        }
        seq.end()
    }
}

/// `"auto"`, `"none"`, `"required"` or `{"type": "function", "name": …}`.
struct WireToolChoice<'a>(&'a ToolChoice);

impl Serialize for WireToolChoice<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ToolChoice::Auto => s.serialize_str("auto"),
            ToolChoice::None => s.serialize_str("none"),
            ToolChoice::Required => s.serialize_str("required"),
            ToolChoice::Tool(name) => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("type", "function")?;
                map.serialize_entry("name", name)?;
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::{FileContent, ToolCall, ToolResult};
    use serde_json::json;

    fn body(history: &History, tools: &[ToolDefinition], format: Option<&ResponseFormat>) -> Value {
        serde_json::to_value(ResponsesRequest {
            provider: "openai",
            model: "gpt-4.1",
            system_prompt: Some("be brief".into()),
            messages: history,
            tools,
            tool_choice: Some(&ToolChoice::Tool("add".into())),
            temperature: None,
            max_output_tokens: Some(64),
            parallel_tool_calls: Some(true),
            response_format: format,
            stream: true,
            extra_body: None,
        })
        .unwrap()
    }

    #[test]
    fn reasoning_goes_back_to_the_provider_that_made_it_only() {
        let mut own = Reasoning::new("openai", "adding").with_signature("gAAAA-enc");
        own.summary = true;
        own.id = Some("rs_1".into());
        let other = Reasoning::new("anthropic", "hmm").with_signature("sig");
        let mut assistant = Message::with_parts(
            Role::Assistant,
            vec![Part::reasoning(own), Part::reasoning(other)],
        );
        assistant.tool_calls = vec![ToolCall::new("call_1", "add", "{}")];
        let history = History::from(vec![Message::user("hi"), assistant]);
        let v = body(&history, &[], None);
        assert_eq!(
            v["input"],
            json!([
                {"role":"developer","content":"be brief"},
                {"role":"user","content":"hi"},
                {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"adding"}],
                 "encrypted_content":"gAAAA-enc"},
                {"type":"function_call","call_id":"call_1","name":"add","arguments":"{}"}
            ])
        );
    }

    #[test]
    fn a_tool_round_trip_is_written_as_input_items() {
        let mut assistant = Message::assistant("let me add");
        assistant.tool_calls = vec![
            ToolCall::new("call_1", "add", r#"{"a":1}"#),
            ToolCall::new("call_2", "add", ""),
        ];
        let history = History::from(vec![
            Message::user("hi"),
            assistant,
            ToolResult::json("call_1", &json!({"sum": 3})).into_message(),
        ]);
        let tools = [ToolDefinition::without_parameters("add", "adds")];
        let v = body(&history, &tools, None);
        assert_eq!(
            v["input"],
            json!([
                {"role":"developer","content":"be brief"},
                {"role":"user","content":"hi"},
                {"role":"assistant","content":"let me add"},
                {"type":"function_call","call_id":"call_1","name":"add","arguments":"{\"a\":1}"},
                {"type":"function_call","call_id":"call_2","name":"add","arguments":"{}"},
                {"type":"function_call_output","call_id":"call_1","output":"{\"sum\":3}"}
            ])
        );
        assert_eq!(v["tools"][0]["type"], "function");
        assert_eq!(v["tools"][0]["name"], "add");
        assert_eq!(v["tools"][0]["description"], "adds");
        assert!(v["tools"][0].get("function").is_none(), "flat, not nested");
        assert_eq!(v["tool_choice"], json!({"type":"function","name":"add"}));
        assert_eq!(v["parallel_tool_calls"], true);
        assert_eq!(v["max_output_tokens"], 64);
        assert_eq!(v["store"], false);
        assert_eq!(v["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(v["stream"], true);
        assert!(v.get("max_tokens").is_none() && v.get("messages").is_none());
    }

    #[test]
    fn structured_output_is_text_format_and_images_are_input_images() {
        let format = ResponseFormat::new("answer", json!({"type":"object"}));
        let image = Part::file(FileContent {
            blob: None,
            name: None,
            mime_type: Some("image/png".into()),
            uri: None,
            bytes: Some("AAAA".into()),
        });
        let history = History::from(vec![Message::with_parts(
            Role::User,
            vec![Part::text("look"), image],
        )]);
        let v = body(&history, &[], Some(&format));
        assert_eq!(
            v["text"],
            json!({"format":{"type":"json_schema","name":"answer","schema":{"type":"object"},"strict":true}})
        );
        assert_eq!(
            v["input"][1]["content"],
            json!([{"type":"input_text","text":"look"},
                   {"type":"input_image","image_url":"data:image/png;base64,AAAA"}])
        );
        assert!(v.get("tools").is_none() && v.get("tool_choice").is_none());
        assert!(v.get("parallel_tool_calls").is_none());
    }

    #[test]
    fn the_endpoint_is_beside_chat_completions() {
        assert_eq!(
            responses_endpoint("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/responses"
        );
    }
}
