//! The tower layers every binding's routes run under.
//!
//! [`RequestSpanLayer`] opens each request's span (`a2a.request`, a child
//! of the caller's `traceparent`) before any extractor runs, so that
//! everything the request does, refusals included, is in it. Its future
//! is the inner one instrumented: nothing is boxed per request.

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::handler::{Handler, HandlerService};
use axum::http::Request;
use tower::{Layer, Service};
use tracing::Instrument;
use tracing::instrument::Instrumented;

use crate::server::state::ServerState;
use crate::trace;

/// Runs each request in its own span (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestSpanLayer {
    /// `rpc.system` of the binding.
    system: &'static str,
}

impl RequestSpanLayer {
    /// The layer of a binding (`jsonrpc`, `http`, `grpc`).
    pub(crate) fn new(system: &'static str) -> Self {
        RequestSpanLayer { system }
    }
}

impl<S> Layer<S> for RequestSpanLayer {
    type Service = RequestSpan<S>;

    fn layer(&self, inner: S) -> RequestSpan<S> {
        RequestSpan {
            inner,
            system: self.system,
        }
    }
}

/// The service [`RequestSpanLayer`] makes.
#[derive(Debug, Clone)]
pub(crate) struct RequestSpan<S> {
    inner: S,
    system: &'static str,
}

impl<S, B> Service<Request<B>> for RequestSpan<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Instrumented<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let span = trace::request_span(self.system, request.headers());
        let future = span.in_scope(|| self.inner.call(request));
        future.instrument(span)
    }
}

/// `handler` on the server's state, in a request span of `system`: the
/// service a route is made of. Wrapping the handler before it becomes a
/// route (rather than layering the route) keeps one boxed future per
/// request, as an unlayered route has.
pub(crate) fn traced<H, T>(
    system: &'static str,
    state: &Arc<ServerState>,
    handler: H,
) -> RequestSpan<HandlerService<H, T, Arc<ServerState>>>
where
    H: Handler<T, Arc<ServerState>>,
    T: 'static,
{
    RequestSpanLayer::new(system).layer(handler.with_state(Arc::clone(state)))
}
