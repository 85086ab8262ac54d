//! The OpenAI chat completions JSON shapes.
//!
//! The request is serialized straight from borrowed core types (the history
//! is never copied into a `serde_json::Value` tree); answers are read into
//! lenient structs that tolerate the variations of OpenAI-compatible servers.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use looopy_core::{
    FileContent, History, Message, Part, ResponseFormat, Role, ToolCall, ToolChoice,
    ToolDefinition, Usage,
};
use serde::de::{Deserializer, IgnoredAny};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Keys of the request body that `extra_body` may not override.
const RESERVED: [&str; 12] = [
    "model",
    "messages",
    "tools",
    "tool_choice",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "parallel_tool_calls",
    "response_format",
    "stream",
    "stream_options",
    "n",
];

/// A chat completions request, borrowing everything it sends.
pub(crate) struct ChatRequest<'a> {
    pub(crate) model: &'a str,
    /// The system prompt (owned when an instruction was added to it).
    pub(crate) system_prompt: Option<Cow<'a, str>>,
    pub(crate) messages: &'a History,
    /// The `tools` array, written before (`ToolsJson`); `None`: no tools.
    pub(crate) tools: Option<&'a RawValue>,
    pub(crate) tool_choice: Option<&'a ToolChoice>,
    pub(crate) temperature: Option<f32>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) max_completion_tokens: Option<u32>,
    pub(crate) parallel_tool_calls: Option<bool>,
    /// Sent as `response_format` (the provider leaves it out when the
    /// endpoint has no native support).
    pub(crate) response_format: Option<&'a ResponseFormat>,
    pub(crate) stream: bool,
    /// Extra top-level fields (`LlmRequest.metadata["extra_body"]`).
    pub(crate) extra_body: Option<&'a Map<String, Value>>,
}

impl Serialize for ChatRequest<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry(
            "messages",
            &Messages {
                system: self.system_prompt.as_deref(),
                history: self.messages,
            },
        )?;
        if let Some(tools) = self.tools {
            map.serialize_entry("tools", tools)?;
            if let Some(choice) = self.tool_choice {
                map.serialize_entry("tool_choice", &WireToolChoice(choice))?;
            }
            // OpenAI rejects `parallel_tool_calls` on a request without tools.
            if let Some(parallel) = self.parallel_tool_calls {
                map.serialize_entry("parallel_tool_calls", &parallel)?;
            }
        }
        if let Some(t) = self.temperature {
            map.serialize_entry("temperature", &t)?;
        }
        if let Some(m) = self.max_tokens {
            map.serialize_entry("max_tokens", &m)?;
        }
        if let Some(m) = self.max_completion_tokens {
            map.serialize_entry("max_completion_tokens", &m)?;
        }
        if let Some(format) = self.response_format {
            map.serialize_entry("response_format", &WireResponseFormat(format))?;
        }
        map.serialize_entry("stream", &self.stream)?;
        if self.stream {
            map.serialize_entry(
                "stream_options",
                &StreamOptions {
                    include_usage: true,
                },
            )?;
        }
        for (k, v) in self.extra_body.into_iter().flatten() {
            if !RESERVED.contains(&k.as_str()) {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// `{"type": "json_schema", "json_schema": {name, schema, strict}}`.
struct WireResponseFormat<'a>(&'a ResponseFormat);

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

impl Serialize for WireResponseFormat<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", "json_schema")?;
        map.serialize_entry(
            "json_schema",
            &JsonSchemaFormat {
                name: &self.0.name,
                schema: &self.0.schema,
                strict: self.0.strict,
            },
        )?;
        map.end()
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

struct Messages<'a> {
    system: Option<&'a str>,
    history: &'a History,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.history.len() + 1))?;
        if let Some(system) = self.system {
            seq.serialize_element(&SystemMessage(system))?;
        }
        for m in self.history.iter() {
            seq.serialize_element(&WireMessage(m))?;
        }
        seq.end()
    }
}

struct SystemMessage<'a>(&'a str);

impl Serialize for SystemMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("role", "system")?;
        map.serialize_entry("content", self.0)?;
        map.end()
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// One history message in OpenAI form.
struct WireMessage<'a>(&'a Message);

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("role", role_name(m.role))?;
        let has_image = m.role == Role::User && m.parts.iter().any(|p| image_url(p).is_some());
        if has_image {
            map.serialize_entry("content", &ContentParts(&m.parts))?;
        } else if m.parts.iter().all(Part::is_reasoning)
            && m.role == Role::Assistant
            && !m.tool_calls.is_empty()
        {
            map.serialize_entry("content", &Option::<&str>::None)?;
        } else {
            map.serialize_entry("content", &ContentText(&m.parts))?;
        }
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &WireToolCalls(&m.tool_calls))?;
        }
        if let Some(id) = &m.tool_call_id {
            map.serialize_entry("tool_call_id", id)?;
        }
        map.end()
    }
}

/// The parts of a message as one string: text parts joined as they are,
/// data parts as JSON text and files as `[file name]`, each of those on a
/// line of its own. Reasoning parts are left out: chat completions takes
/// no reasoning back.
pub(crate) struct ContentText<'a>(pub(crate) &'a [Part]);

impl Serialize for ContentText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            [] => s.serialize_str(""),
            [Part::Text { text }] => s.serialize_str(text),
            _ => s.collect_str(self),
        }
    }
}

impl fmt::Display for ContentText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut prev_text: Option<bool> = None;
        for part in self.0 {
            if part.is_reasoning() {
                continue;
            }
            let is_text = matches!(part, Part::Text { .. });
            if prev_text.is_some_and(|p| !(p && is_text)) {
                f.write_char('\n')?;
            }
            prev_text = Some(is_text);
            match part {
                Part::Text { text } => f.write_str(text)?,
                Part::Data { data } => write!(f, "{data}")?,
                Part::File { file } => write_file_placeholder(f, file)?,
                // A part kind newer than this code: nothing to send.
                _ => {}
            }
        }
        Ok(())
    }
}

fn write_file_placeholder(f: &mut impl fmt::Write, file: &FileContent) -> fmt::Result {
    let name = file.name.as_deref().or(file.uri.as_deref()).unwrap_or("");
    write!(f, "[file {name}]")
}

/// The parts of a user message as OpenAI content parts (text and images).
struct ContentParts<'a>(&'a [Part]);

impl Serialize for ContentParts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for part in self.0 {
            seq.serialize_element(&ContentPart(part))?;
        }
        seq.end()
    }
}

struct ContentPart<'a>(&'a Part);

impl Serialize for ContentPart<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        if let Some(url) = image_url(self.0) {
            map.serialize_entry("type", "image_url")?;
            map.serialize_entry("image_url", &ImageUrl { url })?;
        } else {
            map.serialize_entry("type", "text")?;
            map.serialize_entry("text", &ContentText(std::slice::from_ref(self.0)))?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: ImageUrlText<'a>,
}

/// An image reference: its URI, or a `data:` URL built from inline bytes.
pub(crate) enum ImageUrlText<'a> {
    Uri(&'a str),
    Data { mime: &'a str, base64: &'a str },
}

impl Serialize for ImageUrlText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ImageUrlText::Uri(u) => s.serialize_str(u),
            ImageUrlText::Data { mime, base64 } => {
                s.collect_str(&format_args!("data:{mime};base64,{base64}"))
            }
        }
    }
}

const IMAGE_EXTENSIONS: [&str; 6] = [".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"];

/// The image URL of a file part that holds an image (by MIME type, or by
/// file extension when the type is unknown).
pub(crate) fn image_url(part: &Part) -> Option<ImageUrlText<'_>> {
    let Part::File { file } = part else {
        return None;
    };
    let is_image = match &file.mime_type {
        Some(mime) => mime.starts_with("image/"),
        None => {
            let name = file.uri.as_deref().or(file.name.as_deref()).unwrap_or("");
            let lower = name.to_ascii_lowercase();
            IMAGE_EXTENSIONS.iter().any(|ext| lower.ends_with(ext))
        }
    };
    if !is_image {
        return None;
    }
    if let Some(uri) = &file.uri {
        return Some(ImageUrlText::Uri(uri));
    }
    let base64 = file.bytes.as_deref()?;
    let mime = file.mime_type.as_deref().unwrap_or("image/png");
    Some(ImageUrlText::Data { mime, base64 })
}

struct WireToolCalls<'a>(&'a [ToolCall]);

impl Serialize for WireToolCalls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for call in self.0 {
            let arguments = if call.arguments.trim().is_empty() {
                "{}"
            } else {
                call.arguments.as_str()
            };
            seq.serialize_element(&FunctionEnvelope {
                id: Some(&call.id),
                kind: "function",
                function: FunctionCall {
                    name: &call.name,
                    arguments,
                },
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct FunctionEnvelope<'a, F> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: F,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// A tool list as the `tools` array of a request.
pub(crate) struct Tools<'a>(pub(crate) &'a [ToolDefinition]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for tool in self.0 {
            seq.serialize_element(&FunctionEnvelope {
                id: None,
                kind: "function",
                function: FunctionDef {
                    name: &tool.name,
                    description: (!tool.description.is_empty()).then_some(&tool.description),
                    parameters: &tool.parameters,
                },
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct FunctionDef<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a String>,
    parameters: &'a Value,
}

struct WireToolChoice<'a>(&'a ToolChoice);

#[derive(Serialize)]
struct NamedFunction<'a> {
    name: &'a str,
}

impl Serialize for WireToolChoice<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ToolChoice::Auto => s.serialize_str("auto"),
            ToolChoice::None => s.serialize_str("none"),
            ToolChoice::Required => s.serialize_str("required"),
            ToolChoice::Tool(name) => FunctionEnvelope {
                id: None,
                kind: "function",
                function: NamedFunction { name },
            }
            .serialize(s),
        }
    }
}

// ---------------------------------------------------------------- answers

/// A non-streamed answer.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatCompletion {
    #[serde(default)]
    pub(crate) model: Option<String>,
    #[serde(default)]
    pub(crate) choices: Vec<CompletionChoice>,
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
    /// Some proxies answer 200 with an error object.
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionChoice {
    #[serde(default)]
    pub(crate) message: Option<Delta>,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// One streamed chunk (`chat.completion.chunk`), or an error object sent
/// in the middle of a stream.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatChunk {
    #[serde(default)]
    pub(crate) model: Option<String>,
    #[serde(default)]
    pub(crate) choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChunkChoice {
    #[serde(default)]
    pub(crate) index: Option<u32>,
    #[serde(default)]
    pub(crate) delta: Option<Delta>,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// A streamed delta, or a whole response message (same fields).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(default, deserialize_with = "lenient_content")]
    pub(crate) content: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) reasoning_content: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) reasoning: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub(crate) refusal: Option<String>,
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<DeltaToolCall>>,
}

impl Delta {
    /// The reasoning text, whichever field carried it.
    pub(crate) fn take_reasoning(&mut self) -> Option<String> {
        self.reasoning_content
            .take()
            .filter(|r| !r.is_empty())
            .or_else(|| self.reasoning.take())
            .filter(|r| !r.is_empty())
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct DeltaToolCall {
    #[serde(default)]
    pub(crate) index: Option<usize>,
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<DeltaFunction>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct DeltaFunction {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default, deserialize_with = "lenient_arguments")]
    pub(crate) arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    pub(crate) fn to_usage(&self) -> Usage {
        let input = self.prompt_tokens.unwrap_or(0);
        let output = self.completion_tokens.unwrap_or(0);
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: self.total_tokens.unwrap_or(input + output),
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            cached_input_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_creation_input_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum LenientText {
    Text(String),
    Other(IgnoredAny),
}

/// A string, or nothing for null or any other shape.
fn lenient_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<LenientText>::deserialize(d)? {
        Some(LenientText::Text(t)) => Some(t),
        _ => None,
    })
}

#[derive(Deserialize)]
#[serde(untagged)]
enum LenientContent {
    Text(String),
    Parts(Vec<TextPart>),
    Other(IgnoredAny),
}

#[derive(Deserialize)]
struct TextPart {
    #[serde(default)]
    text: Option<String>,
}

/// Content as a string, or the text parts of a content-part array joined.
fn lenient_content<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<LenientContent>::deserialize(d)? {
        Some(LenientContent::Text(t)) => Some(t),
        Some(LenientContent::Parts(parts)) => {
            Some(parts.into_iter().filter_map(|p| p.text).collect())
        }
        _ => None,
    })
}

#[derive(Deserialize)]
#[serde(untagged)]
enum LenientArguments {
    Text(String),
    Json(Value),
}

/// Arguments as the raw string; a server that sends an object gets it
/// serialized back to JSON text.
fn lenient_arguments<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<LenientArguments>::deserialize(d)? {
        Some(LenientArguments::Text(t)) => Some(t),
        Some(LenientArguments::Json(Value::Null)) | None => None,
        Some(LenientArguments::Json(v)) => Some(v.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::ToolResult;
    use serde_json::json;

    fn body(req: &ChatRequest<'_>) -> Value {
        serde_json::to_value(req).unwrap()
    }

    fn request<'a>(history: &'a History, tools: Option<&'a RawValue>) -> ChatRequest<'a> {
        ChatRequest {
            model: "m",
            system_prompt: Some("be brief".into()),
            messages: history,
            tools,
            tool_choice: Some(&ToolChoice::Auto),
            temperature: None,
            max_tokens: Some(5),
            max_completion_tokens: None,
            parallel_tool_calls: None,
            response_format: None,
            stream: true,
            extra_body: None,
        }
    }

    #[test]
    fn maps_a_tool_round_trip() {
        let mut assistant = Message::with_parts(Role::Assistant, vec![]);
        assistant.tool_calls = vec![ToolCall::new("c1", "add", r#"{"a":1}"#)];
        let history = History::from(vec![
            Message::user("hi"),
            assistant,
            ToolResult::json("c1", &json!({"sum": 3})).into_message(),
        ]);
        let tools = [ToolDefinition::without_parameters("add", "adds")];
        let tools = serde_json::value::to_raw_value(&Tools(&tools)).unwrap();
        let v = body(&request(&history, Some(&tools)));
        assert_eq!(
            v["messages"],
            json!([
                {"role":"system","content":"be brief"},
                {"role":"user","content":"hi"},
                {"role":"assistant","content":null,"tool_calls":[
                    {"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1}"}}]},
                {"role":"tool","content":"{\"sum\":3}","tool_call_id":"c1"}
            ])
        );
        assert_eq!(v["tools"][0]["function"]["name"], "add");
        assert_eq!(v["tool_choice"], "auto");
        assert_eq!(v["stream_options"], json!({"include_usage": true}));
        assert_eq!(v["max_tokens"], 5);
        assert!(v.get("temperature").is_none());
    }

    #[test]
    fn reasoning_parts_are_left_out() {
        let thought = Part::reasoning(looopy_core::Reasoning::new("anthropic", "hm"));
        let mut calling = Message::with_parts(Role::Assistant, vec![thought.clone()]);
        calling.tool_calls = vec![ToolCall::new("c1", "add", "{}")];
        let history = History::from(vec![
            calling,
            ToolResult::json("c1", &json!(3)).into_message(),
            Message::with_parts(Role::Assistant, vec![thought, Part::text("3")]),
        ]);
        let v = body(&ChatRequest {
            system_prompt: None,
            ..request(&history, None)
        });
        assert_eq!(v["messages"][0]["content"], Value::Null);
        assert_eq!(v["messages"][2]["content"], "3");
        assert!(!v.to_string().contains("hm"));
    }

    #[test]
    fn data_and_images_are_mapped() {
        let image = Part::file(FileContent {
            blob: None,
            name: None,
            mime_type: Some("image/png".into()),
            uri: None,
            bytes: Some("AAAA".into()),
        });
        let pdf = Part::file(FileContent {
            blob: None,
            name: Some("a.pdf".into()),
            mime_type: Some("application/pdf".into()),
            uri: None,
            bytes: None,
        });
        let history = History::from(vec![
            Message::with_parts(Role::User, vec![Part::text("look"), image]),
            Message::with_parts(
                Role::User,
                vec![
                    Part::text("a"),
                    Part::text("b"),
                    Part::data(json!({"k": 1})),
                    pdf,
                ],
            ),
        ]);
        let v = body(&ChatRequest {
            system_prompt: None,
            ..request(&history, None)
        });
        assert_eq!(
            v["messages"][0]["content"],
            json!([{"type":"text","text":"look"},
                   {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}])
        );
        assert_eq!(v["messages"][1]["content"], "ab\n{\"k\":1}\n[file a.pdf]");
        assert!(v.get("tools").is_none() && v.get("tool_choice").is_none());
    }

    #[test]
    fn extra_body_cannot_override_reserved_fields() {
        let history = History::new();
        let extra: Map<String, Value> =
            serde_json::from_value(json!({"top_p": 0.5, "model": "evil", "stream": false}))
                .unwrap();
        let v = body(&ChatRequest {
            extra_body: Some(&extra),
            ..request(&history, None)
        });
        assert_eq!(v["top_p"], 0.5);
        assert_eq!(v["model"], "m");
        assert_eq!(v["stream"], true);
        let text = serde_json::to_string(&request(&history, None)).unwrap();
        assert_eq!(text.matches("\"model\"").count(), 1);
    }

    #[test]
    fn reads_lenient_answers() {
        let c: ChatChunk = serde_json::from_value(json!({
            "choices":[{"delta":{"content":[{"type":"text","text":"x"}],"reasoning":{"effort":"low"},
              "tool_calls":[{"index":0,"function":{"arguments":{"a":1}}}]}}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 3,
                      "completion_tokens_details": {"reasoning_tokens": 1}}
        }))
        .unwrap();
        let d = c.choices[0].delta.as_ref().unwrap();
        assert_eq!(d.content.as_deref(), Some("x"));
        assert_eq!(d.reasoning, None);
        let args = d.tool_calls.as_ref().unwrap()[0].function.as_ref().unwrap();
        assert_eq!(args.arguments.as_deref(), Some("{\"a\":1}"));
        let u = c.usage.unwrap().to_usage();
        assert_eq!((u.total_tokens, u.reasoning_tokens), (5, 1));
    }
}
