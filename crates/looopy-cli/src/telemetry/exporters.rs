//! Building the OTLP exporters. HTTP exports use the blocking client and
//! run on the SDK's own threads as they are; gRPC (tonic) needs a Tokio
//! reactor, which those threads lack, so each gRPC export is driven on a
//! small runtime of its own ([`OnRuntime`]).

use std::time::Duration;

use opentelemetry_otlp::{LogExporter, MetricExporter, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter as SdkLogExporter, SdkLoggerProvider};
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter as SdkSpanExporter};
use tokio::runtime::{Handle, Runtime};

use super::otlp::{OtlpEndpoint, OtlpProtocol, TelemetryError};

/// An exporter whose exports are driven on a Tokio runtime: the SDK calls
/// them from its own threads, where tonic would find no reactor.
#[derive(Debug)]
struct OnRuntime<E> {
    inner: E,
    runtime: Handle,
}

impl<E: SdkSpanExporter> SdkSpanExporter for OnRuntime<E> {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        std::future::ready(self.runtime.block_on(self.inner.export(batch)))
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }
    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: SdkLogExporter> SdkLogExporter for OnRuntime<E> {
    fn export(&self, batch: LogBatch<'_>) -> impl Future<Output = OTelSdkResult> + Send {
        std::future::ready(self.runtime.block_on(self.inner.export(batch)))
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }
    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for OnRuntime<E> {
    fn export(&self, metrics: &ResourceMetrics) -> impl Future<Output = OTelSdkResult> + Send {
        std::future::ready(self.runtime.block_on(self.inner.export(metrics)))
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }
    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// The runtime for gRPC exports: one worker thread, which drives tonic's
/// connections while the SDK's threads wait on their exports.
pub(super) fn grpc_runtime() -> Result<Runtime, TelemetryError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("looopy-otlp")
        .enable_all()
        .build()
        .map_err(|e| TelemetryError::Runtime(e.to_string()))
}

fn failed(
    signal: &'static str,
) -> impl Fn(opentelemetry_otlp::ExporterBuildError) -> TelemetryError {
    move |e| TelemetryError::Exporter {
        signal,
        message: e.to_string(),
    }
}

/// `runtime` when the endpoint is gRPC, else nothing is needed.
fn grpc_handle<'a>(
    endpoint: &OtlpEndpoint,
    runtime: Option<&'a Runtime>,
    signal: &'static str,
) -> Result<&'a Runtime, TelemetryError> {
    runtime.ok_or(TelemetryError::Exporter {
        signal,
        message: format!("no runtime for the gRPC endpoint {}", endpoint.url),
    })
}

/// The tracer provider exporting to `endpoint` through a batch processor.
pub(super) fn tracer(
    endpoint: &OtlpEndpoint,
    resource: Resource,
    runtime: Option<&Runtime>,
) -> Result<SdkTracerProvider, TelemetryError> {
    let builder = SdkTracerProvider::builder().with_resource(resource);
    let builder = match endpoint.protocol {
        OtlpProtocol::HttpProtobuf => builder.with_batch_exporter(
            SpanExporter::builder()
                .with_http()
                .with_endpoint(&endpoint.url)
                .build()
                .map_err(failed("traces"))?,
        ),
        OtlpProtocol::Grpc => {
            let rt = grpc_handle(endpoint, runtime, "traces")?;
            // tonic's lazy channel spawns its worker on the current runtime.
            let _entered = rt.enter();
            let inner = SpanExporter::builder()
                .with_tonic()
                .with_endpoint(&endpoint.url)
                .build()
                .map_err(failed("traces"))?;
            builder.with_batch_exporter(OnRuntime {
                inner,
                runtime: rt.handle().clone(),
            })
        }
    };
    Ok(builder.build())
}

/// The meter provider exporting to `endpoint` periodically.
pub(super) fn meter(
    endpoint: &OtlpEndpoint,
    resource: Resource,
    runtime: Option<&Runtime>,
) -> Result<SdkMeterProvider, TelemetryError> {
    let builder = SdkMeterProvider::builder().with_resource(resource);
    let builder = match endpoint.protocol {
        OtlpProtocol::HttpProtobuf => builder.with_reader(
            PeriodicReader::builder(
                MetricExporter::builder()
                    .with_http()
                    .with_endpoint(&endpoint.url)
                    .build()
                    .map_err(failed("metrics"))?,
            )
            .build(),
        ),
        OtlpProtocol::Grpc => {
            let rt = grpc_handle(endpoint, runtime, "metrics")?;
            let _entered = rt.enter();
            let inner = MetricExporter::builder()
                .with_tonic()
                .with_endpoint(&endpoint.url)
                .build()
                .map_err(failed("metrics"))?;
            builder.with_reader(
                PeriodicReader::builder(OnRuntime {
                    inner,
                    runtime: rt.handle().clone(),
                })
                .build(),
            )
        }
    };
    Ok(builder.build())
}

/// The logger provider exporting to `endpoint` through a batch processor.
pub(super) fn logger(
    endpoint: &OtlpEndpoint,
    resource: Resource,
    runtime: Option<&Runtime>,
) -> Result<SdkLoggerProvider, TelemetryError> {
    let builder = SdkLoggerProvider::builder().with_resource(resource);
    let builder = match endpoint.protocol {
        OtlpProtocol::HttpProtobuf => builder.with_batch_exporter(
            LogExporter::builder()
                .with_http()
                .with_endpoint(&endpoint.url)
                .build()
                .map_err(failed("logs"))?,
        ),
        OtlpProtocol::Grpc => {
            let rt = grpc_handle(endpoint, runtime, "logs")?;
            let _entered = rt.enter();
            let inner = LogExporter::builder()
                .with_tonic()
                .with_endpoint(&endpoint.url)
                .build()
                .map_err(failed("logs"))?;
            builder.with_batch_exporter(OnRuntime {
                inner,
                runtime: rt.handle().clone(),
            })
        }
    };
    Ok(builder.build())
}
