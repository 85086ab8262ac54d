//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::time::Duration;

use futures::StreamExt;
use looopy_core::{
    History, LlmChunk, LlmError, LlmRequest, LlmResponse, LlmStream, Message, ResponseAssembler,
    TurnContext,
};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};
use looopy_testkit::OpenAiFixture;

pub const KEY: &str = "sk-test-secret";

pub fn config(f: &OpenAiFixture) -> LiteLlmConfig {
    config_for(&f.base_url())
}

pub fn config_for(base_url: &str) -> LiteLlmConfig {
    LiteLlmConfig::new(base_url, "test-model")
        .with_api_key(KEY)
        .with_request_timeout(Duration::from_secs(20))
        .with_stream_idle_timeout(Duration::from_secs(10))
}

pub fn provider(f: &OpenAiFixture) -> LiteLlmProvider {
    LiteLlmProvider::new(config(f)).unwrap()
}

pub fn cx() -> TurnContext {
    TurnContext::new("task", "ctx")
}

pub fn ask(text: &str) -> LlmRequest {
    LlmRequest {
        messages: History::from(vec![Message::user(text)]),
        ..Default::default()
    }
}

/// Every item of a stream: the chunks, and the error that ended it if any.
pub async fn drain(mut stream: LlmStream<'_>) -> (Vec<LlmChunk>, Option<LlmError>) {
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(c) => chunks.push(c),
            Err(e) => {
                assert!(stream.next().await.is_none(), "an error ends the stream");
                return (chunks, Some(e));
            }
        }
    }
    (chunks, None)
}

pub fn assemble(chunks: &[LlmChunk]) -> LlmResponse {
    let mut a = ResponseAssembler::new();
    chunks.iter().for_each(|c| a.push(c));
    a.finish()
}
