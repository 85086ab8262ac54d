//! [`ResponseFormatLayer`]: the turn's response format on each model call.

use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::{LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, TurnContext};
use looopy_loop::layers::LlmLayer;

/// A model layer that sets each request's `response_format` from the turn
/// context ([`TurnContext::response_format`]), unless the request has one
/// already.
///
/// A loop serves many turns at once, only some of them structured: the
/// format travels with the turn rather than with the loop.
/// `AgentLoop::builder(llm).llm_layer(ResponseFormatLayer)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResponseFormatLayer;

impl LlmLayer for ResponseFormatLayer {
    fn layer(&self, inner: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        Arc::new(WithFormat { inner })
    }
}

struct WithFormat {
    inner: Arc<dyn LlmProvider>,
}

impl WithFormat {
    fn apply(mut request: LlmRequest, cx: &TurnContext) -> LlmRequest {
        if request.response_format.is_none() {
            request.response_format = cx.response_format.as_deref().cloned();
        }
        request
    }
}

#[async_trait]
impl LlmProvider for WithFormat {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        self.inner.call(Self::apply(request, cx), cx).await
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        self.inner.stream(Self::apply(request, cx), cx)
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
}
