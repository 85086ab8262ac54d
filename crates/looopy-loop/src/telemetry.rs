//! OpenTelemetry metrics: for model calls those of the GenAI semantic
//! conventions, `gen_ai.client.token.usage` and
//! `gen_ai.client.operation.duration`; for tool calls, which the conventions
//! give no metric yet, `looopy.tool.duration` with the convention's
//! attribute names (`gen_ai.tool.name`, `error.type` set to the typed
//! failure: `timeout`, `denied`, `cancelled`...).
//!
//! Instruments come from the global meter provider when the loop is built:
//! a binary that installs its provider first (as `looopy serve` does) gets
//! real metrics; otherwise they are no-ops.

use std::time::Duration;

use looopy_core::{LlmError, LlmResponse, ToolFailure};
use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;

/// The loop's instruments.
#[derive(Clone)]
pub(crate) struct LoopMetrics {
    token_usage: Histogram<u64>,
    duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
}

impl LoopMetrics {
    pub(crate) fn new() -> Self {
        let meter = opentelemetry::global::meter("looopy");
        LoopMetrics {
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens used per model call")
                .build(),
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("Duration of model calls")
                .build(),
            tool_duration: meter
                .f64_histogram("looopy.tool.duration")
                .with_unit("s")
                .with_description("Duration of tool calls, by tool and failure")
                .build(),
        }
    }

    pub(crate) fn record_call(
        &self,
        model: &str,
        provider: &str,
        elapsed: Duration,
        result: &Result<LlmResponse, LlmError>,
    ) {
        let mut attrs = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.request.model", model.to_owned()),
            KeyValue::new("gen_ai.provider.name", provider.to_owned()),
        ];
        if let Err(e) = result {
            attrs.push(KeyValue::new("error.type", e.kind()));
        }
        self.duration.record(elapsed.as_secs_f64(), &attrs);
        if let Ok(LlmResponse { usage: Some(u), .. }) = result {
            let mut input = attrs.clone();
            input.push(KeyValue::new("gen_ai.token.type", "input"));
            self.token_usage.record(u.input_tokens, &input);
            attrs.push(KeyValue::new("gen_ai.token.type", "output"));
            self.token_usage.record(u.output_tokens, &attrs);
        }
    }

    /// One tool call: how long it took and how it failed, if it did.
    pub(crate) fn record_tool(&self, tool: &str, elapsed: Duration, failure: Option<ToolFailure>) {
        let mut attrs = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.to_owned()),
        ];
        if let Some(kind) = failure {
            attrs.push(KeyValue::new("error.type", kind.as_str()));
        }
        self.tool_duration.record(elapsed.as_secs_f64(), &attrs);
    }
}
