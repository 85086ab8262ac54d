//! Multi-turn: a contextId continues the conversation; a message to an
//! input-required task continues that task.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_a2a::{A2aServer, AgentCardConfig};
use looopy_core::StoreError;
use looopy_core::store::{TaskRecord, TaskRecordStore};
use looopy_core::{LlmResponse, Role, TaskState, ToolCall, ToolDefinition, ToolProvider};
use looopy_testkit::ScriptedLlm;
use looopy_tools::ClientTools;
use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_context_id_continues_the_conversation() {
    let (server, llm) = agent_server(&["Nice to meet you, Ada.", "Your name is Ada."]).await;
    let first = rpc_v1(&server.url, "SendMessage", v1_message("My name is Ada.")).await;
    let first = &first["result"]["task"];
    let context = first["contextId"].as_str().unwrap();
    let mut second = v1_message("What is my name?");
    second["message"]["contextId"] = json!(context);
    let second = rpc_v1(&server.url, "SendMessage", second).await;
    let second = &second["result"]["task"];
    assert_eq!(second["contextId"], context);
    assert_ne!(second["id"], first["id"], "a new task in the same context");
    assert_eq!(
        second["status"]["message"]["parts"][0]["text"],
        "Your name is Ada."
    );
    // The model saw the first turn.
    let seen: Vec<_> = llm.requests()[1]
        .messages
        .iter()
        .map(|m| (m.role, m.text()))
        .collect();
    assert_eq!(
        seen,
        [
            (Role::User, "My name is Ada.".to_owned()),
            (Role::Assistant, "Nice to meet you, Ada.".to_owned()),
            (Role::User, "What is my name?".to_owned()),
        ]
    );
    // The same in 0.3 after a 1.0 turn: the conversation is the server's, not the version's.
    let (server, llm) = agent_server(&["one", "two"]).await;
    let r = rpc_v03(&server.url, "message/send", v03_message("a")).await;
    let mut next = v03_message("b");
    next["message"]["contextId"] = r["result"]["contextId"].clone();
    rpc_v03(&server.url, "message/send", next).await;
    assert_eq!(llm.requests()[1].messages.len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_tool_makes_the_task_wait_and_the_next_message_continues_it() {
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new(
                "call-1",
                "ask_user",
                r#"{"question":"Which city?"}"#,
            )],
        ))
        .respond(LlmResponse::text("It is sunny in Paris."));
    let ask = ClientTools::new([ToolDefinition::new(
        "ask_user",
        "Ask the user",
        json!({"type": "object", "properties": {"question": {"type": "string"}}}),
    )]);
    let (runner, _stores) = agent_runner(llm.clone(), vec![Arc::new(ask) as Arc<dyn ToolProvider>]);
    let server = start(runner).await;

    let first = rpc_v03(&server.url, "message/send", v03_message("Weather?")).await;
    let task = &first["result"];
    assert_eq!(task["status"]["state"], "input-required");
    let task_id = task["id"].as_str().unwrap().to_owned();
    let context_id = task["contextId"].as_str().unwrap().to_owned();
    // The pending call travels as a data part of the status message.
    let parts = task["status"]["message"]["parts"].as_array().unwrap();
    let pending = parts.iter().find(|p| p["kind"] == "data").unwrap();
    assert_eq!(pending["data"]["pendingToolCalls"][0]["id"], "call-1");
    assert_eq!(pending["data"]["pendingToolCalls"][0]["name"], "ask_user");

    // The answer: the client tool's result, in the same task.
    let mut answer = v03_message("");
    answer["message"]["taskId"] = json!(task_id);
    answer["message"]["contextId"] = json!(context_id);
    answer["message"]["parts"] =
        json!([{"kind": "data", "data": {"toolCallId": "call-1", "result": "Paris"}}]);
    let events = sse(&server.url, None, &[], "message/stream", answer)
        .await
        .rest()
        .await;
    let results: Vec<_> = events.iter().map(|e| e.data["result"].clone()).collect();
    assert_eq!(results[0]["kind"], "task");
    assert_eq!(results[0]["id"], task_id.as_str(), "the same task");
    let last = results.last().unwrap();
    assert_eq!(last["final"], true);
    assert_eq!(last["status"]["state"], "completed");
    assert_eq!(
        last["status"]["message"]["parts"][0]["text"],
        "It is sunny in Paris."
    );
    // The model got the tool result where the call was.
    let msgs = &llm.requests()[1].messages;
    let tool_msg = msgs.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool_msg.tool_call_id.as_deref(), Some("call-1"));
    assert_eq!(tool_msg.text(), "Paris");

    // The task's history, read from the Agent's message store: the
    // question and the answer. The client tool's call and result are tool
    // messages there, which the history leaves out.
    let got = rpc_v03(&server.url, "tasks/get", json!({"id": task_id})).await;
    let history = got["result"]["history"].as_array().unwrap();
    let texts: Vec<_> = history
        .iter()
        .map(|m| (m["role"].clone(), m["parts"][0]["text"].clone()))
        .collect();
    assert_eq!(
        texts,
        [
            (json!("user"), json!("Weather?")),
            (json!("agent"), json!("It is sunny in Paris.")),
        ]
    );
    assert_eq!(got["result"]["status"]["state"], "completed");
    // A completed task takes no more messages.
    let mut late = v03_message("more");
    late["message"]["taskId"] = json!(task_id);
    let r = rpc_v03(&server.url, "message/send", late).await;
    assert_eq!(r["error"]["code"], -32004);
}

#[tokio::test(flavor = "multi_thread")]
async fn continuation_rules() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let runner = ScriptedRunner::new(vec![
        vec![working(), finish(TaskState::InputRequired, "Which city?")],
        vec![
            working(),
            Step::Gate(gate.clone()),
            finish(TaskState::Completed, "Sunny."),
        ],
    ]);
    let server = start(runner.clone()).await;
    let r = rpc_v1(&server.url, "SendMessage", v1_message("Weather?")).await;
    let task = &r["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let task_id = task["id"].as_str().unwrap().to_owned();

    // A contextId that is not the task's is refused.
    let mut wrong = v1_message("Paris");
    wrong["message"]["taskId"] = json!(task_id);
    wrong["message"]["contextId"] = json!("another");
    assert_eq!(
        rpc_v1(&server.url, "SendMessage", wrong).await["error"]["code"],
        -32602
    );
    // Unknown task ids are not found.
    let mut unknown = v1_message("Paris");
    unknown["message"]["taskId"] = json!("nope");
    assert_eq!(
        rpc_v1(&server.url, "SendMessage", unknown).await["error"]["code"],
        -32001
    );

    // A subscriber of the waiting task follows into the next turn.
    let mut cont = v1_message("Paris");
    cont["message"]["taskId"] = json!(task_id);
    cont["configuration"] = json!({"returnImmediately": true});
    let r = rpc_v1(&server.url, "SendMessage", cont.clone()).await;
    assert_eq!(r["result"]["task"]["id"], task_id.as_str());
    // While that turn runs, another message to the task is refused.
    assert_eq!(
        rpc_v1(&server.url, "SendMessage", cont).await["error"]["code"],
        -32004
    );
    let requests = runner.requests();
    assert!(!requests[0].continues_task);
    assert!(requests[1].continues_task);
    assert_eq!(requests[1].task_id, requests[0].task_id);
    assert_eq!(requests[1].message.text(), "Paris");

    let mut s = subscribe_v1(&server.url, &task_id).await;
    // The task as it is now, then this turn from its start.
    let now = s.next().await.unwrap();
    assert!(now.id.is_none());
    assert_eq!(
        now.data["result"]["task"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert_eq!(
        s.next().await.unwrap().data["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    gate.add_permits(1);
    let rest = s.rest().await;
    assert_eq!(*last_state_v1(&rest), "TASK_STATE_COMPLETED");

    // Replaying from the first turn's start follows across both turns.
    let first_event = {
        use looopy_core::store::EventLog;
        server.events.read(&task_id, None, 1).await.unwrap()[0]
            .id
            .clone()
    };
    let all = resubscribe_v1(&server.url, &task_id, &first_event)
        .await
        .rest()
        .await;
    let states: Vec<_> = all
        .iter()
        .skip(1)
        .map(|e| {
            let r = &e.data["result"];
            r["statusUpdate"]["status"]["state"]
                .as_str()
                .or(r["task"]["status"]["state"].as_str())
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        states,
        [
            "TASK_STATE_WORKING",
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_SUBMITTED",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_runner_keeps_the_history_of_a_context() {
    use looopy_a2a::LoopRunner;
    use looopy_loop::AgentLoop;
    use looopy_stores_memory::MemoryMessageStore;

    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("first"))
        .respond(LlmResponse::text("second"));
    let messages = Arc::new(MemoryMessageStore::new());
    let runner = LoopRunner::new(AgentLoop::builder(llm.clone()).build(), messages.clone());
    let server = start(runner).await;
    let r = rpc_v03(&server.url, "message/send", v03_message("one")).await;
    assert_eq!(
        r["result"]["status"]["message"]["parts"][0]["text"],
        "first"
    );
    let mut next = v03_message("two");
    next["message"]["contextId"] = r["result"]["contextId"].clone();
    let r2 = rpc_v03(&server.url, "message/send", next).await;
    assert_eq!(
        r2["result"]["status"]["message"]["parts"][0]["text"],
        "second"
    );
    let seen: Vec<_> = llm.requests()[1]
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(seen, ["one", "first", "two"]);
    use looopy_core::store::MessageStore;
    let context = r["result"]["contextId"].as_str().unwrap();
    assert_eq!(messages.count(context).await.unwrap(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_tools_declared_in_a_message_are_offered_for_that_turn() {
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("call-7", "get_location", "{}")],
        ))
        .respond(LlmResponse::text("You are in Oslo."));
    // The agent has no tools of its own: the client brings one.
    let (runner, _stores) = agent_runner(llm.clone(), Vec::new());
    let server = start(runner).await;

    let mut ask = v1_message("Where am I?");
    ask["message"]["metadata"] = json!({"clientTools": [{
        "name": "get_location",
        "description": "The user's location",
        "parameters": {"type": "object", "properties": {}}
    }]});
    let first = rpc_v1(&server.url, "SendMessage", ask).await;
    let task = &first["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    let mut offered: Vec<_> = llm.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    offered.sort();
    // The client's tool; the Agent's tool-output reader waits for a cut output.
    assert_eq!(offered, ["get_location"]);

    let mut answer = v1_message("");
    answer["message"]["taskId"] = task["id"].clone();
    answer["message"]["contextId"] = task["contextId"].clone();
    answer["message"]["parts"] =
        json!([{"data": {"toolCallId": "call-7", "result": {"city": "Oslo"}}}]);
    let done = rpc_v1(&server.url, "SendMessage", answer).await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let second = &llm.requests()[1];
    let result = second
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(result.tool_call_id.as_deref(), Some("call-7"));
    assert!(result.text().contains("Oslo"));
    // Declared per message: the answer declared none, so no tool was
    // offered (the Agent's own reader has no cut output to read).
    assert!(second.tools.is_empty(), "{:?}", second.tools);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_client_tool_declaration_fails_the_task_saying_why() {
    let (runner, _stores) = agent_runner(ScriptedLlm::new(), Vec::new());
    let server = start(runner).await;
    let mut ask = v1_message("hi");
    ask["message"]["metadata"] = json!({"clientTools": [{"description": "no name"}]});
    let r = rpc_v1(&server.url, "SendMessage", ask).await;
    let task = &r["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{r}");
    let text = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("invalid clientTools"), "{text}");
}

/// The memory task store, slow to record a turn's end when the turn waits
/// for input: the final event is in the log well before the record says so.
struct SlowToRecordInput(Arc<looopy_stores_memory::MemoryTaskRecordStore>);

#[async_trait::async_trait]
impl TaskRecordStore for SlowToRecordInput {
    async fn put(&self, record: &TaskRecord) -> Result<(), StoreError> {
        self.0.put(record).await
    }
    async fn compare_and_put(&self, record: &TaskRecord) -> Result<bool, StoreError> {
        if record.status.state == TaskState::InputRequired {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        self.0.compare_and_put(record).await
    }
    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.0.get(task_id).await
    }
    async fn list(
        &self,
        owner: Option<&str>,
        context_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.0.list(owner, context_id, limit).await
    }
    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        self.0.delete(task_id).await
    }
    async fn request_cancel(&self, task_id: &str) -> Result<(), StoreError> {
        self.0.request_cancel(task_id).await
    }
    async fn take_cancel(&self, task_id: &str) -> Result<bool, StoreError> {
        self.0.take_cancel(task_id).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streaming_client_that_answers_the_question_at_once_continues_the_task() {
    // The final `input-required` event reaches the stream before the turn
    // has recorded its end; a client answering it at once (as a remote
    // agent tool does) must not be told that the task is still working.
    let stores = SharedStores::default();
    let runner = ScriptedRunner::new(vec![
        vec![working(), finish(TaskState::InputRequired, "Which city?")],
        vec![working(), finish(TaskState::Completed, "Sunny in Oslo.")],
    ]);
    let server = A2aServer::builder(
        runner,
        stores.events.clone(),
        Arc::new(SlowToRecordInput(stores.tasks.clone())),
    )
    .card(AgentCardConfig::new("Test agent", "Answers from a script"))
    .build();
    let server = serve(server, &stores).await;

    let events = stream_v1(&server.url, v1_message("Weather?"))
        .await
        .rest()
        .await;
    let task_id = events[0].task_id();
    assert_eq!(
        *last_state_v1(&events),
        "TASK_STATE_INPUT_REQUIRED",
        "the stream ends with the question"
    );
    let mut answer = v1_message("Oslo");
    answer["message"]["taskId"] = json!(task_id);
    let reply = rpc_v1(&server.url, "SendMessage", answer).await;
    assert!(reply.get("error").is_none(), "{reply}");
    let task = &reply["result"]["task"];
    assert_eq!(task["id"], task_id.as_str(), "the same task");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "Sunny in Oslo."
    );
}
