//! A record as a reader sees it: the [`ExecutionRecord`] with the cost
//! estimates of its model calls beside it ([`RecordView`]), derived from a
//! [`PriceTable`] when the record is read (the record itself stores usage,
//! never cost).

use serde::{Deserialize, Serialize};

use super::{ExecutionRecord, StepKind};
use crate::models::ModelRef;
use crate::pricing::{Cost, PriceTable};

/// An execution record and what its model calls cost.
///
/// In JSON the record's fields are at the top level, as they are in an
/// [`ExecutionRecord`], and `costs` sits beside them: a reader that only
/// knows records reads a view as a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordView {
    /// The record.
    #[serde(flatten)]
    pub record: ExecutionRecord,
    /// The cost estimates of its steps.
    pub costs: RecordCosts,
}

impl RecordView {
    /// `record` with the costs of its model calls at `prices`.
    pub fn priced(record: ExecutionRecord, prices: &PriceTable) -> Self {
        let costs = RecordCosts::of(&record, prices);
        RecordView { record, costs }
    }
}

/// Cost estimates in US dollars, from the vendors' (or the configured)
/// prices and the tokens each model call reported. A model whose price is
/// unknown has no cost, never a guessed one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordCosts {
    /// One entry per step of the record, in the same order: the step's
    /// cost for a model call that reported usage of a priced model,
    /// `None` for any other step.
    pub steps: Vec<Option<Cost>>,
    /// The turn's cost: the sum over its model calls, when every call that
    /// reported usage has a price (and there was at least one); `None`
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<Cost>,
    /// The models (`provider:model`) that reported usage but have no
    /// price, in the order they first appear.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
}

impl RecordCosts {
    /// The costs of `record`'s model calls at `prices`.
    pub fn of(record: &ExecutionRecord, prices: &PriceTable) -> Self {
        let mut costs = RecordCosts::default();
        let mut total = Cost::default();
        let mut priced_any = false;
        for step in &record.steps {
            let cost = match &step.kind {
                StepKind::ModelCall(call) => match call.response.as_ref().and_then(|r| r.usage) {
                    Some(usage) => {
                        let name = format!("{}:{}", call.provider, call.model);
                        let cost = ModelRef::parse(&name)
                            .ok()
                            .flatten()
                            .and_then(|model| prices.cost(&model, &usage));
                        if cost.is_none() && !costs.unpriced.contains(&name) {
                            costs.unpriced.push(name);
                        }
                        cost
                    }
                    None => None,
                },
                _ => None,
            };
            if let Some(c) = cost {
                total += c;
                priced_any = true;
            }
            costs.steps.push(cost);
        }
        costs.total = (priced_any && costs.unpriced.is_empty()).then_some(total);
        costs
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use chrono::Utc;
    use serde_json::json;

    use super::*;
    use crate::Usage;
    use crate::pricing::Price;
    use crate::record::{
        ModelCallStep, Payload, RecordStep, RecordedRequest, RecordedResponse, ToolCallStep,
    };

    fn model_call(provider: &str, model: &str, input: u64, output: u64) -> RecordStep {
        RecordStep {
            started_at: Utc::now(),
            duration: Duration::from_millis(5),
            kind: StepKind::ModelCall(Box::new(ModelCallStep {
                provider: provider.into(),
                model: model.into(),
                streamed: false,
                request: RecordedRequest {
                    system_prompt: None,
                    messages: Payload::Inline { value: json!([]) },
                    tools: Vec::new(),
                    settings: Default::default(),
                },
                response: Some(RecordedResponse {
                    text: Payload::Inline { value: json!("") },
                    tool_calls: Vec::new(),
                    reasoning: None,
                    finish_reason: "stop".into(),
                    usage: Some(Usage {
                        input_tokens: input,
                        output_tokens: output,
                        total_tokens: input + output,
                        ..Usage::default()
                    }),
                }),
                error: None,
            })),
        }
    }

    fn tool_call() -> RecordStep {
        RecordStep {
            started_at: Utc::now(),
            duration: Duration::from_millis(1),
            kind: StepKind::ToolCall(ToolCallStep {
                call_id: "c1".into(),
                name: "sleep".into(),
                arguments: Payload::Inline { value: json!({}) },
                result: Payload::Inline { value: json!("ok") },
                failure: None,
            }),
        }
    }

    fn record(steps: Vec<RecordStep>) -> ExecutionRecord {
        let mut r = ExecutionRecord::new("t", "c", "a");
        r.steps = steps;
        r
    }

    #[test]
    fn a_priced_model_gets_a_cost_and_the_turn_a_total() {
        // gpt-4.1 at $2 in, $8 out per million; a dated snapshot costs the same.
        let r = record(vec![
            model_call("openai", "gpt-4.1-2025-04-14", 1_000_000, 0),
            tool_call(),
            model_call("openai", "gpt-4.1", 0, 500_000),
        ]);
        let costs = RecordCosts::of(&r, &PriceTable::builtin());
        assert_eq!(costs.steps.len(), 3);
        assert_eq!(costs.steps[0].unwrap().total(), 2.0);
        assert_eq!(costs.steps[1], None, "a tool call costs nothing here");
        assert_eq!(costs.steps[2].unwrap().output, 4.0);
        assert_eq!(costs.total.unwrap().total(), 6.0);
        assert!(costs.unpriced.is_empty());
    }

    #[test]
    fn an_unknown_model_has_no_cost_and_the_turn_no_total() {
        let r = record(vec![
            model_call("openai", "gpt-4.1", 1_000_000, 0),
            model_call("openai", "my-finetune", 1_000, 1_000),
            model_call("unknown", "scripted", 10, 10),
        ]);
        let costs = RecordCosts::of(&r, &PriceTable::builtin());
        assert!(costs.steps[0].is_some());
        assert_eq!(costs.steps[1], None);
        assert_eq!(costs.steps[2], None);
        assert_eq!(costs.total, None, "a partial sum is no turn cost");
        assert_eq!(costs.unpriced, ["openai:my-finetune", "unknown:scripted"]);

        // The configured price names the model.
        let prices = PriceTable::builtin()
            .with_price("openai:my-finetune".parse().unwrap(), Price::new(1.0, 1.0));
        let costs = RecordCosts::of(&r, &prices);
        assert_eq!(costs.steps[1].unwrap().total(), 0.002);
        assert_eq!(costs.unpriced, ["unknown:scripted"]);
    }

    #[test]
    fn the_view_reads_as_a_record_with_costs_beside_it() {
        let r = record(vec![model_call(
            "anthropic",
            "claude-haiku-4-5",
            1_000_000,
            0,
        )]);
        let view = RecordView::priced(r.clone(), &PriceTable::builtin());
        let v = serde_json::to_value(&view).unwrap();
        assert_eq!(v["taskId"], "t");
        assert_eq!(v["steps"][0]["type"], "model-call");
        assert_eq!(v["costs"]["steps"][0]["input"], 1.0);
        assert_eq!(v["costs"]["total"]["output"], 0.0);
        let as_record: ExecutionRecord = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(as_record, r);
        let back: RecordView = serde_json::from_value(v).unwrap();
        assert_eq!(back, view);
    }
}
