//! The Gemini API's JSON shapes: the `generateContent` request, written
//! from borrowed core types, and the answer (`GenerateContentResponse`,
//! also each event of a stream), read leniently.

use std::borrow::Cow;

use looopy_core::{
    FileContent, History, Message, Part, ResponseFormat, Role, ToolChoice, ToolDefinition,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The name reported as `gen_ai.provider.name` (OpenTelemetry's for the
/// Gemini API), which also marks the reasoning this API wrote.
pub const PROVIDER_NAME: &str = "gcp.gemini";

/// A `generateContent` request.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system_instruction: Option<Content<'a>>,
    pub(crate) contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<ToolList<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_config: Option<ToolConfig<'a>>,
    pub(crate) generation_config: GenerationConfig<'a>,
}

/// One turn of the conversation: `user` or `model`, and its parts.
#[derive(Debug, Serialize)]
pub(crate) struct Content<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<&'static str>,
    pub(crate) parts: Vec<WirePart<'a>>,
}

/// One part of a request's content.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WirePart<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<Cow<'a, str>>,
    /// A thought summary sent back (with its signature).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) thought: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) inline_data: Option<InlineData<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) file_data: Option<FileData<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) function_response: Option<FunctionResponse<'a>>,
    /// The opaque signature the model gave this part, sent back unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thought_signature: Option<&'a str>,
}

impl<'a> WirePart<'a> {
    pub(crate) fn text(text: &'a str) -> Self {
        WirePart {
            text: Some(Cow::Borrowed(text)),
            ..WirePart::empty()
        }
    }

    pub(crate) fn empty() -> Self {
        WirePart {
            text: None,
            thought: false,
            inline_data: None,
            file_data: None,
            function_call: None,
            function_response: None,
            thought_signature: None,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InlineData<'a> {
    pub(crate) mime_type: &'a str,
    pub(crate) data: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileData<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mime_type: Option<&'a str>,
    pub(crate) file_uri: &'a str,
}

#[derive(Debug, Serialize)]
pub(crate) struct FunctionCall<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<&'a str>,
    pub(crate) name: &'a str,
    pub(crate) args: Value,
}

#[derive(Debug, Serialize)]
pub(crate) struct FunctionResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<&'a str>,
    pub(crate) name: &'a str,
    pub(crate) response: Value,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolList<'a> {
    pub(crate) function_declarations: Vec<FunctionDeclaration<'a>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct FunctionDeclaration<'a> {
    pub(crate) name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub(crate) description: &'a str,
    /// A JSON schema, as `parametersJsonSchema` takes it.
    #[serde(rename = "parametersJsonSchema")]
    pub(crate) parameters: &'a Value,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolConfig<'a> {
    pub(crate) function_calling_config: FunctionCallingConfig<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionCallingConfig<'a> {
    pub(crate) mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) allowed_function_names: Option<[&'a str; 1]>,
}

impl<'a> ToolConfig<'a> {
    pub(crate) fn of(choice: &'a ToolChoice) -> Self {
        let (mode, allowed) = match choice {
            ToolChoice::Auto => ("AUTO", None),
            ToolChoice::None => ("NONE", None),
            ToolChoice::Required => ("ANY", None),
            ToolChoice::Tool(name) => ("ANY", Some([name.as_str()])),
        };
        ToolConfig {
            function_calling_config: FunctionCallingConfig {
                mode,
                allowed_function_names: allowed,
            },
        }
    }
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_mime_type: Option<&'static str>,
    /// A JSON schema (`responseJsonSchema` takes standard JSON Schema,
    /// where `responseSchema` takes Google's OpenAPI subset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_json_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thinking_config: Option<ThinkingConfig>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thinking_budget: Option<i32>,
    pub(crate) include_thoughts: bool,
}

impl<'a> GenerationConfig<'a> {
    pub(crate) fn with_format(mut self, format: Option<&'a ResponseFormat>) -> Self {
        if let Some(f) = format {
            self.response_mime_type = Some("application/json");
            self.response_json_schema = Some(&f.schema);
        }
        self
    }
}

/// The `functionDeclarations` of a tool list (none when it is empty).
pub(crate) fn tool_lists(tools: &[ToolDefinition]) -> Vec<ToolList<'_>> {
    if tools.is_empty() {
        return Vec::new();
    }
    vec![ToolList {
        function_declarations: tools
            .iter()
            .map(|t| FunctionDeclaration {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            })
            .collect(),
    }]
}

/// The history as `contents`. Consecutive tool results become one `user`
/// turn of `functionResponse` parts, each named after the call it answers.
pub(crate) fn contents(history: &History) -> Vec<Content<'_>> {
    let mut out: Vec<Content<'_>> = Vec::with_capacity(history.len());
    let messages: Vec<&Message> = history.iter().collect();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.as_deref();
                let name = id
                    .and_then(|id| call_name(&messages[..i], id))
                    .unwrap_or("tool");
                let part = WirePart {
                    function_response: Some(FunctionResponse {
                        id: id.filter(|id| !is_local_id(id)),
                        name,
                        response: tool_response(m),
                    }),
                    ..WirePart::empty()
                };
                match out.last_mut() {
                    Some(last) if last.role == Some("user") && is_responses(last) => {
                        last.parts.push(part)
                    }
                    _ => out.push(Content {
                        role: Some("user"),
                        parts: vec![part],
                    }),
                }
            }
            Role::Assistant => {
                let mut parts = user_parts(&m.parts);
                let first_call = parts.len();
                for call in &m.tool_calls {
                    parts.push(WirePart {
                        function_call: Some(FunctionCall {
                            id: Some(call.id.as_str()).filter(|id| !is_local_id(id)),
                            name: &call.name,
                            args: arguments(&call.arguments),
                        }),
                        ..WirePart::empty()
                    });
                }
                attach_signatures(m, &mut parts, first_call);
                if !parts.is_empty() {
                    out.push(Content {
                        role: Some("model"),
                        parts,
                    });
                }
            }
            Role::User | Role::System => {
                let parts = user_parts(&m.parts);
                if !parts.is_empty() {
                    out.push(Content {
                        role: Some("user"),
                        parts,
                    });
                }
            }
        }
    }
    out
}

/// Gives the model's parts back the thought signatures it sent with them
/// (kept as reasoning parts of the message): the signatures in order, one
/// per function call from the first, as Gemini sends them; a signature
/// of an answer without calls goes on its first part. Reasoning of other
/// providers is left out.
fn attach_signatures<'a>(m: &'a Message, parts: &mut [WirePart<'a>], first_call: usize) {
    let mut signatures = m
        .reasoning()
        .filter(|r| r.is_from(PROVIDER_NAME))
        .filter_map(|r| r.signature.as_deref());
    let calls = parts.len() - first_call;
    let targets: Box<dyn Iterator<Item = usize>> = if calls > 0 {
        Box::new(first_call..parts.len())
    } else {
        Box::new(0..parts.len().min(1))
    };
    for (i, sig) in targets.zip(&mut signatures) {
        parts[i].thought_signature = Some(sig);
    }
}

fn is_responses(c: &Content<'_>) -> bool {
    c.parts.iter().all(|p| p.function_response.is_some())
}

/// The prefix of the ids this crate makes for calls the model sent without
/// one (they are not sent back: the model never knew them).
pub(crate) const LOCAL_ID_PREFIX: &str = "gemini-call-";

fn is_local_id(id: &str) -> bool {
    id.starts_with(LOCAL_ID_PREFIX)
}

/// The name of the call with this id, in the messages before.
fn call_name<'a>(before: &[&'a Message], id: &str) -> Option<&'a str> {
    before
        .iter()
        .rev()
        .flat_map(|m| m.tool_calls.iter())
        .find(|c| c.id == id)
        .map(|c| c.name.as_str())
}

/// A call's arguments as the object Gemini takes (`{}` when empty or not
/// JSON: the model sent JSON, so this is only a damaged history).
fn arguments(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Map::new()),
    }
}

/// A tool result as the object `functionResponse.response` takes: a JSON
/// object as it is; anything else under `output` (or `error` for a failure),
/// as Google's SDKs do.
fn tool_response(m: &Message) -> Value {
    let text = m.text();
    let value = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
    match value {
        Value::Object(o) if !m.is_error() => Value::Object(o),
        v => {
            let key = if m.is_error() { "error" } else { "output" };
            let mut o = Map::new();
            o.insert(key.to_owned(), v);
            Value::Object(o)
        }
    }
}

/// Text, data (as JSON text) and file parts.
fn user_parts(parts: &[Part]) -> Vec<WirePart<'_>> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } if !text.is_empty() => Some(WirePart::text(text)),
            Part::Data { data } => Some(WirePart {
                text: Some(Cow::Owned(data.to_string())),
                ..WirePart::empty()
            }),
            Part::File { file } => file_part(file),
            // A part kind newer than this code: nothing to send.
            _ => None,
        })
        .collect()
}

fn file_part(file: &FileContent) -> Option<WirePart<'_>> {
    if let Some(data) = &file.bytes {
        let mime = file
            .mime_type
            .as_deref()
            .unwrap_or("application/octet-stream");
        return Some(WirePart {
            inline_data: Some(InlineData {
                mime_type: mime,
                data,
            }),
            ..WirePart::empty()
        });
    }
    let uri = file.uri.as_deref()?;
    Some(WirePart {
        file_data: Some(FileData {
            mime_type: file.mime_type.as_deref(),
            file_uri: uri,
        }),
        ..WirePart::empty()
    })
}

// ---------------------------------------------------------------- answers

/// A `GenerateContentResponse`: the whole answer, or one stream event.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateResponse {
    #[serde(default)]
    pub(crate) candidates: Vec<Candidate>,
    #[serde(default)]
    pub(crate) prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub(crate) usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    pub(crate) model_version: Option<String>,
    /// An error object sent inside a stream.
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    #[serde(default)]
    pub(crate) content: Option<CandidateContent>,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
    #[serde(default)]
    pub(crate) index: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct CandidateContent {
    #[serde(default)]
    pub(crate) parts: Vec<AnswerPart>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AnswerPart {
    #[serde(default)]
    pub(crate) text: Option<String>,
    #[serde(default)]
    pub(crate) thought: bool,
    #[serde(default)]
    pub(crate) thought_signature: Option<String>,
    #[serde(default)]
    pub(crate) function_call: Option<AnswerCall>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct AnswerCall {
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) args: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    #[serde(default)]
    pub(crate) block_reason: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    #[serde(default)]
    pub(crate) prompt_token_count: u64,
    #[serde(default)]
    pub(crate) candidates_token_count: u64,
    #[serde(default)]
    pub(crate) thoughts_token_count: u64,
    #[serde(default)]
    pub(crate) cached_content_token_count: u64,
    #[serde(default)]
    pub(crate) tool_use_prompt_token_count: u64,
    #[serde(default)]
    pub(crate) total_token_count: Option<u64>,
}

impl UsageMetadata {
    /// As core usage: output counts the thoughts too (core's reasoning
    /// tokens are part of the output), input the tool-use prompt.
    pub(crate) fn to_usage(self) -> looopy_core::Usage {
        let input = self.prompt_token_count + self.tool_use_prompt_token_count;
        let output = self.candidates_token_count + self.thoughts_token_count;
        looopy_core::Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: self.total_token_count.unwrap_or(input + output),
            reasoning_tokens: self.thoughts_token_count,
            cached_input_tokens: self.cached_content_token_count,
            cache_creation_input_tokens: 0,
        }
    }
}
