//! What an MCP server may ask of the client besides tool results: the
//! agent's model (`sampling/createMessage`, [`McpSampling`]) and the
//! directories it may work in (`roots/list`, [`McpRoot`]).
// Sampling and roots are deprecated by SEP-2577 in the protocol's newest
// revision; rmcp marks their types so. They still are what servers speak.
#![allow(deprecated)]

use std::fmt;
use std::sync::Arc;

use looopy_core::{
    CancellationToken, ChatSpan, FinishReason, LlmError, LlmProvider, LlmRequest, LlmResponse,
    Message, Part, Role, TurnContext,
};
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ErrorData, ModelPreferences, Root,
    SamplingMessage, SamplingMessageContentBlock,
};
use serde_json::json;
use tracing::Instrument;
use tracing::field::Empty;

use super::content::inline_file;
use crate::error::ToolsError;

/// The most tokens a sampling request may ask for unless
/// [`McpSampling::with_max_tokens`] says otherwise.
pub const DEFAULT_SAMPLING_MAX_TOKENS: u32 = 1024;

/// Lets an MCP server sample the agent's model: its `sampling/createMessage`
/// requests are answered by the model, and the client advertises the
/// `sampling` capability. A provider without it (the default) advertises no
/// sampling and refuses such requests with an `Invalid request` error.
///
/// - A request asking for more than [`max_tokens`](Self::max_tokens) tokens
///   (1024 by default) is refused with an `Invalid params` error that names
///   the cap; it is not clamped, so that the server learns it and can ask
///   for less.
/// - The model: the first hint of the request's `modelPreferences` that is
///   part (case-insensitively) of a known model's name picks that model;
///   the known models are the agent's own and those added with
///   [`with_model`](Self::with_model). Without such a hint, the agent's own
///   model answers. The cost, speed and intelligence priorities pick
///   nothing: the client knows no costs or speeds of its models.
/// - Tool use in sampling (`tools`, `toolChoice`) is not offered (the
///   capability says so) and refused; `includeContext` is not offered and
///   read as `none`; stop sequences and the request's `metadata` are not
///   passed on, since providers take neither.
/// - [`with_approval`](Self::with_approval): each request first asks the
///   person, as a question of the call that caused it (an `input-required`
///   turn, see `looopy_core::elicitation`); only an approved one reaches
///   the model.
/// - Each request runs in an `mcp.sampling` span, a child of the
///   `execute_tool` span of the call that caused it: the call whose progress
///   token the request carries in `_meta`, else the server's one running
///   call. The model call is a `chat` span (GenAI attributes) inside it.
#[derive(Clone)]
pub struct McpSampling {
    /// The agent's own model first, then the others a hint may pick.
    models: Vec<Arc<dyn LlmProvider>>,
    max_tokens: u32,
    approval: bool,
}

impl McpSampling {
    /// Sampling by `model`, the agent's own, with the default token cap.
    pub fn new(model: Arc<dyn LlmProvider>) -> Self {
        McpSampling {
            models: vec![model],
            max_tokens: DEFAULT_SAMPLING_MAX_TOKENS,
            approval: false,
        }
    }

    /// Asks the person before each request reaches the model: the call
    /// that made it pauses, its turn ends `input-required` with the
    /// question (`Allow` yes or no, with the request's prompt), and the
    /// request is answered once the answer allows it (refused otherwise).
    pub fn with_approval(mut self) -> Self {
        self.approval = true;
        self
    }

    /// Whether each request waits for the person's approval.
    pub fn needs_approval(&self) -> bool {
        self.approval
    }

    /// Adds a model a request's hint may pick (a fallback model, say).
    pub fn with_model(mut self, model: Arc<dyn LlmProvider>) -> Self {
        self.models.push(model);
        self
    }

    /// The most tokens a request may ask for (`maxTokens`); at least 1.
    pub fn with_max_tokens(mut self, cap: u32) -> Self {
        self.max_tokens = cap.max(1);
        self
    }

    /// The token cap.
    pub fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    /// The model that answers a request with these preferences: see the
    /// type's documentation.
    pub fn model_for(&self, preferences: Option<&ModelPreferences>) -> &Arc<dyn LlmProvider> {
        let hints = preferences
            .and_then(|p| p.hints.as_deref())
            .unwrap_or_default();
        hints
            .iter()
            .filter_map(|h| h.name.as_deref())
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .find_map(|name| {
                let name = name.to_lowercase();
                self.models
                    .iter()
                    .find(|m| m.model_name().to_lowercase().contains(&name))
            })
            .unwrap_or(&self.models[0])
    }
}

impl fmt::Debug for McpSampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpSampling")
            .field(
                "models",
                &self
                    .models
                    .iter()
                    .map(|m| m.model_name())
                    .collect::<Vec<_>>(),
            )
            .field("max_tokens", &self.max_tokens)
            .field("approval", &self.approval)
            .finish()
    }
}

/// A directory (or file) the client tells servers they may work in,
/// answered to `roots/list`: a `file://` URI with an optional name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpRoot {
    uri: String,
    name: Option<String>,
}

impl McpRoot {
    /// The root at `uri`, which must be a `file://` URI (what MCP allows).
    pub fn new(uri: impl Into<String>) -> Result<Self, ToolsError> {
        let uri = uri.into();
        if !uri.starts_with("file://") || uri.len() == "file://".len() {
            return Err(ToolsError::McpConfig(format!(
                "root {uri:?} is not a file:// URI (such as file:///home/me/project)"
            )));
        }
        Ok(McpRoot { uri, name: None })
    }

    /// Names the root for people (and servers' messages).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Its URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Its name, if it has one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    pub(crate) fn to_root(&self) -> Root {
        let root = Root::new(self.uri.clone());
        match &self.name {
            Some(name) => root.with_name(name.clone()),
            None => root,
        }
    }
}

/// The tool call a sampling request is made for: the span it runs in and
/// its turn's context.
pub(crate) struct Caller {
    pub(crate) span: tracing::Span,
    pub(crate) cx: TurnContext,
}

/// The question about a sampling request that waits for approval: its
/// message (the request's prompt, cut to 2,000 characters) and the schema
/// of the answer, one required boolean `allow`.
pub(crate) fn approval_question(
    sampling: &McpSampling,
    server: &str,
    params: &CreateMessageRequestParams,
) -> (String, serde_json::Value) {
    let mut prompt: String = params
        .messages
        .iter()
        .flat_map(|m| m.content.clone().into_vec())
        .filter_map(|block| match block {
            SamplingMessageContentBlock::Text(t) => Some(t.text),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if prompt.chars().count() > 2_000 {
        prompt = prompt.chars().take(2_000).collect::<String>() + "…";
    }
    let tokens = params.max_tokens.min(sampling.max_tokens);
    let message = format!(
        "MCP server '{server}' asks the agent's model (up to {tokens} tokens): {prompt}\nAllow it?"
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "allow": {
                "type": "boolean",
                "title": "Allow",
                "description": "Let the agent's model answer this request"
            }
        },
        "required": ["allow"]
    });
    (message, schema)
}

/// The refusal of a sampling request the person did not allow.
pub(crate) fn not_allowed(server: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!("the person did not allow MCP server '{server}' to sample the agent's model"),
        None,
    )
}

/// The refusal of a server whose provider has no sampling.
pub(crate) fn refused(server: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "sampling is off for MCP server '{server}': the client does not offer it \
             (allow it with the server's sampling policy)"
        ),
        None,
    )
}

/// Answers one `sampling/createMessage` of `server` with the model.
pub(crate) async fn create_message(
    sampling: &McpSampling,
    server: &str,
    params: CreateMessageRequestParams,
    caller: Option<Caller>,
    cancel: CancellationToken,
) -> Result<CreateMessageResult, ErrorData> {
    let model = sampling
        .model_for(params.model_preferences.as_ref())
        .clone();
    let parent = caller
        .as_ref()
        .map_or_else(tracing::Span::current, |c| c.span.clone());
    let span = tracing::info_span!(
        parent: &parent,
        "mcp.sampling",
        otel.kind = "server",
        mcp.method.name = "sampling/createMessage",
        mcp.server = %server,
        gen_ai.request.model = %model.model_name(),
        gen_ai.request.max_tokens = i64::from(params.max_tokens),
        error.type = Empty,
        otel.status_code = Empty,
    );
    let result = async {
        let request = request_of(sampling, server, params)?;
        let cx = caller
            .map(|c| c.cx)
            .unwrap_or_else(|| TurnContext::new("mcp-sampling", server));
        let chat = ChatSpan::new(model.provider_name(), model.model_name());
        let answer = tokio::select! {
            () = cancel.cancelled() => Err(LlmError::Cancelled),
            () = cx.cancel.cancelled() => Err(LlmError::Cancelled),
            answer = model.call(request, &cx).instrument(chat.span().clone()) => answer,
        };
        chat.outcome(&answer);
        match answer {
            Ok(response) => Ok(result_of(response, model.model_name())),
            Err(e) => Err(ErrorData::internal_error(
                format!("the client's model could not answer: {e}"),
                Some(json!({"kind": e.kind()})),
            )),
        }
    }
    .instrument(span.clone())
    .await;
    if let Err(e) = &result {
        span.record("error.type", e.code.0);
        span.record("otel.status_code", "ERROR");
    }
    result
}

/// The model request of a sampling request, or why it is refused.
fn request_of(
    sampling: &McpSampling,
    server: &str,
    params: CreateMessageRequestParams,
) -> Result<LlmRequest, ErrorData> {
    let cap = sampling.max_tokens;
    if params.max_tokens > cap {
        return Err(ErrorData::invalid_params(
            format!(
                "maxTokens {} is over the {cap} tokens the client allows MCP server \
                 '{server}' to sample; ask for at most {cap}",
                params.max_tokens
            ),
            Some(json!({"maxTokens": params.max_tokens, "cap": cap})),
        ));
    }
    if params.max_tokens == 0 {
        return Err(ErrorData::invalid_params(
            "maxTokens must be at least 1",
            None,
        ));
    }
    if params.tools.is_some() || params.tool_choice.is_some() {
        return Err(ErrorData::invalid_params(
            "tool use in sampling is not supported by this client (no sampling.tools capability)",
            None,
        ));
    }
    if params.messages.is_empty() {
        return Err(ErrorData::invalid_params("no messages to answer", None));
    }
    let messages = params
        .messages
        .into_iter()
        .map(message_of)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LlmRequest {
        system_prompt: params.system_prompt.map(Arc::from),
        messages: messages.into(),
        temperature: params.temperature,
        max_tokens: Some(params.max_tokens),
        ..LlmRequest::default()
    })
}

/// A sampling message as a message of the model's conversation: text as
/// text, images and audio as inline files.
fn message_of(message: SamplingMessage) -> Result<Message, ErrorData> {
    let role = match message.role {
        rmcp::model::Role::Assistant => Role::Assistant,
        _ => Role::User,
    };
    let parts = message
        .content
        .into_vec()
        .into_iter()
        .map(|block| match block {
            SamplingMessageContentBlock::Text(t) => Ok(Part::text(t.text)),
            SamplingMessageContentBlock::Image(i) => Ok(inline_file(None, i.mime_type, i.data)),
            SamplingMessageContentBlock::Audio(a) => Ok(inline_file(None, a.mime_type, a.data)),
            _ => Err(ErrorData::invalid_params(
                "tool use and tool results in sampling messages are not supported by this client",
                None,
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Message::with_parts(role, parts))
}

/// The answer of a sampling request: the model's text, the model that
/// answered and why it stopped.
fn result_of(response: LlmResponse, model: &str) -> CreateMessageResult {
    let stop = match response.finish_reason {
        FinishReason::Length => CreateMessageResult::STOP_REASON_END_MAX_TOKEN.to_owned(),
        FinishReason::ToolCalls => CreateMessageResult::STOP_REASON_TOOL_USE.to_owned(),
        FinishReason::Stop => CreateMessageResult::STOP_REASON_END_TURN.to_owned(),
        other => other.as_str().to_owned(),
    };
    let answered_by = response.model.clone().unwrap_or_else(|| model.to_owned());
    let message = SamplingMessage::new(
        rmcp::model::Role::Assistant,
        SamplingMessageContentBlock::text(response.message.text()),
    );
    CreateMessageResult::new(message, answered_by).with_stop_reason(stop)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use async_trait::async_trait;
    use rmcp::model::ModelHint;

    struct Named(&'static str);

    #[async_trait]
    impl LlmProvider for Named {
        async fn call(&self, _r: LlmRequest, _cx: &TurnContext) -> Result<LlmResponse, LlmError> {
            Ok(LlmResponse::text(self.0))
        }
        fn model_name(&self) -> &str {
            self.0
        }
    }

    fn sampling() -> McpSampling {
        McpSampling::new(Arc::new(Named("gpt-4.1")))
            .with_model(Arc::new(Named("claude-sonnet-4-5")))
            .with_model(Arc::new(Named("gemini-2.5-flash")))
    }

    fn hints(names: &[&str]) -> ModelPreferences {
        ModelPreferences::new().with_hints(names.iter().map(|n| ModelHint::new(*n)).collect())
    }

    #[test]
    fn the_first_hint_naming_a_known_model_picks_it_else_the_own_model_answers() {
        let s = sampling();
        let pick = |p: Option<&ModelPreferences>| s.model_for(p).model_name().to_owned();
        assert_eq!(pick(None), "gpt-4.1");
        assert_eq!(pick(Some(&hints(&["Claude"]))), "claude-sonnet-4-5");
        assert_eq!(
            pick(Some(&hints(&["llama", "gemini-2.5", "claude"]))),
            "gemini-2.5-flash",
            "hints in order, unknown ones skipped"
        );
        assert_eq!(pick(Some(&hints(&["llama", ""]))), "gpt-4.1");
        let priorities = ModelPreferences::new().with_cost_priority(1.0);
        assert_eq!(pick(Some(&priorities)), "gpt-4.1");
    }

    fn params(max_tokens: u32) -> CreateMessageRequestParams {
        CreateMessageRequestParams::new(
            vec![SamplingMessage::new(
                rmcp::model::Role::User,
                SamplingMessageContentBlock::text("hi"),
            )],
            max_tokens,
        )
        .with_system_prompt("be brief")
    }

    #[test]
    fn a_request_over_the_cap_is_refused_naming_it() {
        let s = sampling().with_max_tokens(100);
        let e = request_of(&s, "srv", params(101)).unwrap_err();
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("at most 100"), "{}", e.message);
        let r = request_of(&s, "srv", params(100)).unwrap();
        assert_eq!(r.max_tokens, Some(100));
        assert_eq!(r.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(r.messages.len(), 1);
        assert_eq!(
            McpSampling::new(Arc::new(Named("m"))).max_tokens(),
            DEFAULT_SAMPLING_MAX_TOKENS
        );
    }

    #[tokio::test]
    async fn the_answer_is_the_models_text_and_name() {
        let s = sampling();
        let result = create_message(&s, "srv", params(10), None, CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(result.model, "gpt-4.1");
        assert_eq!(result.stop_reason.as_deref(), Some("endTurn"));
        let text = result.message.content.first().cloned();
        assert_eq!(text, Some(SamplingMessageContentBlock::text("gpt-4.1")));
    }

    #[test]
    fn roots_are_file_uris() {
        let root = McpRoot::new("file:///srv/project")
            .unwrap()
            .with_name("project");
        assert_eq!(root.to_root().name.as_deref(), Some("project"));
        for bad in ["https://example.com", "/srv/project", "file://"] {
            let e = McpRoot::new(bad).unwrap_err();
            assert!(e.to_string().contains("not a file:// URI"), "{bad}: {e}");
        }
    }
}
