//! A remote agent used as a tool: its events come into the caller's turn,
//! namespaced `<caller task>/<remote task>`.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_a2a::{A2aClient, RemoteAgentTools};
use looopy_core::store::TaskRecordStore;
use looopy_core::{EventPayload, LlmResponse, Message, TaskState, ToolCall, TurnContext};
use looopy_loop::AgentLoop;
use looopy_testkit::ScriptedLlm;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn the_remote_agents_events_join_the_callers_stream_under_its_task() {
    let (remote, _remote_llm) = agent_server(&["It is sunny in Paris."]).await;
    let tool = RemoteAgentTools::from_card(A2aClient::new(&remote.url))
        .await
        .unwrap()
        .with_name("weather_agent");
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new(
                "c1",
                "weather_agent",
                r#"{"message":"Weather in Paris?"}"#,
            )],
        ))
        .respond(LlmResponse::text("Sunny."));
    let agent = AgentLoop::builder(llm).tools(tool).build();
    let (events, outcome) = agent
        .start_turn(
            vec![Message::user("Weather?")].into(),
            TurnContext::new("local-1", "ctx-1"),
        )
        .collect_all()
        .await;
    assert_eq!(outcome.unwrap().state, TaskState::Completed);

    let sub: Vec<(usize, &String, &looopy_core::AgentEvent)> = events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &*e.payload {
            EventPayload::SubAgent {
                path,
                tool,
                call_id,
                event,
            } => {
                assert_eq!((tool.as_str(), call_id.as_str()), ("weather_agent", "c1"));
                Some((i, path, &**event))
            }
            _ => None,
        })
        .collect();
    assert!(
        !sub.is_empty(),
        "no sub-agent events: {:?}",
        events.iter().map(|e| e.kind()).collect::<Vec<_>>()
    );
    let path = sub[0].1;
    let remote_task = path.strip_prefix("local-1/").unwrap();
    assert!(!remote_task.is_empty());
    assert!(sub.iter().all(|(_, p, _)| *p == path));
    // The remote server knows that task; its last event ended it.
    assert!(remote.tasks.get(remote_task).await.unwrap().is_some());
    let (_, _, last) = sub.last().unwrap();
    assert!(last.is_final());
    assert_eq!(last.state(), Some(TaskState::Completed));
    // All of them before the call's end.
    let complete = events
        .iter()
        .position(|e| e.kind() == "internal:tool-complete")
        .unwrap();
    assert!(sub.iter().all(|(i, _, _)| *i < complete));
}
