//! The request body of `POST /v1/messages`, written from an
//! [`LlmRequest`] without copying the history's text.
//!
//! - The system prompt (and any system message in the history) is the
//!   `system` parameter.
//! - User parts become `text`, `image` and `document` (PDF) blocks; data
//!   parts are sent as their JSON text; other files as `[file name]`.
//! - An assistant message becomes its thinking blocks (only those this
//!   provider made, unchanged: text and `signature`, or the
//!   `redacted_thinking` data), then its text, then a `tool_use` block per
//!   call.
//! - Tool results are `tool_result` blocks of a user message; consecutive
//!   messages of one role are joined into one message, as the API wants
//!   the results of parallel calls together.
//! - A response format is `output_config.format` (`json_schema`), or,
//!   with native structured output off, its instruction in the system
//!   prompt.
//! - With prompt caching on, an `ephemeral` `cache_control` breakpoint goes
//!   on the system prompt, on the last tool and on the newest message's
//!   last block.

use std::borrow::Cow;

use looopy_core::{
    FileContent, LlmRequest, Message, Part, Reasoning, Role, ToolChoice, ToolDefinition,
};
use serde::Serialize;
use serde_json::value::RawValue;

/// `{"type": "ephemeral"}`.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// The body, borrowed from the request.
#[derive(Debug, Serialize)]
pub(crate) struct MessagesRequest<'a> {
    pub(crate) model: &'a str,
    pub(crate) max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system: Option<System<'a>>,
    pub(crate) messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<WireTool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) output_config: Option<OutputConfig<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stream: bool,
}

/// `{"format": {"type": "json_schema", "schema": …}}`: structured output.
#[derive(Debug, Serialize)]
pub(crate) struct OutputConfig<'a> {
    format: OutputFormat<'a>,
}

#[derive(Debug, Serialize)]
struct OutputFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: &'a serde_json::Value,
}

/// The `system` parameter: a string, or one text block with a cache
/// breakpoint.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum System<'a> {
    Plain(Cow<'a, str>),
    Blocks([WireBlock<'a>; 1]),
}

/// `{"type": "enabled", "budget_tokens": n}`.
#[derive(Debug, Serialize)]
pub(crate) struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Debug, Serialize)]
pub(crate) struct WireTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    input_schema: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
pub(crate) struct WireToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    disable_parallel_tool_use: bool,
}

/// One message of `messages`.
#[derive(Debug, Serialize)]
pub(crate) struct WireMessage<'a> {
    role: &'static str,
    content: Vec<WireBlock<'a>>,
}

/// A content block, with its cache breakpoint.
#[derive(Debug, Serialize)]
pub(crate) struct WireBlock<'a> {
    #[serde(flatten)]
    block: Block<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

impl<'a> From<Block<'a>> for WireBlock<'a> {
    fn from(block: Block<'a>) -> Self {
        WireBlock {
            block,
            cache_control: None,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Block<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Image {
        source: Source<'a>,
    },
    Document {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<WireBlock<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl Block<'_> {
    /// Whether the API takes a `cache_control` on this block (not on
    /// thinking blocks).
    fn cacheable(&self) -> bool {
        !matches!(
            self,
            Block::Thinking { .. } | Block::RedactedThinking { .. }
        )
    }
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Source<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

/// What the body needs besides the request.
pub(crate) struct BodyOptions<'a> {
    pub(crate) model: &'a str,
    pub(crate) provider_name: &'a str,
    pub(crate) max_tokens: u32,
    pub(crate) thinking_budget_tokens: Option<u32>,
    pub(crate) prompt_cache: bool,
    pub(crate) native_structured_output: bool,
    pub(crate) temperature: Option<f32>,
    pub(crate) tool_choice: Option<&'a ToolChoice>,
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) stream: bool,
}

/// The `input` of a `tool_use` block: the model's arguments when they are
/// a JSON object, `{}` otherwise (a call whose arguments did not parse was
/// answered by a failed tool result, which the model reads).
#[derive(Debug)]
pub(crate) enum Input<'a> {
    Raw(&'a RawValue),
    Empty,
}

impl<'a> Input<'a> {
    fn of(arguments: &'a str) -> Self {
        match serde_json::from_str::<&RawValue>(arguments) {
            Ok(raw) if raw.get().trim_start().starts_with('{') => Input::Raw(raw),
            _ => Input::Empty,
        }
    }
}

impl Serialize for Input<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Input::Raw(raw) => raw.serialize(s),
            Input::Empty => s.serialize_map(Some(0))?.end(),
        }
    }
}

impl<'a> MessagesRequest<'a> {
    /// The body of `request`.
    pub(crate) fn new(request: &'a LlmRequest, o: &BodyOptions<'a>) -> Self {
        let mut system: Option<Cow<'a, str>> = request.system_prompt.as_deref().map(Cow::Borrowed);
        let mut output_config = None;
        if let Some(format) = &request.response_format {
            if o.native_structured_output {
                output_config = Some(OutputConfig {
                    format: OutputFormat {
                        kind: "json_schema",
                        schema: &format.schema,
                    },
                });
            } else {
                // The model learns the shape from the prompt.
                let instruction = format.instruction();
                system = Some(Cow::Owned(match system {
                    Some(prompt) => format!("{prompt}\n\n{instruction}"),
                    None => instruction,
                }));
            }
        }
        let mut messages: Vec<WireMessage<'a>> = Vec::new();
        for m in request.messages.iter() {
            if m.role == Role::System {
                let text = m.text();
                system = Some(Cow::Owned(match system {
                    Some(prompt) => format!("{prompt}\n\n{text}"),
                    None => text,
                }));
                continue;
            }
            let (role, blocks) = blocks_of(m, o.provider_name);
            if blocks.is_empty() {
                continue;
            }
            match messages.last_mut() {
                Some(last) if last.role == role => last.content.extend(blocks),
                _ => messages.push(WireMessage {
                    role,
                    content: blocks,
                }),
            }
        }
        let mut tools: Option<Vec<WireTool<'a>>> =
            (!request.tools.is_empty()).then(|| request.tools.iter().map(wire_tool).collect());
        if o.prompt_cache {
            if let Some(last) = tools.as_mut().and_then(|t| t.last_mut()) {
                last.cache_control = Some(EPHEMERAL);
            }
            if let Some(block) = messages
                .last_mut()
                .and_then(|m| m.content.iter_mut().rev().find(|b| b.block.cacheable()))
            {
                block.cache_control = Some(EPHEMERAL);
            }
        }
        let system = system.map(|text| {
            if o.prompt_cache {
                System::Blocks([WireBlock {
                    block: Block::Text { text },
                    cache_control: Some(EPHEMERAL),
                }])
            } else {
                System::Plain(text)
            }
        });
        let tool_choice = tools
            .as_ref()
            .and_then(|_| tool_choice(o.tool_choice, o.parallel_tool_calls));
        MessagesRequest {
            model: o.model,
            max_tokens: o.max_tokens,
            system,
            messages,
            tools,
            tool_choice,
            thinking: o.thinking_budget_tokens.map(|budget_tokens| Thinking {
                kind: "enabled",
                budget_tokens,
            }),
            temperature: o.temperature,
            output_config,
            stream: o.stream,
        }
    }
}

fn wire_tool(t: &ToolDefinition) -> WireTool<'_> {
    WireTool {
        name: &t.name,
        description: &t.description,
        input_schema: &t.parameters,
        cache_control: None,
    }
}

/// `tool_choice`: `auto`, `any` (required), `tool` with a name, or
/// `none`; `disable_parallel_tool_use` when parallel calls are off.
fn tool_choice<'a>(
    choice: Option<&'a ToolChoice>,
    parallel: Option<bool>,
) -> Option<WireToolChoice<'a>> {
    let disable = parallel == Some(false);
    let (kind, name) = match choice {
        None if !disable => return None,
        None | Some(ToolChoice::Auto) => ("auto", None),
        Some(ToolChoice::None) => ("none", None),
        Some(ToolChoice::Required) => ("any", None),
        Some(ToolChoice::Tool(name)) => ("tool", Some(name.as_str())),
    };
    Some(WireToolChoice {
        kind,
        name,
        // The API refuses the flag with `none`.
        disable_parallel_tool_use: disable && kind != "none",
    })
}

/// The role and blocks of one history message.
fn blocks_of<'a>(m: &'a Message, provider: &str) -> (&'static str, Vec<WireBlock<'a>>) {
    match m.role {
        Role::Assistant => {
            let mut blocks: Vec<WireBlock<'a>> =
                Vec::with_capacity(m.parts.len() + m.tool_calls.len());
            // Thinking first, as the API returned it.
            for r in m.reasoning().filter(|r| r.is_from(provider)) {
                if let Some(block) = thinking_block(r) {
                    blocks.push(block.into());
                }
            }
            push_content(&mut blocks, &m.parts);
            for call in &m.tool_calls {
                blocks.push(
                    Block::ToolUse {
                        id: &call.id,
                        name: &call.name,
                        input: Input::of(&call.arguments),
                    }
                    .into(),
                );
            }
            ("assistant", blocks)
        }
        Role::Tool => {
            let mut content = Vec::with_capacity(m.parts.len());
            push_content(&mut content, &m.parts);
            let block = Block::ToolResult {
                tool_use_id: m.tool_call_id.as_deref().unwrap_or(""),
                content,
                is_error: m.is_error(),
            };
            ("user", vec![block.into()])
        }
        Role::User | Role::System => {
            let mut blocks = Vec::with_capacity(m.parts.len());
            push_content(&mut blocks, &m.parts);
            ("user", blocks)
        }
    }
}

/// The block that sends `r` back: `redacted_thinking` with its data, or
/// `thinking` with its signature. Reasoning without a signature cannot be
/// sent back (the API checks it) and is left out.
fn thinking_block(r: &Reasoning) -> Option<Block<'_>> {
    if let Some(data) = &r.redacted {
        return Some(Block::RedactedThinking { data });
    }
    Some(Block::Thinking {
        thinking: &r.text,
        signature: r.signature.as_deref()?,
    })
}

/// The content blocks of `parts` (reasoning parts are not content):
/// adjacent text joined, empty text left out (the API refuses it).
fn push_content<'a>(blocks: &mut Vec<WireBlock<'a>>, parts: &'a [Part]) {
    for part in parts {
        let block = match part {
            Part::Text { text } if text.is_empty() => continue,
            Part::Text { text } => Block::Text {
                text: Cow::Borrowed(text),
            },
            Part::Data { data } => Block::Text {
                text: Cow::Owned(data.to_string()),
            },
            Part::File { file } => file_block(file),
            // Reasoning goes first, and only for its own provider (see
            // `blocks_of`); a part kind newer than this code is not sent.
            _ => continue,
        };
        if let (
            Some(WireBlock {
                block: Block::Text { text: last },
                ..
            }),
            Block::Text { text },
        ) = (blocks.last_mut(), &block)
        {
            last.to_mut().push_str(text);
            continue;
        }
        blocks.push(block.into());
    }
}

const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// An `image` block for a JPEG, PNG, GIF or WebP file, a `document` block
/// for a PDF, `[file name]` text for anything else.
fn file_block(file: &FileContent) -> Block<'_> {
    let mime = file.mime_type.as_deref().unwrap_or("");
    let source = match (&file.bytes, &file.uri) {
        (Some(data), _) => Some(Source::Base64 {
            media_type: mime,
            data,
        }),
        (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
            Some(Source::Url { url })
        }
        _ => None,
    };
    match source {
        Some(source) if IMAGE_TYPES.contains(&mime) => Block::Image { source },
        Some(source) if mime == "application/pdf" => Block::Document {
            source,
            title: file.name.as_deref(),
        },
        _ => {
            let name = file.name.as_deref().or(file.uri.as_deref()).unwrap_or("");
            Block::Text {
                text: Cow::Owned(format!("[file {name}]")),
            }
        }
    }
}
