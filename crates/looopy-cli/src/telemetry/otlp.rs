//! Where and how OTLP export goes, from the standard `OTEL_*` variables:
//! which signals are exported, to which endpoint, over which protocol.

/// Why the OTLP settings could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// A protocol variable names a protocol the binary does not speak.
    #[error("{variable}={value}: expected `http/protobuf` or `grpc`")]
    UnknownProtocol {
        /// The variable (`OTEL_EXPORTER_OTLP_PROTOCOL` or a per-signal one).
        variable: String,
        /// What it said.
        value: String,
    },
    /// An exporter could not be built (a malformed endpoint, say).
    #[error("OTLP {signal} exporter: {message}")]
    Exporter {
        /// `traces`, `metrics` or `logs`.
        signal: &'static str,
        /// What the exporter said.
        message: String,
    },
    /// The runtime that carries gRPC exports could not start.
    #[error("starting the OTLP export runtime: {0}")]
    Runtime(String),
    /// Another subscriber was installed first.
    #[error("a tracing subscriber is already installed")]
    AlreadyInstalled,
}

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OtlpProtocol {
    /// Protobuf over HTTP (`http/protobuf`, port 4318): the default.
    #[default]
    HttpProtobuf,
    /// gRPC (`grpc`, port 4317).
    Grpc,
}

impl OtlpProtocol {
    fn parse(variable: &str, value: &str) -> Result<Self, TelemetryError> {
        match value.trim() {
            "http/protobuf" => Ok(OtlpProtocol::HttpProtobuf),
            "grpc" => Ok(OtlpProtocol::Grpc),
            other => Err(TelemetryError::UnknownProtocol {
                variable: variable.into(),
                value: other.into(),
            }),
        }
    }
}

/// Where one signal goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpEndpoint {
    /// The full URL the exporter posts to (`http://collector:4318/v1/traces`
    /// for HTTP, `http://collector:4317` for gRPC).
    pub url: String,
    /// The transport.
    pub protocol: OtlpProtocol,
}

/// The three signals' endpoints; a signal without one is not exported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OtlpConfig {
    /// Spans.
    pub traces: Option<OtlpEndpoint>,
    /// Metrics.
    pub metrics: Option<OtlpEndpoint>,
    /// Log events.
    pub logs: Option<OtlpEndpoint>,
}

/// The signals: name in variables, name in messages, HTTP path.
const SIGNALS: [(&str, &str); 3] = [
    ("TRACES", "traces"),
    ("METRICS", "metrics"),
    ("LOGS", "logs"),
];

fn set(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

impl OtlpConfig {
    /// All three signals over HTTP/protobuf to one collector
    /// (`http://collector:4318`: `/v1/traces`, `/v1/metrics`, `/v1/logs`).
    pub fn http(base: &str) -> Self {
        let base = base.trim_end_matches('/');
        let at = |path: &str| {
            Some(OtlpEndpoint {
                url: format!("{base}/v1/{path}"),
                protocol: OtlpProtocol::HttpProtobuf,
            })
        };
        OtlpConfig {
            traces: at("traces"),
            metrics: at("metrics"),
            logs: at("logs"),
        }
    }

    /// Reads the standard variables. For each signal, its own endpoint
    /// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, used as given) wins over the
    /// general one (`OTEL_EXPORTER_OTLP_ENDPOINT`, to which HTTP adds
    /// `/v1/<signal>`); a signal with neither is not exported, nor one whose
    /// `OTEL_<SIGNAL>_EXPORTER` is `none`. The protocol likewise:
    /// `OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`, then
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, then `http/protobuf`.
    /// `OTEL_SDK_DISABLED=true` turns everything off.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, TelemetryError> {
        if set(env, "OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(OtlpConfig::default());
        }
        let general = set(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
        let general_protocol = match set(env, "OTEL_EXPORTER_OTLP_PROTOCOL") {
            Some(p) => OtlpProtocol::parse("OTEL_EXPORTER_OTLP_PROTOCOL", &p)?,
            None => OtlpProtocol::default(),
        };
        let mut endpoints = Vec::with_capacity(3);
        for (upper, lower) in SIGNALS {
            let exporter = set(env, &format!("OTEL_{upper}_EXPORTER"));
            if exporter.is_some_and(|e| e.eq_ignore_ascii_case("none")) {
                endpoints.push(None);
                continue;
            }
            let protocol_var = format!("OTEL_EXPORTER_OTLP_{upper}_PROTOCOL");
            let protocol = match set(env, &protocol_var) {
                Some(p) => OtlpProtocol::parse(&protocol_var, &p)?,
                None => general_protocol,
            };
            let url = match (
                set(env, &format!("OTEL_EXPORTER_OTLP_{upper}_ENDPOINT")),
                &general,
            ) {
                (Some(own), _) => Some(own),
                (None, Some(base)) => Some(match protocol {
                    OtlpProtocol::HttpProtobuf => {
                        format!("{}/v1/{lower}", base.trim_end_matches('/'))
                    }
                    OtlpProtocol::Grpc => base.clone(),
                }),
                (None, None) => None,
            };
            endpoints.push(url.map(|url| OtlpEndpoint { url, protocol }));
        }
        let mut it = endpoints.into_iter();
        Ok(OtlpConfig {
            traces: it.next().flatten(),
            metrics: it.next().flatten(),
            logs: it.next().flatten(),
        })
    }

    /// Whether anything is exported.
    pub fn any(&self) -> bool {
        self.traces.is_some() || self.metrics.is_some() || self.logs.is_some()
    }

    /// Whether some signal goes over gRPC (which needs a Tokio runtime).
    pub(crate) fn uses_grpc(&self) -> bool {
        [&self.traces, &self.metrics, &self.logs]
            .into_iter()
            .flatten()
            .any(|e| e.protocol == OtlpProtocol::Grpc)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<OtlpConfig, TelemetryError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        OtlpConfig::from_env(&|k| map.get(k).cloned())
    }

    fn url(e: &Option<OtlpEndpoint>) -> Option<&str> {
        e.as_ref().map(|e| e.url.as_str())
    }

    #[test]
    fn per_signal_endpoints_win_over_the_general_one() {
        let c = from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://all:4318/"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:9/custom",
            ),
        ])
        .unwrap();
        assert_eq!(url(&c.traces), Some("http://traces:9/custom"));
        assert_eq!(url(&c.metrics), Some("http://all:4318/v1/metrics"));
        assert_eq!(url(&c.logs), Some("http://all:4318/v1/logs"));
    }

    #[test]
    fn a_per_signal_endpoint_alone_exports_that_signal_only() {
        let c = from(&[("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://l/v1/logs")]).unwrap();
        assert!(c.any());
        assert_eq!(url(&c.logs), Some("http://l/v1/logs"));
        assert_eq!((c.traces, c.metrics), (None, None));
        assert!(!from(&[]).unwrap().any());
    }

    #[test]
    fn grpc_takes_the_general_endpoint_as_it_is_and_protocols_are_checked() {
        let c = from(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"),
            ("OTEL_LOGS_EXPORTER", "none"),
        ])
        .unwrap();
        let traces = c.traces.unwrap();
        assert_eq!(
            (traces.url.as_str(), traces.protocol),
            ("http://c:4317", OtlpProtocol::Grpc)
        );
        assert_eq!(c.metrics.unwrap().url, "http://c:4317/v1/metrics");
        assert_eq!(c.logs, None);
        let err = from(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/json: expected `http/protobuf` or `grpc`"
        );
        let off = from(&[
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ])
        .unwrap();
        assert!(!off.any());
    }
}
