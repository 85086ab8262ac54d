//! Running a dataset: [`Evaluator`] runs each case in a fresh
//! conversation of an Agent from an [`AgentSource`], several at once, and
//! checks its expectations against what the turns did.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use looopy_agent::{Agent, AgentError, TurnOptions};
use looopy_core::client_tool::ClientTools;
use looopy_core::models::ModelRef;
use looopy_core::pricing::PriceTable;
use looopy_core::{
    History, LlmProvider, LlmRequest, Message, Part, TaskState, ToolCall, ToolProvider,
    TurnContext, Usage,
};
use regex::Regex;
use serde_json::{Value, json};

use crate::dataset::{Case, Dataset, args_match};
use crate::report::{
    CaseResult, Check, CheckKind, REPORT_FORMAT, RecordRef, RunReport, ToolCallSeen,
};
use crate::schema;

/// Where the Agent under test comes from: one per case, for the
/// conversation `context_id` (a fresh id for every case).
pub trait AgentSource: Send + Sync {
    /// The Agent of a new conversation.
    fn agent(&self, context_id: &str) -> Result<Agent, AgentError>;
}

impl<F> AgentSource for F
where
    F: Fn(&str) -> Result<Agent, AgentError> + Send + Sync,
{
    fn agent(&self, context_id: &str) -> Result<Agent, AgentError> {
        self(context_id)
    }
}

/// A case has ended: what the progress callback is told.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Cases ended so far, this one included.
    pub done: usize,
    /// Cases in the run.
    pub total: usize,
    /// The case's result.
    pub case: &'a CaseResult,
}

/// Runs datasets against an agent.
pub struct Evaluator {
    agents: Arc<dyn AgentSource>,
    concurrency: usize,
    judge: Option<Arc<dyn LlmProvider>>,
    prices: PriceTable,
    model: Option<ModelRef>,
    progress: Option<ProgressFn>,
}

/// The progress callback of [`Evaluator::on_progress`].
type ProgressFn = Arc<dyn Fn(Progress<'_>) + Send + Sync>;

/// What the judge is told to do.
const JUDGE_INSTRUCTIONS: &str = "You grade the answer of an AI assistant against a rubric. \
Read the conversation, the answer and the rubric. Reply with one JSON object and nothing else: \
{\"pass\": true or false, \"reason\": \"one sentence\"}.";

impl Evaluator {
    /// An evaluator of the agents `agents` makes, running four cases at a
    /// time, with the built-in price table and no judge.
    pub fn new(agents: impl AgentSource + 'static) -> Self {
        Evaluator {
            agents: Arc::new(agents),
            concurrency: 4,
            judge: None,
            prices: PriceTable::builtin(),
            model: None,
            progress: None,
        }
    }

    /// Runs at most `n` cases at once (at least one).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// The model that grades `judge` rubrics; a case with a rubric fails
    /// its check without one.
    pub fn judge(mut self, judge: Arc<dyn LlmProvider>) -> Self {
        self.judge = Some(judge);
        self
    }

    /// The model under test, for the cost of its tokens from `prices` and
    /// for the report.
    pub fn model(mut self, model: ModelRef, prices: PriceTable) -> Self {
        self.model = Some(model);
        self.prices = prices;
        self
    }

    /// Called as each case ends (in the order they end).
    pub fn on_progress(mut self, progress: impl Fn(Progress<'_>) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(progress));
        self
    }

    /// Runs every case of `dataset` and checks it. A case that cannot run
    /// (its Agent, a turn, the judge) fails with its error; the run goes on.
    pub async fn run(&self, dataset: &Dataset) -> RunReport {
        let started_at = chrono::Utc::now().to_rfc3339();
        let start = Instant::now();
        let total = dataset.cases.len();
        let mut done = 0;
        let mut results: Vec<(usize, CaseResult)> = Vec::with_capacity(total);
        let mut running = futures::stream::iter(dataset.cases.iter().enumerate())
            .map(|(i, case)| async move { (i, self.run_case(case).await) })
            .buffer_unordered(self.concurrency);
        while let Some((i, result)) = running.next().await {
            done += 1;
            if let Some(progress) = &self.progress {
                progress(Progress {
                    done,
                    total,
                    case: &result,
                });
            }
            results.push((i, result));
        }
        results.sort_by_key(|(i, _)| *i);
        RunReport {
            format: REPORT_FORMAT,
            dataset: dataset.name.clone(),
            model: self.model.as_ref().map(ToString::to_string),
            started_at,
            seconds: start.elapsed().as_secs_f64(),
            cases: results.into_iter().map(|(_, r)| r).collect(),
        }
    }

    async fn run_case(&self, case: &Case) -> CaseResult {
        let start = Instant::now();
        let context_id = format!("eval-{}", uuid::Uuid::new_v4());
        let mut turns = Turns {
            record: RecordRef {
                context_id: context_id.clone(),
                task_ids: Vec::new(),
            },
            ..Turns::default()
        };
        let ran = self.run_turns(case, &context_id, &mut turns).await;
        let seconds = start.elapsed().as_secs_f64();
        let cost = self
            .model
            .as_ref()
            .and_then(|m| self.prices.cost(m, &turns.usage))
            .map(|c| c.total());
        let tool_calls: Vec<ToolCallSeen> = turns
            .calls
            .iter()
            .map(|call| ToolCallSeen {
                name: call.name.clone(),
                arguments: serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone())),
            })
            .collect();
        let mut result = CaseResult {
            name: case.name.clone(),
            passed: false,
            checks: Vec::new(),
            error: ran.err(),
            answer: turns.answer,
            state: turns.state.map(|s| s.as_str().to_owned()),
            iterations: turns.iterations,
            usage: turns.usage,
            cost,
            seconds,
            tool_calls,
            record: turns.record,
        };
        result.checks = self.check(case, &result).await;
        result.passed = result.error.is_none() && result.checks.iter().all(|c| c.passed);
        result
    }

    /// Runs the case's turns, answering the client tools it gives results
    /// for; what they did goes into `turns`, even when one fails.
    async fn run_turns(
        &self,
        case: &Case,
        context_id: &str,
        turns: &mut Turns,
    ) -> Result<(), String> {
        let agent = self
            .agents
            .agent(context_id)
            .map_err(|e| format!("the agent could not be built: {e}"))?;
        let tools: Option<Arc<dyn ToolProvider>> = (!case.tools.is_empty())
            .then(|| Arc::new(ClientTools::new(case.tools.clone())) as Arc<dyn ToolProvider>);
        let seen_before = agent.messages().await.map(|m| m.len()).unwrap_or(0);
        let outcome = async {
            for text in case.messages() {
                let mut next = Message::user(text);
                loop {
                    let options = TurnOptions {
                        tools: tools.clone(),
                        ..TurnOptions::default()
                    };
                    let turn = agent
                        .execute_turn_with(Some(next), options)
                        .await
                        .map_err(|e| format!("the turn could not start: {e}"))?;
                    turns.record.task_ids.push(turn.task_id().to_owned());
                    let finished = turn
                        .finish()
                        .await
                        .ok_or_else(|| "the turn ended without a final status".to_owned())?;
                    turns.usage += finished.usage;
                    turns.iterations += finished.iterations;
                    turns.state = Some(finished.state);
                    turns.answer = finished
                        .message
                        .as_ref()
                        .map(|m| m.text())
                        .unwrap_or_default();
                    match finished.state {
                        TaskState::Completed => break,
                        TaskState::InputRequired => {
                            match client_results(case, &finished.pending_tool_calls) {
                                Some(results) => next = results,
                                None => break,
                            }
                        }
                        state => {
                            return Err(format!(
                                "the turn ended {}: {}",
                                state.as_str(),
                                turns.answer
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
        .await;
        // The tool calls, from the conversation the Agent stored.
        if let Ok(messages) = agent.messages().await {
            turns.calls = messages
                .iter()
                .skip(seen_before)
                .flat_map(|m| m.tool_calls.iter().cloned())
                .collect();
        }
        outcome
    }

    async fn check(&self, case: &Case, result: &CaseResult) -> Vec<Check> {
        let expect = &case.expect;
        let answer = &result.answer;
        let mut checks = Vec::new();
        let mut add = |kind: CheckKind, passed: bool, detail: String| {
            checks.push(Check {
                kind,
                passed,
                detail,
            });
        };
        for text in &expect.contains {
            add(
                CheckKind::Contains,
                answer.contains(text.as_str()),
                format!("the answer contains {text:?}"),
            );
        }
        for text in &expect.not_contains {
            add(
                CheckKind::NotContains,
                !answer.contains(text.as_str()),
                format!("the answer does not contain {text:?}"),
            );
        }
        if let Some(pattern) = &expect.regex {
            // Compiled when the dataset was read.
            let matched = Regex::new(pattern).is_ok_and(|re| re.is_match(answer));
            add(
                CheckKind::Regex,
                matched,
                format!("the answer matches /{pattern}/"),
            );
        }
        if let Some(schema) = &expect.json_schema {
            let (passed, detail) = match schema::answer_json(answer) {
                Err(e) => (false, format!("the answer is not JSON: {e}")),
                Ok(value) => {
                    let problems = schema::validate(schema, &value);
                    if problems.is_empty() {
                        (true, "the answer is valid against the schema".into())
                    } else {
                        (
                            false,
                            format!("the answer is not valid: {}", problems.join("; ")),
                        )
                    }
                }
            };
            add(CheckKind::JsonSchema, passed, detail);
        }
        for expected in &expect.tool_calls {
            let matching = result
                .tool_calls
                .iter()
                .filter(|c| c.name == expected.name)
                .filter(|c| {
                    expected
                        .args
                        .as_ref()
                        .is_none_or(|p| args_match(p, &c.arguments))
                })
                .count();
            let with = expected
                .args
                .as_ref()
                .map_or(String::new(), |p| format!(" with arguments matching {p}"));
            if expected.called {
                add(
                    CheckKind::ToolCalled,
                    matching > 0,
                    format!(
                        "{} was called{with} ({matching} matching calls)",
                        expected.name
                    ),
                );
            } else {
                add(
                    CheckKind::ToolNotCalled,
                    matching == 0,
                    format!(
                        "{} was not called{with} ({matching} matching calls)",
                        expected.name
                    ),
                );
            }
        }
        if let Some(max) = expect.max_iterations {
            add(
                CheckKind::MaxIterations,
                result.iterations <= max,
                format!("{} iterations, at most {max}", result.iterations),
            );
        }
        if let Some(max) = expect.max_tokens {
            add(
                CheckKind::MaxTokens,
                result.usage.total_tokens <= max,
                format!("{} tokens, at most {max}", result.usage.total_tokens),
            );
        }
        if let Some(max) = expect.max_cost {
            let (passed, detail) = match (result.cost, &self.model) {
                (Some(cost), _) => (cost <= max, format!("cost ${cost:.6}, at most ${max}")),
                (None, Some(model)) => (
                    false,
                    format!("the price of {model} is unknown: add a [pricing.\"{model}\"] table"),
                ),
                (None, None) => (
                    false,
                    "the model under test is unknown, so is its cost".into(),
                ),
            };
            add(CheckKind::MaxCost, passed, detail);
        }
        if let Some(max) = expect.max_seconds {
            add(
                CheckKind::MaxSeconds,
                result.seconds <= max,
                format!("{:.2} s, at most {max} s", result.seconds),
            );
        }
        if let Some(rubric) = &expect.judge {
            let (passed, detail) = match &self.judge {
                None => (false, "no judge model is configured for the rubric".into()),
                Some(judge) => match grade(judge.as_ref(), case, answer, rubric).await {
                    Ok((passed, reason)) => (passed, format!("{rubric}: {reason}")),
                    Err(e) => (false, format!("the judge could not grade: {e}")),
                },
            };
            add(CheckKind::Judge, passed, detail);
        }
        checks
    }
}

/// What a case's turns did.
#[derive(Default)]
struct Turns {
    answer: String,
    state: Option<TaskState>,
    iterations: u32,
    usage: Usage,
    calls: Vec<ToolCall>,
    record: RecordRef,
}

/// The client's message answering `pending` from the case's results;
/// `None` when a call has no result in the case.
fn client_results(case: &Case, pending: &[ToolCall]) -> Option<Message> {
    if pending.is_empty() {
        return None;
    }
    let parts = pending
        .iter()
        .map(|call| {
            case.tool_results
                .get(&call.name)
                .map(|result| Part::data(json!({"toolCallId": call.id, "result": result})))
        })
        .collect::<Option<Vec<Part>>>()?;
    let mut message = Message::user("");
    message.parts = parts;
    Some(message)
}

/// Asks the judge for its verdict on `answer` against `rubric`.
async fn grade(
    judge: &dyn LlmProvider,
    case: &Case,
    answer: &str,
    rubric: &str,
) -> Result<(bool, String), String> {
    let conversation = case
        .messages()
        .iter()
        .map(|m| format!("User: {m}"))
        .collect::<Vec<_>>()
        .join("\n");
    let prompt = format!("Conversation:\n{conversation}\n\nAnswer:\n{answer}\n\nRubric: {rubric}");
    let request = LlmRequest {
        system_prompt: Some(JUDGE_INSTRUCTIONS.into()),
        messages: History::from(vec![Message::user(prompt)]),
        ..LlmRequest::default()
    };
    let cx = TurnContext::new(uuid::Uuid::new_v4().to_string(), "eval-judge");
    let response = judge.call(request, &cx).await.map_err(|e| e.to_string())?;
    let text = response.message.text();
    verdict(&text).ok_or_else(|| format!("its answer is not a verdict: {text:?}"))
}

/// Reads `{"pass": bool, "reason": "..."}` from the judge's answer (a
/// fenced block or text around the object allowed).
fn verdict(text: &str) -> Option<(bool, String)> {
    let from = text.find('{')?;
    let to = text.rfind('}')?;
    let value: Value = serde_json::from_str(text.get(from..=to)?).ok()?;
    let pass = value.get("pass")?.as_bool()?;
    let reason = value
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Some((pass, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_read_from_around_their_object() {
        assert_eq!(
            verdict("```json\n{\"pass\": true, \"reason\": \"ok\"}\n```"),
            Some((true, "ok".into()))
        );
        assert_eq!(verdict("{\"pass\": false}"), Some((false, String::new())));
        assert_eq!(verdict("PASS"), None);
        assert_eq!(verdict("{\"pass\": \"yes\"}"), None);
    }
}
