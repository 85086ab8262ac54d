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

use std::sync::Arc;
use std::time::Duration;

use looopy_core::{LlmError, LlmResponse, ToolFailure};
use opentelemetry::metrics::Histogram;
use opentelemetry::{KeyValue, Value};

/// The loop's instruments, with the attribute values every record shares
/// made once: a record then builds its attributes on the stack, without
/// allocating (most loops call one model of one provider).
#[derive(Clone)]
pub(crate) struct LoopMetrics {
    token_usage: Histogram<u64>,
    duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
    /// The model requests go to unless they name one, as an attribute value.
    model: Value,
    /// The provider's name, as an attribute value.
    provider: Value,
}

/// A name as an attribute value: the shared one when it is the same name
/// (cloning it shares its text).
fn value_of(name: &str, shared: &Value) -> Value {
    if shared.as_str() == name {
        shared.clone()
    } else {
        Value::from(name.to_owned())
    }
}

fn shared(name: &str) -> Value {
    Value::from(Arc::<str>::from(name))
}

impl LoopMetrics {
    /// The instruments of a loop calling `model` of `provider` by default.
    pub(crate) fn new(model: &str, provider: &str) -> Self {
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
            model: shared(model),
            provider: shared(provider),
        }
    }

    pub(crate) fn record_call(
        &self,
        model: &str,
        provider: &str,
        elapsed: Duration,
        result: &Result<LlmResponse, LlmError>,
    ) {
        // The last slot holds the error type, or the token type.
        let mut attrs = [
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.request.model", value_of(model, &self.model)),
            KeyValue::new("gen_ai.provider.name", value_of(provider, &self.provider)),
            KeyValue::new("error.type", ""),
        ];
        match result {
            Err(e) => {
                attrs[3] = KeyValue::new("error.type", e.kind());
                self.duration.record(elapsed.as_secs_f64(), &attrs);
            }
            Ok(response) => {
                self.duration.record(elapsed.as_secs_f64(), &attrs[..3]);
                if let Some(u) = response.usage {
                    attrs[3] = KeyValue::new("gen_ai.token.type", "input");
                    self.token_usage.record(u.input_tokens, &attrs);
                    attrs[3] = KeyValue::new("gen_ai.token.type", "output");
                    self.token_usage.record(u.output_tokens, &attrs);
                }
            }
        }
    }

    /// One tool call: how long it took and how it failed, if it did.
    pub(crate) fn record_tool(&self, tool: &str, elapsed: Duration, failure: Option<ToolFailure>) {
        let attrs = [
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.to_owned()),
            KeyValue::new("error.type", failure.map_or("", ToolFailure::as_str)),
        ];
        let n = if failure.is_some() { 3 } else { 2 };
        self.tool_duration
            .record(elapsed.as_secs_f64(), &attrs[..n]);
    }
}
