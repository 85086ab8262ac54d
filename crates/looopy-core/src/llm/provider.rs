//! [`LlmProvider`]: a model, called with a request in a turn's context.

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};

use super::{LlmChunk, LlmError, LlmRequest, LlmResponse};
use crate::context::TurnContext;

/// A stream of chunks borrowed from its provider.
pub type LlmStream<'a> = BoxStream<'a, Result<LlmChunk, LlmError>>;

/// A model.
///
/// Implement [`call`](LlmProvider::call); override [`stream`](LlmProvider::stream)
/// when the backend streams. Cross-cutting behaviour (retry, tracing) wraps a
/// provider instead of living inside one.
#[async_trait]
pub trait LlmProvider: Send + Sync {
    /// One complete call.
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError>;

    /// A streamed call. The default makes the chunks of one [`call`](Self::call).
    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        stream::once(async move { self.call(request, cx).await })
            .flat_map(|result| match result {
                Ok(response) => stream::iter(response.into_chunks().into_iter().map(Ok)).boxed(),
                Err(e) => stream::once(async move { Err(e) }).boxed(),
            })
            .boxed()
    }

    /// The provider's name for telemetry (`gen_ai.provider.name`), such as `openai`.
    fn provider_name(&self) -> &str {
        "unknown"
    }

    /// The model requests go to unless they name one (`gen_ai.request.model`).
    fn model_name(&self) -> &str {
        "unknown"
    }
}

#[async_trait]
impl<P: LlmProvider + ?Sized> LlmProvider for Arc<P> {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        (**self).call(request, cx).await
    }
    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        (**self).stream(request, cx)
    }
    fn provider_name(&self) -> &str {
        (**self).provider_name()
    }
    fn model_name(&self) -> &str {
        (**self).model_name()
    }
}
