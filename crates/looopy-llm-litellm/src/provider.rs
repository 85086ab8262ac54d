//! [`LlmProvider`] for [`LiteLlmProvider`]: a chat completion, whole (the
//! client's call) or streamed (`stream.rs`), each in its `chat` span.

use async_trait::async_trait;
use looopy_core::{LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, TurnContext};
use tracing::Instrument;

use crate::client::LiteLlmProvider;
use crate::decode::ChunkDecoder;
use crate::stream::{EventDecoder, chat_stream};

#[async_trait]
impl LlmProvider for LiteLlmProvider {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let span = self.call_span(self.model_for(&request));
        let body = self.body(&request, false);
        let result = self
            .call_with(body, |b| ChunkDecoder::default().whole(b), cx)
            .instrument(span.span().clone())
            .await;
        span.outcome(&result);
        result
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        chat_stream(self, request, cx)
    }

    fn provider_name(&self) -> &str {
        &self.config.provider_name
    }

    fn model_name(&self) -> &str {
        &self.config.model
    }
}
