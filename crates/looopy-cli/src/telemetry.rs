//! Logging and OpenTelemetry export for the binary. Libraries only emit
//! `tracing` spans; this is the one place that installs a subscriber.
//!
//! - Logs: `tracing-subscriber` to stderr, filtered by `RUST_LOG` (default
//!   `info`), human-readable or JSON (`LOOOPY_LOG_FORMAT=json`).
//! - Traces and metrics: OTLP over HTTP/protobuf when
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`OTEL_SERVICE_NAME` and
//!   `OTEL_TRACES_SAMPLER` / `_ARG` are read by the SDK). Spans go through a
//!   batch processor on its own thread: a turn never waits for an export, and
//!   a collector that is down costs the dropped spans only.
//! - W3C trace context is the global propagator, so incoming `traceparent`
//!   headers are honoured and outgoing requests carry one.

use anyhow::{Context, Result};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Human,
    /// One JSON object per event.
    Json,
}

/// What to set up. [`TelemetryConfig::from_env`] reads the standard variables.
#[derive(Debug, Clone, Default)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP base endpoint (`http://collector:4318`); `None` disables export.
    pub otlp_endpoint: Option<String>,
    /// Log format.
    pub log_format: LogFormat,
    /// Filter directives when `RUST_LOG` is unset.
    pub default_filter: String,
}

impl TelemetryConfig {
    /// Reads `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SDK_DISABLED` and `LOOOPY_LOG_FORMAT`.
    pub fn from_env() -> Self {
        let disabled =
            std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
        let otlp_endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
            .ok()
            .filter(|e| !e.is_empty() && !disabled);
        let log_format = match std::env::var("LOOOPY_LOG_FORMAT").as_deref() {
            Ok("json") => LogFormat::Json,
            _ => LogFormat::Human,
        };
        TelemetryConfig {
            otlp_endpoint,
            log_format,
            default_filter: "info".into(),
        }
    }
}

/// Keeps the exporters alive; [`Telemetry::shutdown`] flushes them.
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

impl Telemetry {
    /// Installs the global subscriber, propagator and (when configured) exporters.
    pub fn init(config: &TelemetryConfig) -> Result<Telemetry> {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let resource = Resource::builder().build();
        let (tracer, meter) = match &config.otlp_endpoint {
            Some(endpoint) => {
                let base = endpoint.trim_end_matches('/');
                let spans = SpanExporter::builder()
                    .with_http()
                    .with_endpoint(format!("{base}/v1/traces"))
                    .build()
                    .context("building the OTLP span exporter")?;
                let tracer = SdkTracerProvider::builder()
                    .with_batch_exporter(spans)
                    .with_resource(resource.clone())
                    .build();
                let metrics = MetricExporter::builder()
                    .with_http()
                    .with_endpoint(format!("{base}/v1/metrics"))
                    .build()
                    .context("building the OTLP metric exporter")?;
                let meter = SdkMeterProvider::builder()
                    .with_reader(PeriodicReader::builder(metrics).build())
                    .with_resource(resource)
                    .build();
                opentelemetry::global::set_tracer_provider(tracer.clone());
                opentelemetry::global::set_meter_provider(meter.clone());
                (Some(tracer), Some(meter))
            }
            None => (None, None),
        };
        let filter = EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new(&config.default_filter));
        let fmt = match config.log_format {
            LogFormat::Human => tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .boxed(),
            LogFormat::Json => tracing_subscriber::fmt::layer()
                .json()
                .with_writer(std::io::stderr)
                .boxed(),
        };
        let otel = tracer
            .as_ref()
            .map(|t| tracing_opentelemetry::layer().with_tracer(t.tracer("looopy")));
        tracing_subscriber::registry()
            .with(filter)
            .with(fmt)
            .with(otel)
            .try_init()
            .context("a tracing subscriber is already installed")?;
        Ok(Telemetry { tracer, meter })
    }

    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.tracer.is_some()
    }

    /// Flushes and stops the exporters (spans of running work may be lost).
    pub fn shutdown(self) {
        if let Some(t) = self.tracer
            && let Err(e) = t.shutdown()
        {
            eprintln!("looopy: trace export shutdown: {e}");
        }
        if let Some(m) = self.meter
            && let Err(e) = m.shutdown()
        {
            eprintln!("looopy: metric export shutdown: {e}");
        }
    }
}
