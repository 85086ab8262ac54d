//! `looopy_eval::replay`: a recorded tool-using turn replayed with the same
//! model, a model answering differently at one step, a model calling the
//! tool with other arguments, and with the tools run live; the replay
//! leaves the recorded conversation's stores as they were.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use looopy_agent::{Agent, AgentBuilder, TurnOptions};
use looopy_core::record::{ExecutionRecord, Payload};
use looopy_core::store::Stores;
use looopy_core::{LlmResponse, Message, Role, TaskState, ToolCall, TurnContext};
use looopy_eval::replay::{ReplayError, ReplayOptions, ReplayReport, ResultSource, replay};
use looopy_testkit::ScriptedLlm;
use looopy_tools::{LocalTools, ToolFnError};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CityArgs {
    /// The city.
    city: String,
}

/// A `weather` tool that counts its runs.
fn weather(runs: &Arc<AtomicUsize>) -> LocalTools {
    let runs = runs.clone();
    LocalTools::new().tool(
        "weather",
        "The weather in a city",
        move |args: CityArgs, _cx: TurnContext| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolFnError>(format!("18 degrees in {}", args.city))
            }
        },
    )
}

/// A model that greets, then asks for the weather in `city` and answers
/// `answer`.
fn model(city: &str, answer: &str) -> ScriptedLlm {
    ScriptedLlm::new()
        .respond(LlmResponse::text("Hello, Ada."))
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new(
                "call-1",
                "weather",
                json!({ "city": city }).to_string(),
            )],
        ))
        .respond(LlmResponse::text(answer))
}

fn builder(
    llm: &ScriptedLlm,
    runs: &Arc<AtomicUsize>,
    stores: &Stores,
    prompt: &str,
) -> AgentBuilder {
    Agent::builder("ctx-recorded")
        .llm(llm.clone())
        .tools(weather(runs))
        .stores(stores)
        .system_prompt(prompt.to_owned())
}

/// A conversation of two turns (a greeting, then a question answered with
/// the tool); the record of the second.
async fn recorded(stores: &Stores, runs: &Arc<AtomicUsize>) -> ExecutionRecord {
    let llm = model("Paris", "It is 18 degrees in Paris.");
    let agent = builder(&llm, runs, stores, "You are v1.").build().unwrap();
    let mut task = String::new();
    for text in ["I am Ada", "Weather in Paris?"] {
        let turn = agent
            .execute_turn_with(Some(Message::user(text)), TurnOptions::default())
            .await
            .unwrap();
        task = turn.task_id().to_owned();
        let finished = turn.finish().await.unwrap();
        assert_eq!(finished.state, TaskState::Completed);
    }
    agent.record(&task).await.unwrap().unwrap()
}

/// The replayed model's replies: a greeting is not asked for again, the
/// replay starts at the question.
fn replay_model(city: &str, answer: &str) -> ScriptedLlm {
    ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new(
                "call-9",
                "weather",
                json!({ "city": city }).to_string(),
            )],
        ))
        .respond(LlmResponse::text(answer))
}

/// A recorded turn, in the stores of its conversation.
struct Recorded {
    stores: Stores,
    runs: Arc<AtomicUsize>,
    record: ExecutionRecord,
}

impl Recorded {
    async fn new() -> Self {
        let stores = looopy_stores_memory::stores();
        let runs = Arc::new(AtomicUsize::new(0));
        let record = recorded(&stores, &runs).await;
        Recorded {
            stores,
            runs,
            record,
        }
    }

    /// Replays the turn with a model calling the tool on `city` and
    /// answering `answer`, under a new system prompt (the builder is given
    /// the recorded conversation's stores).
    async fn replay(
        &self,
        city: &str,
        answer: &str,
        live_tools: bool,
    ) -> (ScriptedLlm, ReplayReport) {
        let llm = replay_model(city, answer);
        let options = ReplayOptions {
            live_tools,
            ..ReplayOptions::default()
        };
        let report = replay(
            &self.record,
            builder(&llm, &self.runs, &self.stores, "You are v2."),
            &options,
        )
        .await
        .unwrap();
        (llm, report)
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

/// The text of the tool result the model was sent in its request `n`.
fn tool_result_sent(llm: &ScriptedLlm, n: usize) -> String {
    llm.requests()[n]
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .text()
}

#[tokio::test]
async fn the_same_model_replays_the_turn_from_the_record_without_running_the_tool() {
    let turn = Recorded::new().await;
    assert_eq!(turn.runs(), 1);
    let kept = turn.stores.messages.count("ctx-recorded").await.unwrap();

    let (llm, report) = turn
        .replay("Paris", "It is 18 degrees in Paris.", false)
        .await;
    assert!(report.is_same(), "{}", report.diff());
    assert!(report.diff().contains("no difference"), "{}", report.diff());
    assert_eq!(report.model_steps.len(), 2);
    assert_eq!(report.input, "Weather in Paris?");
    assert_eq!(report.tool_calls.len(), 1);
    assert_eq!(report.tool_calls[0].source, ResultSource::Record);
    assert_eq!(turn.runs(), 1, "the tool did not run");
    assert_eq!(
        report.replayed_answer.as_deref(),
        Some("It is 18 degrees in Paris.")
    );

    // The model was sent the recorded conversation under the current
    // system prompt, and the recorded result of the call.
    let requests = llm.requests();
    assert_eq!(requests[0].system_prompt.as_deref(), Some("You are v2."));
    let texts: Vec<String> = requests[0].messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["I am Ada", "Hello, Ada.", "Weather in Paris?"]);
    assert_eq!(tool_result_sent(&llm, 1), "18 degrees in Paris");

    // Nothing of the replay reached the recorded conversation's stores.
    assert_eq!(
        turn.stores.messages.count("ctx-recorded").await.unwrap(),
        kept
    );
    let records = turn.stores.records.as_ref().unwrap();
    assert!(records.get(&report.replay_task_id).await.unwrap().is_none());
}

#[tokio::test]
async fn a_model_answering_differently_at_one_step_is_reported_at_that_step() {
    let turn = Recorded::new().await;
    let (_, report) = turn.replay("Paris", "Paris: 18 degrees.", false).await;
    assert!(!report.is_same());
    assert_eq!(report.first_difference, Some(1));
    let step = report.first_different_step().unwrap();
    assert_eq!(
        step.recorded.as_ref().unwrap().text,
        "It is 18 degrees in Paris."
    );
    assert_eq!(step.replayed.as_ref().unwrap().text, "Paris: 18 degrees.");
    assert!(report.model_steps[0].is_same(), "the tool call is the same");
    assert!(report.added_calls.is_empty() && report.missing_calls.is_empty());
    let diff = report.diff();
    assert!(diff.contains("= model step 1: calls weather"), "{diff}");
    assert!(diff.contains("! model step 2 differs"), "{diff}");
    assert!(diff.contains("differs from model step 2"), "{diff}");
    assert_eq!(
        diff.matches(" differs\n").count(),
        2,
        "step 2 and the answer: {diff}"
    );
}

#[tokio::test]
async fn a_call_the_record_does_not_have_gets_a_failure_saying_so() {
    let turn = Recorded::new().await;
    let (llm, report) = turn
        .replay("Lyon", "I could not find the weather.", false)
        .await;
    assert_eq!(report.first_difference, Some(0));
    assert_eq!(report.tool_calls[0].source, ResultSource::NotInRecord);
    let lyon = Payload::Inline {
        value: json!({ "city": "Lyon" }),
    };
    let paris = Payload::Inline {
        value: json!({ "city": "Paris" }),
    };
    assert_eq!(report.added_calls.len(), 1);
    assert_eq!(report.added_calls[0].arguments, lyon);
    assert_eq!(report.missing_calls.len(), 1);
    assert_eq!(report.missing_calls[0].arguments, paris);
    assert_eq!(turn.runs(), 1, "the tool did not run");
    let sent = tool_result_sent(&llm, 1);
    assert!(
        sent.contains("the record has no call of 'weather'"),
        "{sent}"
    );
    let diff = report.diff();
    assert!(
        diff.contains("+ tool call not in the record: weather({\"city\":\"Lyon\"})"),
        "{diff}"
    );
    assert!(
        diff.contains("- recorded tool call not made: weather({\"city\":\"Paris\"})"),
        "{diff}"
    );
}

#[tokio::test]
async fn live_tools_run_the_tool() {
    let turn = Recorded::new().await;
    let (llm, report) = turn
        .replay("Paris", "It is 18 degrees in Paris.", true)
        .await;
    assert!(report.is_same(), "{}", report.diff());
    assert_eq!(report.tool_calls[0].source, ResultSource::Live);
    assert_eq!(turn.runs(), 2, "the tool ran again");
    assert_eq!(tool_result_sent(&llm, 1), "18 degrees in Paris");
}

#[tokio::test]
async fn a_record_without_a_model_call_cannot_be_replayed() {
    let runs = Arc::new(AtomicUsize::new(0));
    let llm = replay_model("Paris", "-");
    let record = ExecutionRecord::new("task-empty", "ctx", "agent");
    let err = replay(
        &record,
        builder(&llm, &runs, &looopy_stores_memory::stores(), "v2"),
        &ReplayOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ReplayError::NoModelCall { .. }), "{err}");
    assert!(err.to_string().contains("task-empty"), "{err}");
}
