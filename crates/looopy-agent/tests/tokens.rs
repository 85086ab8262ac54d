//! Token counting: files cost a fixed amount, the system prompt and the
//! tool definitions are taken from the budget, a custom counter decides
//! what is sent, and a calibrated counter learns from reported usage.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_agent::{
    Agent, AgentLoop, AgentLoopConfig, CalibratedCounter, TokenCounter, WindowConfig, WindowedLlm,
};
use looopy_core::{
    FileContent, LlmProvider, LlmRequest, LlmResponse, Message, Part, Role, TurnContext, Usage,
};
use looopy_testkit::ScriptedLlm;
use support::*;

fn texts(messages: &looopy_core::History) -> Vec<String> {
    messages.iter().map(|m| m.text()).collect()
}

/// Every message costs 1000 tokens.
struct Expensive;
impl TokenCounter for Expensive {
    fn text(&self, text: &str) -> usize {
        text.len()
    }
    fn message(&self, _: &Message) -> usize {
        1000
    }
}

async fn two_turns(agent: &Agent) {
    turn(agent, "u1").await;
    turn(agent, "u2").await;
}

#[tokio::test]
async fn a_custom_counter_changes_what_the_model_is_sent() {
    let stores = looopy_stores_memory::stores();
    let plain = ScriptedLlm::new()
        .respond(LlmResponse::text("a1"))
        .respond(LlmResponse::text("a2"));
    let agent = builder("c-tokens-plain", &plain, &stores)
        .window(WindowConfig::max_tokens(2500))
        .build()
        .unwrap();
    two_turns(&agent).await;
    assert_eq!(texts(&plain.requests()[1].messages), vec!["u1", "a1", "u2"]);

    let custom = ScriptedLlm::new()
        .respond(LlmResponse::text("a1"))
        .respond(LlmResponse::text("a2"));
    let agent = builder("c-tokens-custom", &custom, &stores)
        .window(WindowConfig::max_tokens(2500))
        .token_counter(Arc::new(Expensive))
        .build()
        .unwrap();
    two_turns(&agent).await;
    assert_eq!(texts(&custom.requests()[1].messages), vec!["a1", "u2"]);
}

#[tokio::test]
async fn a_large_image_does_not_evict_the_window() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("a cat"))
        .respond(LlmResponse::text("yes"));
    let agent = builder("c-tokens-image", &llm, &stores)
        .window(WindowConfig::max_tokens(2000))
        .build()
        .unwrap();
    // About 1 MB of image: 1.4 million base64 characters.
    let image = Message::with_parts(
        Role::User,
        vec![
            Part::text("what is this?"),
            Part::file(FileContent {
                blob: None,
                name: Some("photo.png".into()),
                mime_type: Some("image/png".into()),
                uri: None,
                bytes: Some("A".repeat(1_398_104)),
            }),
        ],
    );
    let t = agent.execute_turn(Some(image), None).await.unwrap();
    t.collect_all().await.1.unwrap();
    turn(&agent, "sure?").await;
    let second = &llm.requests()[1].messages;
    assert_eq!(second.len(), 3, "{:?}", texts(second));
    assert_eq!(second.to_vec()[0].text(), "what is this?");
}

#[tokio::test]
async fn the_system_prompt_reduces_what_history_fits() {
    // 40 characters: 10 text tokens + 4 overhead per message.
    let msg = |c: &str| c.repeat(40);
    let run = |prompt: Option<String>, context: &'static str| async move {
        let stores = looopy_stores_memory::stores();
        let llm = ScriptedLlm::new()
            .respond(LlmResponse::text(msg("a")))
            .respond(LlmResponse::text(msg("b")));
        let agent = builder(context, &llm, &stores)
            .loop_config(AgentLoopConfig {
                system_prompt: prompt.map(Into::into),
                ..AgentLoopConfig::default()
            })
            .window(WindowConfig::max_tokens(60))
            // No `read_tool_output` definition in the request: only the
            // prompt and the history count here.
            .without_tool_output_cache()
            .build()
            .unwrap();
        turn(&agent, &msg("u")).await;
        turn(&agent, &msg("v")).await;
        llm.requests()[1].messages.len()
    };
    // 3 messages of 14 tokens + request overhead fit in 60.
    assert_eq!(run(None, "c-tokens-no-prompt").await, 3);
    // A 20-token prompt (80 characters) leaves room for two.
    assert_eq!(run(Some("p".repeat(80)), "c-tokens-prompt").await, 2);
}

#[tokio::test]
async fn with_a_prebuilt_loop_the_system_prompt_is_reserved_at_turn_start() {
    let run = |prompt: Option<&'static str>, context: &'static str| async move {
        let stores = looopy_stores_memory::stores();
        let llm = ScriptedLlm::new()
            .respond(LlmResponse::text("a".repeat(40)))
            .respond(LlmResponse::text("b".repeat(40)));
        let agent_loop = AgentLoop::builder(llm.clone())
            .config(AgentLoopConfig {
                system_prompt: prompt.map(Into::into),
                ..AgentLoopConfig::default()
            })
            .build();
        let agent = Agent::builder(context)
            .agent_loop(agent_loop)
            .message_store(stores.messages.clone())
            .artifact_store(stores.artifacts.clone())
            .window(WindowConfig::max_tokens(45))
            .build()
            .unwrap();
        turn(&agent, &"u".repeat(40)).await;
        turn(&agent, &"v".repeat(40)).await;
        llm.requests()[1].messages.len()
    };
    assert_eq!(run(None, "c-tokens-prebuilt").await, 3);
    // A 60-character prompt costs 4 + 15 tokens and leaves 26: one message.
    assert_eq!(
        run(
            Some("the rules of this conversation, written out at length......"),
            "c-tokens-prebuilt-prompt"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_calibrated_counter_learns_from_reported_usage() {
    let counter = Arc::new(CalibratedCounter::default());
    let request = LlmRequest {
        messages: vec![Message::user("x".repeat(400))].into(),
        ..LlmRequest::default()
    };
    let estimate = counter.request(&request);
    // The provider reports twice the estimate for each call.
    let answer = || {
        LlmResponse::text("ok").with_usage(Usage {
            input_tokens: (estimate * 2) as u64,
            ..Usage::default()
        })
    };
    let llm = ScriptedLlm::new()
        .respond(answer())
        .respond(answer())
        .respond(answer());
    let windowed = WindowedLlm::new(
        Arc::new(llm.clone()),
        WindowConfig::max_tokens(100_000).with_counter(counter.clone()),
    );
    let cx = TurnContext::new("t", "c");
    windowed.call(request.clone(), &cx).await.unwrap();
    let after_one = counter.scale();
    assert!(after_one > 1.0 && after_one < 2.0, "{after_one}");
    // Streaming calls report usage in a chunk: the counter learns too.
    use futures::StreamExt;
    let chunks: Vec<_> = windowed.stream(request.clone(), &cx).collect().await;
    assert!(chunks.iter().all(Result::is_ok));
    let after_two = counter.scale();
    assert!(after_two > after_one, "{after_two} after {after_one}");
    // The estimate moves toward what the provider reports, never past it.
    let now = counter.request(&request);
    assert!(now > estimate && now <= estimate * 2, "{now} vs {estimate}");
}

#[tokio::test]
async fn an_agent_with_a_calibrated_counter_sends_less_once_it_learns() {
    let counter = Arc::new(CalibratedCounter::default().with_alpha(1.0));
    let stores = looopy_stores_memory::stores();
    // Each call reports 1000 prompt tokens: far more than the estimate.
    let answer = |t: &str| {
        LlmResponse::text(t).with_usage(Usage {
            input_tokens: 1000,
            ..Usage::default()
        })
    };
    let llm = ScriptedLlm::new()
        .respond(answer(&"a".repeat(40)))
        .respond(answer(&"b".repeat(40)));
    let agent = builder("c-tokens-calibrated", &llm, &stores)
        .window(WindowConfig::max_tokens(60))
        .token_counter(counter.clone())
        .build()
        .unwrap();
    turn(&agent, &"u".repeat(40)).await;
    assert_eq!(counter.scale(), 2.0, "clamped at the upper bound");
    turn(&agent, &"v".repeat(40)).await;
    // Uncalibrated, three 14-token messages fit in 60; at twice the cost,
    // only the last one does.
    assert_eq!(texts(&llm.requests()[1].messages), vec!["v".repeat(40)]);
}
