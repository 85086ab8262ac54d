//! [`ResponseFormatLayer`]: the turn's response format on each model call.

use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::{
    LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream, ResponseFormat, TurnContext,
};
use looopy_loop::layers::LlmLayer;
use serde_json::Value;

/// The [`TurnContext::metadata`] key under which a turn carries its
/// [`ResponseFormat`] (as JSON) to the [`ResponseFormatLayer`].
pub const RESPONSE_FORMAT_KEY: &str = "looopy.responseFormat";

/// A model layer that sets each request's `response_format` from the turn
/// context ([`RESPONSE_FORMAT_KEY`]), unless the request has one already.
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

/// `cx` carrying `format` for the layer.
pub(crate) fn with_format(cx: TurnContext, format: &ResponseFormat) -> TurnContext {
    let mut metadata = (*cx.metadata).clone();
    // A ResponseFormat is plain JSON data; it always serializes.
    if let Ok(value) = serde_json::to_value(format) {
        metadata.insert(RESPONSE_FORMAT_KEY.into(), value);
    }
    cx.with_metadata(metadata)
}

struct WithFormat {
    inner: Arc<dyn LlmProvider>,
}

impl WithFormat {
    fn apply(mut request: LlmRequest, cx: &TurnContext) -> LlmRequest {
        if request.response_format.is_none() {
            request.response_format = cx
                .metadata
                .get(RESPONSE_FORMAT_KEY)
                .cloned()
                .and_then(|v: Value| serde_json::from_value(v).ok());
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
