//! [`LlmProvider`] for [`AnthropicProvider`]: the whole call (the client's)
//! or the streamed one (`stream.rs`), each in its `chat` span.

use async_trait::async_trait;
use looopy_core::{LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, TurnContext};
use tracing::Instrument;

use crate::client::AnthropicProvider;
use crate::stream::messages_stream;

#[async_trait]
impl LlmProvider for AnthropicProvider {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let span = self.call_span(self.model_for(&request));
        let result = self
            .call_inner(request, cx)
            .instrument(span.span().clone())
            .await;
        span.outcome(&result);
        result
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        messages_stream(self, request, cx)
    }

    fn provider_name(&self) -> &str {
        &self.config.provider_name
    }

    fn model_name(&self) -> &str {
        &self.config.model
    }
}
