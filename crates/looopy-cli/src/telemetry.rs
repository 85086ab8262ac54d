//! Logging and OpenTelemetry export for the binary. Libraries only emit
//! `tracing` spans and events; this is the one place that installs a
//! subscriber.
//!
//! - Terminal logs: `tracing-subscriber` to stderr, filtered by `RUST_LOG`
//!   (default: [`TelemetryConfig::console_filter`], `info` for `serve`,
//!   nothing for `run` and `chat` unless `-v`), readable or JSON
//!   (`LOOOPY_LOG_FORMAT=json`). Lines show the spans they happened in
//!   only with `LOOOPY_LOG_SPANS=1` ([`TelemetryConfig::console_spans`]):
//!   the terminal layer then formats every span's fields when the span
//!   opens, printed or not, which cost a served turn about a fifth of its
//!   CPU at `info`.
//! - Export: traces, metrics and logs over OTLP, each to its own endpoint
//!   (see [`OtlpConfig::from_env`]), over HTTP/protobuf or gRPC
//!   (`OTEL_EXPORTER_OTLP_PROTOCOL`). Exported spans and logs follow
//!   `RUST_LOG` (default `info`) whatever the terminal shows. Batches leave on
//!   the SDK's own threads: a turn never waits for an export, and a
//!   collector that is down costs the dropped data only.
//! - The resource: `service.name` is `looopy` unless `OTEL_SERVICE_NAME` or
//!   `OTEL_RESOURCE_ATTRIBUTES` say otherwise; `service.version` is the
//!   binary's.
//! - Propagation: W3C trace context and baggage, so incoming `traceparent`
//!   and `baggage` headers are honoured and outgoing requests carry them.

mod exporters;
mod otlp;

use opentelemetry::KeyValue;
use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::resource::{
    EnvResourceDetector, ResourceDetector, TelemetryResourceDetector,
};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tokio::runtime::Runtime;
use tracing::subscriber::Interest;
use tracing_subscriber::filter::FilterExt;
use tracing_subscriber::layer::{Context, Filter, SubscriberExt};
use tracing_subscriber::registry::{LookupSpan, Registry};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use otlp::{OtlpConfig, OtlpEndpoint, OtlpProtocol, TelemetryError};

/// The `service.name` when neither `OTEL_SERVICE_NAME` nor
/// `OTEL_RESOURCE_ATTRIBUTES` names one.
pub const DEFAULT_SERVICE_NAME: &str = "looopy";

/// Targets never sent to the OTLP log exporter: the exporters' own HTTP and
/// gRPC stacks, which would log about exporting their logs.
const EXPORT_NOISE: &str = "h2=off,hyper=off,hyper_util=off,tonic=off,tower=off,reqwest=off,opentelemetry=off,opentelemetry_sdk=off,opentelemetry_otlp=off";

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Human,
    /// One JSON object per event.
    Json,
}

impl LogFormat {
    /// The format `LOOOPY_LOG_FORMAT` names (`json`; anything else is
    /// [`LogFormat::Human`]), looked up in `env`.
    pub fn from_vars(env: &dyn Fn(&str) -> Option<String>) -> Self {
        match env("LOOOPY_LOG_FORMAT").as_deref().map(str::trim) {
            Some("json") => LogFormat::Json,
            _ => LogFormat::Human,
        }
    }
}

/// What to set up. [`TelemetryConfig::from_env`] reads the standard variables.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// Where each signal is exported; nothing by default.
    pub otlp: OtlpConfig,
    /// Terminal log format.
    pub log_format: LogFormat,
    /// Terminal log filter when `RUST_LOG` is unset (`off` shows nothing).
    pub console_filter: String,
    /// Whether terminal lines show the spans they happened in (off by
    /// default: the terminal layer then takes no spans, so it formats no
    /// span fields; exported spans are not affected).
    pub console_spans: bool,
    /// A mistake in the variables, reported by [`Telemetry::init`].
    pub error: Option<TelemetryError>,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            otlp: OtlpConfig::default(),
            log_format: LogFormat::Human,
            console_filter: "info".into(),
            console_spans: false,
            error: None,
        }
    }
}

impl TelemetryConfig {
    /// Reads the `OTEL_*` variables ([`OtlpConfig::from_env`]),
    /// `LOOOPY_LOG_FORMAT` and `LOOOPY_LOG_SPANS` (`1` or `true`: terminal
    /// lines show their spans) from the process's environment.
    pub fn from_env() -> Self {
        Self::from_vars(&|k| std::env::var(k).ok())
    }

    /// [`from_env`](Self::from_env) with the variables looked up in `env`.
    pub fn from_vars(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let (otlp, error) = match OtlpConfig::from_env(env) {
            Ok(otlp) => (otlp, None),
            Err(e) => (OtlpConfig::default(), Some(e)),
        };
        let log_format = LogFormat::from_vars(env);
        let console_spans = env("LOOOPY_LOG_SPANS")
            .is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"));
        TelemetryConfig {
            otlp,
            log_format,
            console_spans,
            error,
            ..TelemetryConfig::default()
        }
    }

    /// The same with another terminal filter when `RUST_LOG` is unset.
    pub fn console_filter(mut self, filter: impl Into<String>) -> Self {
        self.console_filter = filter.into();
        self
    }
}

/// The exported resource: `service.name` = `looopy` and `service.version`
/// = this binary's, under what `OTEL_RESOURCE_ATTRIBUTES` says, under
/// `OTEL_SERVICE_NAME`.
pub fn resource(env: &dyn Fn(&str) -> Option<String>) -> Resource {
    let detectors: [Box<dyn ResourceDetector>; 2] = [
        Box::new(TelemetryResourceDetector),
        Box::new(EnvResourceDetector::new()),
    ];
    let builder = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", DEFAULT_SERVICE_NAME),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
        ])
        .with_detectors(&detectors);
    match env("OTEL_SERVICE_NAME").filter(|n| !n.trim().is_empty()) {
        Some(name) => builder.with_service_name(name),
        None => builder,
    }
    .build()
}

/// `RUST_LOG`, else `default`.
fn filter(default: &str) -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default))
}

/// The terminal layer's filter: `RUST_LOG`, else `default`, for events;
/// spans only when `spans`.
fn console_filter<S>(default: &str, spans: bool) -> impl Filter<S> + Send + Sync + 'static
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    filter(default).and(Kinds { spans })
}

/// Lets events through, and spans only when `spans`. Decided per callsite
/// (`Interest::never` for a span callsite when spans are off), not per
/// call: when no other layer takes spans, every span callsite is then
/// disabled once and a span macro costs a load and a branch, where a
/// per-call filter made each span ask every layer whether it wants it.
struct Kinds {
    spans: bool,
}

impl<S> Filter<S> for Kinds {
    fn enabled(&self, meta: &tracing::Metadata<'_>, _: &Context<'_, S>) -> bool {
        self.spans || meta.is_event()
    }

    fn callsite_enabled(&self, meta: &'static tracing::Metadata<'static>) -> Interest {
        if self.spans || meta.is_event() {
            Interest::always()
        } else {
            Interest::never()
        }
    }
}

/// The process's layers, only those in use: an absent exporter adds no
/// layer (an `Option` layer that is `None` answers "enabled" for every
/// callsite, which kept span callsites alive though nothing took spans).
type Layers = Vec<Box<dyn Layer<Registry> + Send + Sync>>;

/// The terminal layer: readable or JSON lines on stderr.
fn console_layer(config: &TelemetryConfig) -> Box<dyn Layer<Registry> + Send + Sync> {
    match config.log_format {
        LogFormat::Human => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(console_filter(&config.console_filter, config.console_spans))
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_filter(console_filter(&config.console_filter, config.console_spans))
            .boxed(),
    }
}

/// Keeps the exporters alive; [`Telemetry::shutdown`] flushes them.
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    logger: Option<SdkLoggerProvider>,
    /// Drives gRPC exports; `None` without gRPC.
    runtime: Option<Runtime>,
}

impl Telemetry {
    /// Installs the global subscriber, propagators and (when configured) exporters.
    pub fn init(config: &TelemetryConfig) -> Result<Telemetry, TelemetryError> {
        if let Some(e) = &config.error {
            return Err(e.clone());
        }
        opentelemetry::global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ]));
        let otlp = &config.otlp;
        let runtime = match otlp.uses_grpc() {
            true => Some(exporters::grpc_runtime()?),
            false => None,
        };
        let resource = match otlp.any() {
            true => resource(&|k| std::env::var(k).ok()),
            false => Resource::builder_empty().build(),
        };
        let rt = runtime.as_ref();
        let tracer = match &otlp.traces {
            Some(e) => Some(exporters::tracer(e, resource.clone(), rt)?),
            None => None,
        };
        let meter = match &otlp.metrics {
            Some(e) => Some(exporters::meter(e, resource.clone(), rt)?),
            None => None,
        };
        let logger = match &otlp.logs {
            Some(e) => Some(exporters::logger(e, resource, rt)?),
            None => None,
        };
        if let Some(t) = &tracer {
            opentelemetry::global::set_tracer_provider(t.clone());
        }
        if let Some(m) = &meter {
            opentelemetry::global::set_meter_provider(m.clone());
        }

        let mut layers: Layers = Vec::with_capacity(3);
        layers.push(console_layer(config));
        // What is exported does not depend on what the terminal shows.
        if let Some(t) = &tracer {
            layers.push(
                tracing_opentelemetry::layer()
                    .with_tracer(t.tracer("looopy"))
                    .with_filter(filter("info"))
                    .boxed(),
            );
        }
        if let Some(l) = &logger {
            let base = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
            layers.push(
                OpenTelemetryTracingBridge::new(l)
                    .with_filter(EnvFilter::builder().parse_lossy(format!("{base},{EXPORT_NOISE}")))
                    .boxed(),
            );
        }
        tracing_subscriber::registry()
            .with(layers)
            .try_init()
            .map_err(|_| TelemetryError::AlreadyInstalled)?;
        Ok(Telemetry {
            tracer,
            meter,
            logger,
            runtime,
        })
    }

    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.tracer.is_some()
    }

    /// Flushes and stops the exporters (data of running work may be lost).
    /// Blocks: call it outside async code (`spawn_blocking`).
    pub fn shutdown(mut self) {
        if let Some(t) = self.tracer.take()
            && let Err(e) = t.shutdown()
        {
            eprintln!("looopy: trace export shutdown: {e}");
        }
        if let Some(m) = self.meter.take()
            && let Err(e) = m.shutdown()
        {
            eprintln!("looopy: metric export shutdown: {e}");
        }
        if let Some(l) = self.logger.take()
            && let Err(e) = l.shutdown()
        {
            eprintln!("looopy: log export shutdown: {e}");
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which async code must not do.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    /// A terminal that keeps what is written to it.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    /// What the terminal layer prints for an event inside a span.
    fn printed(spans: bool) -> String {
        let out = Captured::default();
        let layer = tracing_subscriber::fmt::layer()
            .with_writer(out.clone())
            .with_ansi(false)
            .with_filter(console_filter("info", spans));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("a2a.turn", task = "t-7");
            let _entered = span.enter();
            tracing::warn!(why = "boom", "turn failed");
        });
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn terminal_lines_show_their_spans_only_when_asked() {
        let plain = printed(false);
        assert!(
            plain.contains("turn failed") && plain.contains("why=\"boom\""),
            "{plain}"
        );
        assert!(!plain.contains("a2a.turn"), "{plain}");
        let with_spans = printed(true);
        assert!(
            with_spans.contains("a2a.turn{task=\"t-7\"}"),
            "{with_spans}"
        );
        assert!(with_spans.contains("turn failed"), "{with_spans}");
    }

    /// The process's subscriber with the terminal layer alone (no exporter).
    fn terminal_only(spans: bool) -> impl tracing::Subscriber {
        let layers: Layers = vec![
            tracing_subscriber::fmt::layer()
                .with_writer(Captured::default())
                .with_filter(console_filter("info", spans))
                .boxed(),
        ];
        tracing_subscriber::registry().with(layers)
    }

    #[test]
    fn with_no_exporter_and_no_span_lines_span_callsites_are_turned_off_once() {
        use tracing::Subscriber as _;
        // The callsites' metadata, taken under a subscriber that wants everything.
        let span = tracing::subscriber::with_default(tracing_subscriber::registry(), || {
            tracing::info_span!("a2a.turn", task = "t-7")
                .metadata()
                .unwrap()
        });
        assert!(terminal_only(false).register_callsite(span).is_never());
        assert!(!terminal_only(true).register_callsite(span).is_never());
        // Events at the filter's level still reach the terminal.
        let plain = printed(false);
        assert!(plain.contains("turn failed"), "{plain}");
    }

    #[test]
    fn log_spans_is_read_from_the_environment() {
        let config = |v: Option<&str>| {
            let v = v.map(str::to_owned);
            TelemetryConfig::from_vars(&move |k| {
                (k == "LOOOPY_LOG_SPANS").then(|| v.clone()).flatten()
            })
        };
        assert!(!config(None).console_spans);
        assert!(config(Some("1")).console_spans);
        assert!(config(Some("true")).console_spans);
        assert!(!config(Some("0")).console_spans);
    }
}
