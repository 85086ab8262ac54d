//! The sliding context window: which history messages are sent to the
//! model, without separating tool calls from their results.
//!
//! The system prompt never is in the history (the loop sends it beside the
//! messages), so it is always kept; its tokens, and those of the tool
//! definitions, are taken from the token budget before the history
//! (see [`WindowConfig::max_tokens`]). In the history, leading *pinned*
//! messages are always kept too: `system` messages and the summary left by a
//! compaction. From the rest the window keeps the most recent messages that
//! fit the limits, and moves its start forward to the next *safe* cut when
//! the limit falls inside a tool exchange: a window never begins with a tool
//! result, and never holds a tool result without the assistant message that
//! asked for it.
//!
//! Tokens are estimated by the configuration's [`TokenCounter`]
//! ([`HeuristicCounter`] by default).
//! Everything here is pure; [`WindowedLlm`] applies the window to every
//! request of a provider and feeds the counter the usage it reports.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    History, LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, Message, Role,
    TurnContext,
};

use crate::compaction::is_summary;
use crate::tokens::{HeuristicCounter, SharedCounter, TokenCounter};

/// Limits of the window. `None` means "no limit"; the default has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowConfig {
    /// Most history messages sent, pinned ones included (they are kept even
    /// when they alone exceed it).
    pub max_messages: Option<usize>,
    /// Most estimated prompt tokens of a request: the history (pinned
    /// messages included), plus [`reserve_tokens`](Self::reserve_tokens),
    /// plus what the window can measure outside the history (the system
    /// prompt and tool definitions of the request, in [`WindowedLlm`]).
    pub max_tokens: Option<usize>,
    /// Tokens held back from `max_tokens` before the history is fitted, for
    /// what the window does not measure itself. The Agent adds its loop's
    /// system prompt here for the window it applies at the start of a turn
    /// (where the request is not built yet); set more to leave room for the
    /// answer. Default 0. Ignored without `max_tokens`.
    pub reserve_tokens: usize,
    /// How tokens are estimated (default [`HeuristicCounter`]).
    pub counter: SharedCounter,
}

impl WindowConfig {
    /// No limits: everything is sent.
    pub fn unbounded() -> Self {
        Self::default()
    }

    /// At most `n` messages.
    pub fn max_messages(n: usize) -> Self {
        WindowConfig {
            max_messages: Some(n),
            ..Self::default()
        }
    }

    /// At most about `n` tokens.
    pub fn max_tokens(n: usize) -> Self {
        WindowConfig {
            max_tokens: Some(n),
            ..Self::default()
        }
    }

    /// Adds a message limit.
    pub fn with_max_messages(mut self, n: usize) -> Self {
        self.max_messages = Some(n);
        self
    }

    /// Adds a token limit.
    pub fn with_max_tokens(mut self, n: usize) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Holds `n` tokens back from the token limit (see
    /// [`reserve_tokens`](Self::reserve_tokens)).
    pub fn with_reserve_tokens(mut self, n: usize) -> Self {
        self.reserve_tokens = n;
        self
    }

    /// Estimates tokens with `counter`.
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = SharedCounter::new(counter);
        self
    }

    /// The token counter.
    pub fn counter(&self) -> &dyn TokenCounter {
        self.counter.get()
    }

    /// Whether no limit is set.
    pub fn is_unbounded(&self) -> bool {
        self.max_messages.is_none() && self.max_tokens.is_none()
    }
}

/// A rough token count of a message with the default
/// [`HeuristicCounter`]: about four characters of text per token, a fixed
/// cost per image or file, a small overhead per message and per tool call.
/// Good enough for budgets; not a tokenizer.
pub fn estimate_tokens(message: &Message) -> usize {
    HeuristicCounter.message(message)
}

pub use looopy_core::cuts::safe_cut_points;

fn safe_cuts(messages: &[&Message]) -> Vec<bool> {
    looopy_core::cuts::safe_cut_points_of(messages)
}

/// Whether a cut right after the `pinned` head is safe: no pinned message
/// calls a tool, and the first message after them is not a tool result
/// (what [`safe_cuts`] says of that cut, found without the pass).
fn starts_cleanly(messages: &[&Message], pinned: usize) -> bool {
    messages[..pinned].iter().all(|m| m.tool_calls.is_empty())
        && messages.get(pinned).is_none_or(|m| m.role != Role::Tool)
}

/// Whether a message is always kept at the head of the window.
fn is_pinned(message: &Message) -> bool {
    message.role == Role::System || is_summary(message)
}

/// What a window keeps: the first `pinned` messages, then everything from
/// `start` on (`start >= pinned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowPlan {
    /// Number of leading pinned messages (system messages, compaction summary).
    pub pinned: usize,
    /// Where the kept suffix begins.
    pub start: usize,
}

impl WindowPlan {
    /// Whether the window drops nothing.
    pub fn keeps_all(&self) -> bool {
        self.start == self.pinned
    }

    /// Number of messages kept out of `total`.
    pub fn kept(&self, total: usize) -> usize {
        self.pinned + total.saturating_sub(self.start)
    }
}

/// Plans the window over `messages` (oldest first), with
/// [`reserve_tokens`](WindowConfig::reserve_tokens) as the only overhead
/// outside the history.
///
/// The suffix starts at the first safe cut at or after the point the limits
/// ask for. A window never ends up empty when there are unpinned messages:
/// when the limits leave no room (or no safe cut follows), it keeps the
/// smallest safe suffix instead, even over the limits, because a model call
/// without the latest message makes no sense.
pub fn plan(messages: &[Message], config: &WindowConfig) -> WindowPlan {
    plan_with_overhead(messages, config, 0)
}

/// Like [`plan`], with `overhead` more tokens (beside
/// [`reserve_tokens`](WindowConfig::reserve_tokens)) spent outside the
/// history: the system prompt and the tool definitions of the request.
pub fn plan_with_overhead(
    messages: &[Message],
    config: &WindowConfig,
    overhead: usize,
) -> WindowPlan {
    plan_refs(&messages.iter().collect::<Vec<_>>(), config, overhead, None)
}

/// The plan; with `keep_from`, the kept suffix starts at or before it
/// (the current turn's own messages are never dropped, see
/// [`LlmRequest::keep_from`]), over the limits if need be.
fn plan_refs(
    messages: &[&Message],
    config: &WindowConfig,
    overhead: usize,
    keep_from: Option<usize>,
) -> WindowPlan {
    let n = messages.len();
    let pinned = messages.iter().take_while(|m| is_pinned(m)).count();
    if config.is_unbounded() || pinned == n {
        return WindowPlan {
            pinned,
            start: pinned,
        };
    }
    let mut target = pinned;
    if let Some(max) = config.max_messages {
        let room = max.saturating_sub(pinned);
        target = target.max(n.saturating_sub(room));
    }
    if let Some(budget) = config.max_tokens {
        let counter = config.counter();
        let pinned_tokens: usize = messages[..pinned].iter().map(|m| counter.message(m)).sum();
        let mut room = budget
            .saturating_sub(config.reserve_tokens)
            .saturating_sub(overhead)
            .saturating_sub(pinned_tokens);
        let mut start = n;
        while start > pinned {
            let cost = counter.message(messages[start - 1]);
            if cost > room {
                break;
            }
            room -= cost;
            start -= 1;
        }
        target = target.max(start);
    }
    if target == pinned && starts_cleanly(messages, pinned) {
        // Everything fits and the history after the pinned head is whole:
        // the first safe cut is the head itself, without the pass over
        // every tool call that finding it takes in general (a turn plans
        // its window before each model call).
        return WindowPlan {
            pinned,
            start: pinned,
        };
    }
    let safe = safe_cuts(messages);
    let forward = (target..n).find(|&s| safe[s]);
    let mut start = match forward {
        Some(s) => s,
        // Nothing safe after the target: keep the smallest safe suffix
        // before it, or everything when there is none.
        None => (pinned..target.min(n))
            .rev()
            .find(|&s| safe[s])
            .unwrap_or(pinned),
    };
    if let Some(cap) = keep_from
        && start > cap
    {
        // The turn's own messages stay, all of them: the window starts at
        // the latest safe cut before the turn (the loop's context guard,
        // not the window, keeps a long turn within the model's context).
        start = (pinned..=cap.min(n))
            .rev()
            .find(|&s| safe[s])
            .unwrap_or(pinned);
    }
    WindowPlan { pinned, start }
}

/// The messages of `history` that the window keeps, in order, with
/// [`reserve_tokens`](WindowConfig::reserve_tokens) as the only overhead.
/// Cheap when nothing is dropped (the history is shared, not copied).
pub fn apply(history: &History, config: &WindowConfig) -> History {
    apply_with_overhead(history, config, 0)
}

/// Like [`apply`], with `overhead` more tokens spent outside the history.
pub fn apply_with_overhead(history: &History, config: &WindowConfig, overhead: usize) -> History {
    apply_keeping(history, config, overhead, None)
}

/// [`apply_with_overhead`] that keeps every message from `keep_from` on.
fn apply_keeping(
    history: &History,
    config: &WindowConfig,
    overhead: usize,
    keep_from: Option<usize>,
) -> History {
    if config.is_unbounded() {
        return history.clone();
    }
    let refs: Vec<&Message> = history.iter().collect();
    let plan = plan_refs(&refs, config, overhead, keep_from);
    if plan.keeps_all() {
        return history.clone();
    }
    let mut kept = History::new();
    for m in history.iter_from(0).take(plan.pinned) {
        kept.push_shared(m.clone());
    }
    for m in history.iter_from(plan.start) {
        kept.push_shared(m.clone());
    }
    kept
}

/// Windows a request: its history is cut to what fits beside its system
/// prompt and tool definitions (measured by the configuration's counter)
/// and [`reserve_tokens`](WindowConfig::reserve_tokens). The current turn's
/// own messages ([`LlmRequest::keep_from`] on) are never dropped: a turn
/// that outgrows the limits is the loop's context guard's to compact or
/// refuse, not the window's to cut silently.
pub fn apply_to_request(mut request: LlmRequest, config: &WindowConfig) -> LlmRequest {
    if config.is_unbounded() {
        return request;
    }
    let overhead = if config.max_tokens.is_some() {
        config.counter().request_overhead(&request)
    } else {
        0
    };
    let keep_from = request.keep_from;
    let before = request.messages.len();
    request.messages = apply_keeping(&request.messages, config, overhead, keep_from);
    if let Some(from) = keep_from {
        // The turn's messages, all kept, are the last ones: they moved
        // with the cut.
        let turn = before.saturating_sub(from);
        request.keep_from = Some(request.messages.len().saturating_sub(turn));
    }
    request
}

/// Estimates a request as a [`WindowedLlm`] with the same window sends
/// it: windowed, then counted by the window's counter. The Agent gives it
/// to the loop it builds, whose context guard then checks what the model
/// will really be sent (the window drops older messages first; only a
/// turn whose own messages outgrow the budget is compacted or refused).
#[derive(Debug, Clone)]
pub struct WindowEstimate(pub WindowConfig);

impl looopy_loop::RequestEstimator for WindowEstimate {
    fn estimate(&self, request: &LlmRequest) -> usize {
        let sent = apply_to_request(request.clone(), &self.0);
        self.0.counter().request(&sent)
    }
}

/// A provider that applies a [`WindowConfig`] to the messages of every
/// request before passing it on, counting the request's system prompt and
/// tool definitions against the token limit.
///
/// It also reports to the configuration's counter, through
/// [`TokenCounter::observe`], the prompt tokens the provider reports for
/// each windowed request beside the counter's estimate of it, so that a
/// [`CalibratedCounter`](crate::tokens::CalibratedCounter) learns.
///
/// The Agent wraps its model in one when it builds its own loop, so that
/// the window also holds between the iterations of a long turn: older
/// messages make room for the turn's new ones, but the turn's own messages
/// ([`LlmRequest::keep_from`] on) are never dropped; a turn that outgrows
/// the budget is the loop's context guard's (see [`WindowEstimate`]). Wrap
/// your model yourself when you give the Agent a prebuilt
/// [`AgentLoop`](looopy_loop::AgentLoop).
#[derive(Clone)]
pub struct WindowedLlm {
    inner: Arc<dyn LlmProvider>,
    config: WindowConfig,
}

impl WindowedLlm {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn LlmProvider>, config: WindowConfig) -> Self {
        WindowedLlm { inner, config }
    }

    /// The window.
    pub fn config(&self) -> &WindowConfig {
        &self.config
    }

    /// The windowed request and the counter's estimate of it, made only
    /// for a counter that learns from it: the default heuristic ignores
    /// [`TokenCounter::observe`], and counting a request (every message,
    /// every tool's schema as JSON) costs more than anything else here.
    fn windowed(&self, request: LlmRequest) -> (LlmRequest, Option<usize>) {
        let request = apply_to_request(request, &self.config);
        let estimate =
            (!self.config.counter.is_default()).then(|| self.config.counter().request(&request));
        (request, estimate)
    }
}

#[async_trait]
impl LlmProvider for WindowedLlm {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let (request, estimate) = self.windowed(request);
        let response = self.inner.call(request, cx).await?;
        if let (Some(usage), Some(estimate)) = (&response.usage, estimate) {
            self.config
                .counter()
                .observe(estimate, usage.input_tokens as usize);
        }
        Ok(response)
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        let (request, estimate) = self.windowed(request);
        let Some(estimate) = estimate else {
            // Nothing to learn: the stream passes through untouched.
            return self.inner.stream(request, cx);
        };
        let mut observed = false;
        self.inner
            .stream(request, cx)
            .inspect(move |chunk| {
                // Some providers report usage in several chunks; the first
                // with prompt tokens is the one to learn from.
                if let Ok(LlmChunk::Usage(usage)) = chunk
                    && usage.input_tokens > 0
                    && !observed
                {
                    observed = true;
                    self.config
                        .counter()
                        .observe(estimate, usage.input_tokens as usize);
                }
            })
            .boxed()
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::{LlmResponse, Part, ToolCall, ToolResult};
    use serde_json::json;

    fn user(t: &str) -> Message {
        Message::user(t)
    }
    fn asst(t: &str) -> Message {
        Message::assistant(t)
    }
    fn calls(ids: &[&str]) -> Message {
        LlmResponse::tool_calls(
            "",
            ids.iter().map(|id| ToolCall::new(*id, "t", "{}")).collect(),
        )
        .message
    }
    fn result(id: &str) -> Message {
        ToolResult::text(id, "r").into_message()
    }
    fn summary() -> Message {
        let mut m = Message::user("summary");
        m.metadata
            .insert(crate::compaction::COMPACTION_KEY.into(), json!({}));
        m
    }

    /// Checks the invariant the window promises on `kept`: every tool result
    /// has its call earlier in the window, and it does not start with one.
    fn assert_tool_safe(kept: &[Message]) {
        let mut seen = std::collections::HashSet::new();
        for m in kept {
            for c in &m.tool_calls {
                seen.insert(c.id.clone());
            }
            if m.role == Role::Tool {
                let id = m.tool_call_id.clone().unwrap();
                assert!(seen.contains(&id), "orphan tool result {id} in {kept:#?}");
            }
        }
    }

    fn kept(messages: &[Message], config: WindowConfig) -> Vec<Message> {
        apply(&History::from(messages.to_vec()), &config).to_vec()
    }

    #[test]
    fn unbounded_keeps_everything() {
        let h = vec![user("a"), asst("b"), user("c")];
        assert_eq!(kept(&h, WindowConfig::unbounded()), h);
        assert!(plan(&h, &WindowConfig::unbounded()).keeps_all());
    }

    #[test]
    fn under_the_limit_keeps_everything() {
        let h = vec![user("a"), asst("b"), user("c")];
        assert_eq!(kept(&h, WindowConfig::max_messages(3)), h);
        assert_eq!(kept(&h, WindowConfig::max_messages(10)), h);
    }

    #[test]
    fn keeps_the_most_recent_messages() {
        let h = vec![user("1"), asst("2"), user("3"), asst("4"), user("5")];
        let k = kept(&h, WindowConfig::max_messages(2));
        assert_eq!(k, h[3..].to_vec());
    }

    #[test]
    fn never_starts_inside_a_tool_exchange() {
        // 0 user, 1 call(a,b), 2 result a, 3 result b, 4 answer, 5 user
        let h = vec![
            user("q"),
            calls(&["a", "b"]),
            result("a"),
            result("b"),
            asst("done"),
            user("next"),
        ];
        for max in 0..=h.len() {
            let k = kept(&h, WindowConfig::max_messages(max));
            assert_tool_safe(&k);
            assert!(!k.is_empty(), "max {max} emptied the window");
            assert!(k.len() <= max.max(1), "max {max} kept {}", k.len());
        }
        // A limit of 4 would start at "result a": the window moves to "answer".
        let k = kept(&h, WindowConfig::max_messages(4));
        assert_eq!(k, h[4..].to_vec());
        // A limit of 5 starts exactly at the call: the whole exchange is kept.
        let k = kept(&h, WindowConfig::max_messages(5));
        assert_eq!(k, h[1..].to_vec());
    }

    #[test]
    fn a_trailing_tool_exchange_larger_than_the_limit_is_kept_whole() {
        // The last messages are one exchange: there is no safe cut inside,
        // so the window keeps the smallest safe suffix, over the limit.
        let h = vec![
            user("q"),
            calls(&["a", "b", "c"]),
            result("a"),
            result("b"),
            result("c"),
        ];
        let k = kept(&h, WindowConfig::max_messages(2));
        assert_eq!(k, h[1..].to_vec());
        assert_tool_safe(&k);
    }

    #[test]
    fn results_are_never_split_from_calls_with_interleaving() {
        // Results of two calls interleaved with another exchange (odd but
        // possible): cuts inside either span are unsafe.
        let h = vec![
            user("q"),
            calls(&["a"]),
            calls(&["b"]),
            result("a"),
            result("b"),
            user("x"),
        ];
        let safe = safe_cut_points(&h);
        assert_eq!(safe, vec![true, true, false, false, false, true, true]);
    }

    #[test]
    fn pinned_messages_are_kept_and_counted() {
        let h = vec![
            Message::system("rules"),
            summary(),
            user("1"),
            asst("2"),
            user("3"),
            asst("4"),
        ];
        let k = kept(&h, WindowConfig::max_messages(4));
        assert_eq!(k.len(), 4);
        assert_eq!(k[0].text(), "rules");
        assert_eq!(k[1].text(), "summary");
        assert_eq!(k[2].text(), "3");
        // Pinned messages alone over the limit: they stay, plus the last message.
        let k = kept(&h, WindowConfig::max_messages(1));
        assert_eq!(k.len(), 3);
        assert_eq!(k[2].text(), "4");
        let p = plan(&h, &WindowConfig::max_messages(1));
        assert_eq!(p.pinned, 2);
        assert_eq!(p.kept(h.len()), 3);
    }

    #[test]
    fn only_leading_pinned_messages_are_pinned() {
        let h = vec![user("1"), Message::system("late"), user("3"), asst("4")];
        let p = plan(&h, &WindowConfig::max_messages(2));
        assert_eq!(p.pinned, 0);
        assert_eq!(p.start, 2);
    }

    #[test]
    fn a_history_of_only_pinned_messages_is_kept() {
        let h = vec![Message::system("a"), summary()];
        assert_eq!(kept(&h, WindowConfig::max_messages(1)), h);
    }

    #[test]
    fn empty_history_stays_empty() {
        assert!(kept(&[], WindowConfig::max_messages(3)).is_empty());
        assert!(kept(&[], WindowConfig::max_tokens(3)).is_empty());
    }

    #[test]
    fn token_budget_keeps_what_fits() {
        let long = "x".repeat(400); // ~100 tokens + overhead
        let h = vec![user(&long), asst(&long), user(&long), asst("short")];
        let each = estimate_tokens(&h[0]);
        let short = estimate_tokens(&h[3]);
        let k = kept(&h, WindowConfig::max_tokens(each + short));
        assert_eq!(k, h[2..].to_vec());
        let k = kept(&h, WindowConfig::max_tokens(short));
        assert_eq!(k, h[3..].to_vec());
        // Smaller than the last message: still keeps the last message.
        let k = kept(&h, WindowConfig::max_tokens(1));
        assert_eq!(k, h[3..].to_vec());
    }

    #[test]
    fn both_limits_apply_and_the_stricter_wins() {
        let h: Vec<Message> = (0..10).map(|i| user(&format!("m{i}"))).collect();
        let per = estimate_tokens(&h[0]);
        let k = kept(&h, WindowConfig::max_messages(5).with_max_tokens(per * 3));
        assert_eq!(k.len(), 3);
        let k = kept(&h, WindowConfig::max_messages(2).with_max_tokens(per * 3));
        assert_eq!(k.len(), 2);
    }

    #[test]
    fn token_budget_respects_tool_boundaries() {
        let big = "y".repeat(4000);
        let mut r = ToolResult::text("a", big).into_message();
        r.tool_call_id = Some("a".into());
        let h = vec![user("q"), calls(&["a"]), r, asst("ok"), user("more")];
        let budget = estimate_tokens(&h[2]) + estimate_tokens(&h[3]) + estimate_tokens(&h[4]);
        // Fits the result but not its call: the window drops the result too.
        let k = kept(&h, WindowConfig::max_tokens(budget));
        assert_eq!(k, h[3..].to_vec());
        assert_tool_safe(&k);
    }

    #[test]
    fn orphan_tool_results_never_start_a_window() {
        // A result whose call is not in the history at all.
        let h = vec![result("zz"), asst("a"), user("b")];
        let safe = safe_cut_points(&h);
        assert!(!safe[0]);
        // Even under the limit a bounded window drops a leading orphan: a
        // provider would refuse it.
        let k = kept(&h, WindowConfig::max_messages(3));
        assert_eq!(k, h[1..].to_vec());
        let k = kept(&h, WindowConfig::max_messages(1));
        assert_eq!(k, h[2..].to_vec());
    }

    #[test]
    fn a_window_that_keeps_everything_starts_at_the_first_safe_cut() {
        // The plan's shortcut for a history that fits must agree with the
        // full pass over the tool calls, pinned head or not.
        let system = Message::system("s");
        let mut calling_system = Message::system("s");
        calling_system.tool_calls = calls(&["p"]).tool_calls;
        let histories = [
            vec![user("q"), calls(&["a"]), result("a"), asst("ok")],
            vec![
                system.clone(),
                user("q"),
                calls(&["a", "b"]),
                result("a"),
                result("b"),
            ],
            vec![
                system.clone(),
                summary(),
                result("zz"),
                asst("a"),
                user("b"),
            ],
            vec![summary(), result("a"), calls(&["b"]), result("b")],
            vec![calling_system, user("q"), result("p"), asst("x")],
            vec![system, summary()],
        ];
        for h in &histories {
            let plan = plan(h, &WindowConfig::max_messages(100));
            let safe = safe_cut_points(h);
            let first_safe = (plan.pinned..h.len()).find(|&s| safe[s]);
            assert_eq!(
                plan.start,
                first_safe.unwrap_or(plan.pinned),
                "history {h:#?}"
            );
        }
    }

    #[test]
    fn estimate_counts_text_calls_and_data() {
        let a = estimate_tokens(&user("abcd"));
        let b = estimate_tokens(&user(&"abcd".repeat(10)));
        assert!(b > a);
        let c = estimate_tokens(&calls(&["id"]));
        assert!(c > estimate_tokens(&asst("")));
        let d = estimate_tokens(&Message::with_parts(
            Role::User,
            vec![Part::data(json!({"k": "v".repeat(100)}))],
        ));
        assert!(d > 25);
    }

    fn image_message(base64_len: usize) -> Message {
        Message::with_parts(
            Role::User,
            vec![Part::file(looopy_core::FileContent {
                blob: None,
                name: Some("photo.png".into()),
                mime_type: Some("image/png".into()),
                uri: None,
                bytes: Some("A".repeat(base64_len)),
            })],
        )
    }

    #[test]
    fn a_one_megabyte_image_costs_the_fixed_image_cost_and_evicts_nothing() {
        // 1 MB of image bytes is about 1.4 million base64 characters.
        let img = image_message(1_398_104);
        let cost = estimate_tokens(&img);
        assert!(
            (crate::tokens::IMAGE_TOKENS..crate::tokens::IMAGE_TOKENS + 20).contains(&cost),
            "{cost}"
        );
        let h = vec![
            user("first question"),
            asst("first answer"),
            img,
            asst("a cat"),
        ];
        let k = kept(&h, WindowConfig::max_tokens(2000));
        assert_eq!(k, h, "the image fits beside the rest");
    }

    #[test]
    fn overhead_and_reserve_reduce_what_history_fits() {
        let h: Vec<Message> = (0..10).map(|i| user(&"x".repeat(33 + i % 2))).collect();
        let per = estimate_tokens(&h[0]); // 9 + overhead for both lengths
        assert_eq!(per, estimate_tokens(&h[1]));
        let config = WindowConfig::max_tokens(per * 6);
        assert_eq!(kept(&h, config.clone()).len(), 6);
        // A system prompt worth two messages leaves room for four.
        let request = LlmRequest {
            system_prompt: Some("s".repeat((per * 2 - 4 - 3) * 4).into()),
            messages: History::from(h.clone()),
            ..LlmRequest::default()
        };
        let overhead = config.counter().request_overhead(&request);
        assert_eq!(overhead, per * 2);
        assert_eq!(apply_to_request(request, &config).messages.len(), 4);
        // The same through the reserve.
        let reserved = config.clone().with_reserve_tokens(per * 3);
        assert_eq!(kept(&h, reserved).len(), 3);
        // Tool definitions count too.
        let tools: Arc<[looopy_core::ToolDefinition]> = vec![looopy_core::ToolDefinition::new(
            "lookup",
            "d".repeat(per * 4 * 4),
            json!({"type": "object"}),
        )]
        .into();
        let request = LlmRequest {
            messages: History::from(h.clone()),
            tools,
            ..LlmRequest::default()
        };
        // They take 70 of the 78 tokens: only the last message is left.
        assert_eq!(apply_to_request(request, &config).messages.len(), 1);
    }

    /// Counts every message as 10 tokens, except tool results (100).
    struct Flat;
    impl TokenCounter for Flat {
        fn text(&self, _: &str) -> usize {
            1
        }
        fn message(&self, m: &Message) -> usize {
            if m.role == Role::Tool { 100 } else { 10 }
        }
    }

    #[test]
    fn a_custom_counter_keeps_tool_pairs_together() {
        let h = vec![
            user("q"),
            calls(&["a"]),
            result("a"),
            asst("ok"),
            user("more"),
            calls(&["b"]),
            result("b"),
        ];
        let config = WindowConfig::max_tokens(115).with_counter(Arc::new(Flat));
        // 115 fits result b (100) and its call (10) but nothing before.
        let k = kept(&h, config.clone());
        assert_eq!(k, h[5..].to_vec());
        assert_tool_safe(&k);
        // 105 fits only the result: the window keeps its call anyway.
        let k = kept(&h, config.with_max_tokens(105));
        assert_eq!(k, h[5..].to_vec());
        assert_tool_safe(&k);
        for budget in 0..400 {
            let config = WindowConfig::max_tokens(budget).with_counter(Arc::new(Flat));
            let k = kept(&h, config);
            assert_tool_safe(&k);
            assert!(!k.is_empty());
        }
    }

    #[test]
    fn the_window_is_shared_not_copied_when_nothing_is_dropped() {
        let h = History::from(vec![user("a"), asst("b")]);
        let w = apply(&h, &WindowConfig::max_messages(5));
        assert_eq!(w, h);
    }
}
