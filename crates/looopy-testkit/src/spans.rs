//! [`SpanCapture`]: the spans a test produced, as OpenTelemetry exports them
//! (feature `otel`).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Value, global};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::subscriber::DefaultGuard;
use tracing_subscriber::layer::SubscriberExt;

/// A thread-local `tracing` subscriber whose spans go through
/// `tracing-opentelemetry` to an in-memory exporter, with the W3C trace
/// context propagator installed globally (so that outgoing calls carry a
/// `traceparent`). It is this thread's default until dropped: run the test
/// on a current-thread runtime (`#[tokio::test]`'s default) so that every
/// span of the code under test sees it.
///
/// ```
/// let capture = looopy_testkit::SpanCapture::install();
/// tracing::info_span!("work").in_scope(|| {});
/// let spans = capture.finish();
/// assert_eq!(spans.len(), 1);
/// assert_eq!(spans[0].name, "work");
/// ```
pub struct SpanCapture {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
    guard: Option<DefaultGuard>,
}

impl SpanCapture {
    /// Installs the propagator and the subscriber for this thread.
    pub fn install() -> Self {
        global::set_text_map_propagator(TraceContextPropagator::new());
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        let guard = tracing::subscriber::set_default(subscriber);
        SpanCapture {
            exporter,
            provider,
            guard: Some(guard),
        }
    }

    /// The tracer provider behind the subscriber.
    pub fn provider(&self) -> &SdkTracerProvider {
        &self.provider
    }

    /// The spans ended so far, in the order they ended (the subscriber stays
    /// installed).
    pub fn spans(&self) -> Vec<SpanData> {
        // The exporter is simple (synchronous): nothing is left to flush, but
        // a flush error would mean spans were lost, so it is not ignored.
        if let Err(e) = self.provider.force_flush() {
            panic!("the tracer provider could not flush: {e}");
        }
        match self.exporter.get_finished_spans() {
            Ok(spans) => spans,
            Err(e) => panic!("the in-memory exporter could not be read: {e}"),
        }
    }

    /// Uninstalls the subscriber and returns every span ended.
    pub fn finish(mut self) -> Vec<SpanData> {
        drop(self.guard.take());
        self.spans()
    }
}

impl std::fmt::Debug for SpanCapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanCapture").finish_non_exhaustive()
    }
}

/// The value of a span's attribute, if it has one of that name.
pub fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}
