//! Token counting for the context window, compaction and the loop's
//! context guard.
//!
//! A [`TokenCounter`] estimates what a message, a system prompt, the tool
//! definitions and a whole [`LlmRequest`] cost in prompt tokens. The default,
//! [`HeuristicCounter`], is not a tokenizer: about four characters per token
//! for text, and a fixed cost for images and other files, whose base64 bytes
//! are never counted as text (a 1 MB image would otherwise "cost" about
//! 340 000 tokens and push everything else out of the window).
//!
//! [`CalibratedCounter`] wraps any counter and scales its estimates by the
//! ratio between the prompt tokens the provider reported and the estimate of
//! the same request, smoothed and clamped. The Agent's `WindowedLlm`
//! (`looopy-agent`) feeds it from the usage of every call it passes on.
//!
//! The counter lives here, in the shared vocabulary, because both the loop
//! (which checks every request against the model's context window) and the
//! Agent (its window and compaction) estimate with it: one counter, shared,
//! learns from every call. Plug one into an Agent with
//! `AgentBuilder::token_counter`, into a loop with
//! `AgentLoopBuilder::token_counter`.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::{FileContent, LlmRequest, Message, Part, ToolDefinition};

/// Characters per token of the heuristic (a common rule of thumb for
/// English text with BPE tokenizers).
pub const CHARS_PER_TOKEN: usize = 4;

/// Fixed tokens per message (role and separators in the chat format).
pub const MESSAGE_OVERHEAD: usize = 4;

/// Fixed tokens per tool call, beside its id, name and arguments.
pub const TOOL_CALL_OVERHEAD: usize = 4;

/// Fixed tokens per tool definition, beside its name, description and
/// parameter schema.
pub const TOOL_DEFINITION_OVERHEAD: usize = 8;

/// Fixed tokens per request (the reply primer of the chat format).
pub const REQUEST_OVERHEAD: usize = 3;

/// Tokens of one image part, whatever its size: OpenAI's estimate for a
/// high-detail image of up to 1024×1024 pixels (85 base tokens plus 170 per
/// 512-pixel tile, four tiles). Anthropic charges about
/// width × height / 750 (some 1 600 tokens for its largest unresized image);
/// calibration corrects the difference.
pub const IMAGE_TOKENS: usize = 765;

/// Tokens of one non-image, non-text file part (PDF, audio...): a
/// placeholder, since what a provider makes of such a file cannot be known
/// from its bytes. Use a custom counter when such files matter.
pub const FILE_TOKENS: usize = 256;

/// Estimates prompt tokens.
///
/// Only [`text`](Self::text) is required; the other methods have defaults
/// built on it (and on the constants of this module), so a counter backed
/// by a real tokenizer implements `text` and gets the fixed costs of files,
/// tool calls and message overhead for free.
pub trait TokenCounter: Send + Sync {
    /// Tokens of a piece of text.
    fn text(&self, text: &str) -> usize;

    /// Tokens of one file part: a fixed cost for images ([`IMAGE_TOKENS`])
    /// and other binary files ([`FILE_TOKENS`]); `text/*` and JSON files
    /// count as the text they decode to. The name and URI count as text.
    /// Base64 bytes are never counted as text.
    fn file(&self, file: &FileContent) -> usize {
        let named = file.name.as_deref().map_or(0, |n| self.text(n))
            + file.uri.as_deref().map_or(0, |u| self.text(u));
        let mime = file.mime_type.as_deref().unwrap_or("");
        let body = if mime.starts_with("image/") {
            IMAGE_TOKENS
        } else if mime.starts_with("text/") || mime == "application/json" {
            // Base64 holds 3 bytes in 4 characters.
            let decoded = file.bytes.as_deref().map_or(0, |b| b.len() / 4 * 3);
            decoded.div_ceil(CHARS_PER_TOKEN)
        } else if file.bytes.is_none() && file.uri.is_none() {
            0
        } else {
            FILE_TOKENS
        };
        named + body
    }

    /// Tokens of a message: its parts, its tool calls (id, name, arguments)
    /// and a fixed overhead per message and per call.
    fn message(&self, message: &Message) -> usize {
        let mut tokens = MESSAGE_OVERHEAD;
        for part in &message.parts {
            tokens += match part {
                Part::Text { text } => self.text(text),
                Part::Data { data } => self.text(&data.to_string()),
                Part::File { file } => self.file(file),
                // Its text (a signature is an opaque proof, not prompt).
                Part::Reasoning { reasoning } => self.text(&reasoning.text),
            };
        }
        for call in &message.tool_calls {
            tokens += TOOL_CALL_OVERHEAD
                + self.text(&call.id)
                + self.text(&call.name)
                + self.text(&call.arguments);
        }
        if let Some(id) = &message.tool_call_id {
            tokens += self.text(id);
        }
        tokens
    }

    /// Tokens of the system prompt, sent as one message beside the history.
    fn system_prompt(&self, prompt: &str) -> usize {
        MESSAGE_OVERHEAD + self.text(prompt)
    }

    /// Tokens of the tool definitions a request offers: name, description
    /// and the JSON of the parameter schema of each, plus a fixed overhead.
    fn tools(&self, tools: &[ToolDefinition]) -> usize {
        tools
            .iter()
            .map(|t| {
                TOOL_DEFINITION_OVERHEAD
                    + self.text(&t.name)
                    + self.text(&t.description)
                    + self.text(&t.parameters.to_string())
            })
            .sum()
    }

    /// Tokens a request spends outside its history: the system prompt, the
    /// tool definitions and the per-request overhead.
    fn request_overhead(&self, request: &LlmRequest) -> usize {
        REQUEST_OVERHEAD
            + request
                .system_prompt
                .as_deref()
                .map_or(0, |p| self.system_prompt(p))
            + self.tools(&request.tools)
    }

    /// Tokens of a whole request, what a provider reports as prompt (input)
    /// tokens: [`request_overhead`](Self::request_overhead) plus every
    /// message.
    fn request(&self, request: &LlmRequest) -> usize {
        self.request_overhead(request)
            + request
                .messages
                .iter()
                .map(|m| self.message(m))
                .sum::<usize>()
    }

    /// Learns from a call: `estimated` is what this counter said the
    /// request costs ([`request`](Self::request)), `reported` the prompt
    /// tokens the provider reported for it. The default ignores it;
    /// [`CalibratedCounter`] adjusts its scale.
    fn observe(&self, estimated: usize, reported: usize) {
        let _ = (estimated, reported);
    }
}

/// The default counter: about [`CHARS_PER_TOKEN`] bytes of text per token,
/// fixed costs for files, tool calls and messages (see the constants of
/// this module).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeuristicCounter;

impl TokenCounter for HeuristicCounter {
    fn text(&self, text: &str) -> usize {
        text.len().div_ceil(CHARS_PER_TOKEN)
    }
}

/// Default smoothing of [`CalibratedCounter`]: each observation moves the
/// scale 30 % of the way to what it suggests.
pub const DEFAULT_CALIBRATION_ALPHA: f64 = 0.3;

/// Default bounds of the scale of a [`CalibratedCounter`].
pub const DEFAULT_CALIBRATION_BOUNDS: (f64, f64) = (0.5, 2.0);

/// A counter that scales another's estimates by what the provider reports.
///
/// Each [`observe`](TokenCounter::observe) computes the scale that would
/// have made the estimate right (`scale × reported / estimated`, clamped to
/// the bounds) and moves the current scale toward it by `alpha` (an
/// exponential moving average), so one odd call does not swing the window.
/// The scale starts at 1 and stays within the bounds (default 0.5 to 2).
/// Every estimate is scaled, fixed costs included.
pub struct CalibratedCounter {
    inner: Arc<dyn TokenCounter>,
    scale: Mutex<f64>,
    alpha: f64,
    min: f64,
    max: f64,
}

impl fmt::Debug for CalibratedCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CalibratedCounter")
            .field("scale", &self.scale())
            .field("alpha", &self.alpha)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Default for CalibratedCounter {
    fn default() -> Self {
        Self::new(Arc::new(HeuristicCounter))
    }
}

impl CalibratedCounter {
    /// Calibrates `inner`, with the default smoothing and bounds.
    pub fn new(inner: Arc<dyn TokenCounter>) -> Self {
        let (min, max) = DEFAULT_CALIBRATION_BOUNDS;
        CalibratedCounter {
            inner,
            scale: Mutex::new(1.0),
            alpha: DEFAULT_CALIBRATION_ALPHA,
            min,
            max,
        }
    }

    /// Sets the smoothing: the share (0 to 1, clamped) of the way each
    /// observation moves the scale. 1 trusts the latest call alone.
    pub fn with_alpha(mut self, alpha: f64) -> Self {
        self.alpha = if alpha.is_finite() {
            alpha.clamp(0.0, 1.0)
        } else {
            DEFAULT_CALIBRATION_ALPHA
        };
        self
    }

    /// Sets the bounds of the scale (swapped when given in the wrong order;
    /// non-positive or non-finite bounds are ignored).
    pub fn with_bounds(mut self, min: f64, max: f64) -> Self {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if ok(min) && ok(max) {
            self.min = min.min(max);
            self.max = min.max(max);
            let clamped = self.scale().clamp(self.min, self.max);
            *self.scale.get_mut().unwrap_or_else(PoisonError::into_inner) = clamped;
        }
        self
    }

    /// The current scale.
    pub fn scale(&self) -> f64 {
        *self.scale.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn scaled(&self, tokens: usize) -> usize {
        (tokens as f64 * self.scale()).round() as usize
    }
}

impl TokenCounter for CalibratedCounter {
    fn text(&self, text: &str) -> usize {
        self.scaled(self.inner.text(text))
    }

    fn file(&self, file: &FileContent) -> usize {
        self.scaled(self.inner.file(file))
    }

    fn message(&self, message: &Message) -> usize {
        self.scaled(self.inner.message(message))
    }

    fn system_prompt(&self, prompt: &str) -> usize {
        self.scaled(self.inner.system_prompt(prompt))
    }

    fn tools(&self, tools: &[ToolDefinition]) -> usize {
        self.scaled(self.inner.tools(tools))
    }

    fn request_overhead(&self, request: &LlmRequest) -> usize {
        self.scaled(self.inner.request_overhead(request))
    }

    fn request(&self, request: &LlmRequest) -> usize {
        self.scaled(self.inner.request(request))
    }

    fn observe(&self, estimated: usize, reported: usize) {
        if estimated == 0 || reported == 0 {
            return;
        }
        let mut scale = self.scale.lock().unwrap_or_else(PoisonError::into_inner);
        let target = (*scale * reported as f64 / estimated as f64).clamp(self.min, self.max);
        *scale = (*scale + self.alpha * (target - *scale)).clamp(self.min, self.max);
    }
}

/// A shared [`TokenCounter`] in a configuration: the
/// [`HeuristicCounter`] unless one is set. Two are equal when they are the
/// default or the same shared counter.
#[derive(Clone, Default)]
pub struct SharedCounter(Option<Arc<dyn TokenCounter>>);

impl SharedCounter {
    /// Shares `counter`.
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        SharedCounter(Some(counter))
    }

    /// The counter.
    pub fn get(&self) -> &dyn TokenCounter {
        match &self.0 {
            Some(counter) => counter.as_ref(),
            None => &HeuristicCounter,
        }
    }

    /// Whether this is the default heuristic.
    pub fn is_default(&self) -> bool {
        self.0.is_none()
    }
}

impl From<Arc<dyn TokenCounter>> for SharedCounter {
    fn from(counter: Arc<dyn TokenCounter>) -> Self {
        SharedCounter::new(counter)
    }
}

impl fmt::Debug for SharedCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_default() {
            "HeuristicCounter"
        } else {
            "custom TokenCounter"
        })
    }
}

impl PartialEq for SharedCounter {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b)),
            _ => false,
        }
    }
}

impl Eq for SharedCounter {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LlmResponse, ToolCall};
    use serde_json::json;

    fn image(bytes: usize) -> Message {
        Message::with_parts(
            crate::Role::User,
            vec![Part::file(FileContent {
                blob: None,
                name: Some("cat.png".into()),
                mime_type: Some("image/png".into()),
                uri: None,
                bytes: Some("A".repeat(bytes)),
            })],
        )
    }

    #[test]
    fn images_cost_a_fixed_amount_whatever_their_size() {
        let c = HeuristicCounter;
        let small = c.message(&image(100));
        let big = c.message(&image(1_400_000));
        assert_eq!(small, big);
        assert!((IMAGE_TOKENS..IMAGE_TOKENS + 20).contains(&big), "{big}");
    }

    #[test]
    fn text_files_count_as_their_decoded_text_and_other_files_are_fixed() {
        let c = HeuristicCounter;
        let file = |mime: &str, len: usize| FileContent {
            blob: None,
            name: None,
            mime_type: Some(mime.into()),
            uri: None,
            bytes: Some("A".repeat(len)),
        };
        // 4000 base64 characters = 3000 bytes of text = 750 tokens.
        assert_eq!(c.file(&file("text/plain", 4000)), 750);
        assert_eq!(c.file(&file("application/pdf", 4_000_000)), FILE_TOKENS);
        assert_eq!(c.file(&file("application/pdf", 4)), FILE_TOKENS);
    }

    #[test]
    fn messages_count_text_calls_and_overhead() {
        let c = HeuristicCounter;
        assert_eq!(c.message(&Message::user("abcdefgh")), MESSAGE_OVERHEAD + 2);
        let call = LlmResponse::tool_calls("", vec![ToolCall::new("id", "name", "{}")]).message;
        assert_eq!(c.message(&call), MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD + 3);
    }

    #[test]
    fn reasoning_counts_as_its_text_not_its_signature() {
        let c = HeuristicCounter;
        let thought =
            crate::Reasoning::new("anthropic", "abcdefgh").with_signature("S".repeat(4000));
        let m = Message::with_parts(
            crate::Role::Assistant,
            vec![crate::Part::reasoning(thought)],
        );
        assert_eq!(c.message(&m), MESSAGE_OVERHEAD + 2);
    }

    #[test]
    fn requests_count_the_system_prompt_and_the_tools() {
        let c = HeuristicCounter;
        let bare = LlmRequest {
            messages: vec![Message::user("hi")].into(),
            ..LlmRequest::default()
        };
        let base = c.request(&bare);
        let with_prompt = LlmRequest {
            system_prompt: Some("x".repeat(400).into()),
            ..bare.clone()
        };
        assert_eq!(c.request(&with_prompt), base + 100 + MESSAGE_OVERHEAD);
        let tool = ToolDefinition::new("lookup", "d".repeat(80), json!({"type": "object"}));
        let with_tools = LlmRequest {
            tools: vec![tool.clone()].into(),
            ..bare
        };
        assert_eq!(c.request(&with_tools), base + c.tools(&[tool]));
        assert!(c.request_overhead(&with_tools) > 20 + TOOL_DEFINITION_OVERHEAD);
    }

    #[test]
    fn calibration_moves_toward_reported_usage_and_stays_clamped() {
        let c = CalibratedCounter::default();
        let text = "x".repeat(4000); // 1000 tokens
        assert_eq!(c.text(&text), 1000);
        // The provider says the same text is 1500 tokens, repeatedly.
        let mut last = 1000;
        for _ in 0..30 {
            c.observe(c.text(&text), 1500);
            let now = c.text(&text);
            assert!(now >= last && now <= 1500, "{now} after {last}");
            last = now;
        }
        assert!((1490..=1500).contains(&last), "converges: {last}");
        // A wild report moves it at most to the bound.
        for _ in 0..50 {
            c.observe(c.text(&text), 1_000_000);
            assert!(c.scale() <= 2.0, "{}", c.scale());
        }
        assert!(c.scale() > 1.99, "{}", c.scale());
        assert_eq!(c.text(&text), 2000);
        for _ in 0..50 {
            c.observe(c.text(&text), 1);
            assert!(c.scale() >= 0.5, "{}", c.scale());
        }
        assert!(c.scale() < 0.51, "{}", c.scale());
        assert_eq!(c.text(&text), 500);
        // Nothing reported (or nothing estimated) changes nothing.
        let before = c.scale();
        c.observe(0, 10);
        c.observe(10, 0);
        assert_eq!(c.scale(), before);
    }

    #[test]
    fn one_observation_moves_by_alpha() {
        let c = CalibratedCounter::new(Arc::new(HeuristicCounter)).with_alpha(0.5);
        c.observe(100, 150);
        assert!((c.scale() - 1.25).abs() < 1e-9, "{}", c.scale());
        let c = CalibratedCounter::default().with_bounds(1.5, 0.8);
        c.observe(100, 1000);
        assert!(c.scale() <= 1.5);
    }

    #[test]
    fn shared_counters_compare_by_identity() {
        let a: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
        assert_eq!(SharedCounter::default(), SharedCounter::default());
        assert_eq!(SharedCounter::new(a.clone()), SharedCounter::new(a.clone()));
        assert_ne!(
            SharedCounter::new(a),
            SharedCounter::new(Arc::new(HeuristicCounter))
        );
        assert_ne!(
            SharedCounter::default(),
            SharedCounter::new(Arc::new(HeuristicCounter))
        );
    }
}
