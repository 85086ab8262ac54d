//! [`ChatSpan`]: the `chat` span of one model call, with the OpenTelemetry
//! GenAI semantic-convention fields, written once for every provider and
//! for the agent loop.

use tracing::field::Empty;

use super::{LlmError, LlmRequest, LlmResponse, Usage};

/// The span a model call runs in, and whether its maker records the
/// outcome on it.
///
/// The span is named `chat`, exported as `chat {model}` (`otel.name`), of
/// kind client, and declares every field a call records:
///
/// | field | recorded |
/// |---|---|
/// | `gen_ai.operation.name` | `chat`, when made |
/// | `gen_ai.provider.name`, `gen_ai.request.model` | when made |
/// | `gen_ai.response.model` | when the answer names its model |
/// | `gen_ai.response.finish_reasons` | `["stop"]` and so on |
/// | `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` | with the usage |
/// | `gen_ai.usage.cache_read.input_tokens` | tokens read from the prompt cache, when any |
/// | `gen_ai.usage.cache_creation.input_tokens` | tokens written to it, when any |
/// | `gen_ai.usage.reasoning.output_tokens` | the output's reasoning tokens, when any |
/// | `error.type`, `otel.status_code` | the [`LlmError::kind`] and `ERROR` on failure (`cancelled` without the status) |
/// | `looopy.iteration`, `looopy.cache.hit` | by the agent loop and its cache layer |
/// | `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages` | only with [content capture](crate::genai_content) on: the request ([`input`](Self::input)) and the answer |
///
/// A provider opens one per call with [`for_call`](Self::for_call): inside
/// the agent loop, the loop's span is the current one and is used as it is
/// (the loop records the outcome); called on its own, the provider gets a
/// span of its own and records the outcome itself. Either way the exported
/// span is the same.
#[derive(Clone, Debug)]
pub struct ChatSpan {
    span: tracing::Span,
    owned: bool,
}

impl ChatSpan {
    /// A new `chat` span for a call to `model` of `provider`, whose outcome
    /// this value records.
    pub fn new(provider: &str, model: &str) -> Self {
        let span = tracing::info_span!(
            "chat",
            otel.name = %format_args!("chat {model}"),
            otel.kind = "client",
            otel.status_code = Empty,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = %provider,
            gen_ai.request.model = %model,
            gen_ai.response.model = Empty,
            gen_ai.response.finish_reasons = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            gen_ai.usage.cache_read.input_tokens = Empty,
            gen_ai.usage.cache_creation.input_tokens = Empty,
            gen_ai.usage.reasoning.output_tokens = Empty,
            error.type = Empty,
            looopy.iteration = Empty,
            looopy.cache.hit = Empty,
            gen_ai.system_instructions = Empty,
            gen_ai.input.messages = Empty,
            gen_ai.output.messages = Empty,
        );
        ChatSpan { span, owned: true }
    }

    /// The span a provider's call runs in: the current span when it is a
    /// `chat` span already (the agent loop's, left for its owner to fill
    /// in), else a [`new`](Self::new) one.
    pub fn for_call(provider: &str, model: &str) -> Self {
        let current = tracing::Span::current();
        let is_chat = current.metadata().is_some_and(|m| {
            m.name() == "chat" && m.fields().field("gen_ai.operation.name").is_some()
        });
        if is_chat {
            return ChatSpan {
                span: current,
                owned: false,
            };
        }
        Self::new(provider, model)
    }

    /// The span, to run the call in (`Instrument::instrument`).
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Whether this value records the outcome (it made the span).
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    /// Records the outcome of a call: [`success`](Self::success) and
    /// [`output`](Self::output), or [`error`](Self::error).
    pub fn outcome(&self, result: &Result<LlmResponse, LlmError>) {
        match result {
            Ok(r) => {
                self.success(r.finish_reason.as_str(), r.usage, r.model.as_deref());
                self.output(r);
            }
            Err(e) => self.error(e),
        }
    }

    /// Records what the call sends (its system prompt and messages), when
    /// [content capture](crate::genai_content::capture_content) is on and this
    /// value records the outcome.
    pub fn input(&self, request: &LlmRequest) {
        if !self.records_content() {
            return;
        }
        if let Some(prompt) = &request.system_prompt {
            self.span.record(
                "gen_ai.system_instructions",
                crate::genai_content::system_instructions(prompt),
            );
        }
        self.span.record(
            "gen_ai.input.messages",
            crate::genai_content::input_messages(&request.messages),
        );
    }

    /// Records the answer, when [content capture](crate::genai_content::capture_content)
    /// is on and this value records the outcome.
    pub fn output(&self, response: &LlmResponse) {
        if !self.records_content() {
            return;
        }
        self.span.record(
            "gen_ai.output.messages",
            crate::genai_content::output_messages(
                &response.message,
                response.finish_reason.as_str(),
            ),
        );
    }

    fn records_content(&self) -> bool {
        self.owned && !self.span.is_disabled() && crate::genai_content::capture_content()
    }

    /// Records a finished answer: its finish reason, its token counts and
    /// the model that answered.
    pub fn success(&self, finish: &str, usage: Option<Usage>, model: Option<&str>) {
        // The text is built only for a span that records it.
        if !self.owned || self.span.is_disabled() {
            return;
        }
        let span = &self.span;
        span.record(
            "gen_ai.response.finish_reasons",
            format_args!("[\"{finish}\"]").to_string(),
        );
        if let Some(u) = usage {
            record_usage(span, &u);
        }
        if let Some(m) = model {
            span.record("gen_ai.response.model", m);
        }
    }

    /// Records a failure: its kind as `error.type`, and, unless the call
    /// was cancelled, the span's status as an error and a debug event with
    /// the message.
    pub fn error(&self, e: &LlmError) {
        if !self.owned {
            return;
        }
        self.span.record("error.type", e.kind());
        if !matches!(e, LlmError::Cancelled) {
            self.span.record("otel.status_code", "ERROR");
            tracing::debug!(parent: &self.span, error = %e, "model call failed");
        }
    }
}

/// The token counts of `u` on `span`; the cache and reasoning counts only
/// where there are some, so a provider without a prompt cache or reasoning
/// does not report zeros for them.
fn record_usage(span: &tracing::Span, u: &Usage) {
    // As i64: OpenTelemetry has no unsigned integers.
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    span.record("gen_ai.usage.input_tokens", int(u.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(u.output_tokens));
    for (field, n) in [
        (
            "gen_ai.usage.cache_read.input_tokens",
            u.cached_input_tokens,
        ),
        (
            "gen_ai.usage.cache_creation.input_tokens",
            u.cache_creation_input_tokens,
        ),
        ("gen_ai.usage.reasoning.output_tokens", u.reasoning_tokens),
    ] {
        if n > 0 {
            span.record(field, int(n));
        }
    }
}
