//! The tool-progress extension: declared on the card, activated per request
//! by `A2A-Extensions` (echoed back), its updates logged and replayed to
//! opted-in subscribers only; clients that do not opt in see plain A2A.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use looopy_a2a::TOOL_PROGRESS_EXTENSION;
use looopy_core::{
    EventPayload, LlmResponse, TaskState, ToolCall, ToolDefinition, ToolOutcome, ToolProvider,
    ToolResult,
};
use looopy_loop::layers::TimeoutTools;
use looopy_testkit::ScriptedLlm;
use looopy_tools::LocalTools;
use serde_json::{Value, json};
use support::*;
use tokio::sync::Semaphore;

const EXT: &str = TOOL_PROGRESS_EXTENSION;

fn tool_steps() -> Vec<Step> {
    let call = ToolCall::new("call-1", "lookup", r#"{"q":"weather"}"#);
    vec![
        working(),
        Step::Emit(EventPayload::Usage {
            call: usage(10, 2),
            total: usage(10, 2),
        }),
        Step::Emit(EventPayload::ToolStart {
            arguments: call.parsed_arguments(),
            call,
        }),
        Step::Emit(EventPayload::ToolComplete {
            name: "lookup".into(),
            result: ToolResult::text("call-1", "sunny"),
            outcome: ToolOutcome::Success,
            duration_ms: 12,
        }),
    ]
}

fn tool_script() -> Vec<Step> {
    let mut steps = tool_steps();
    steps.extend([
        chunk("It is ", true, false),
        chunk("sunny", false, true),
        finish(TaskState::Completed, "It is sunny"),
    ]);
    steps
}

/// A whole streamed response: its headers and its events.
async fn stream_all(
    url: &str,
    version: Option<&str>,
    headers: &[(&str, &str)],
    method: &str,
    params: Value,
) -> (reqwest::header::HeaderMap, Vec<SseEvent>) {
    let response = stream_request(url, version, headers, method, params).await;
    let headers = response.headers().clone();
    (headers, SseReader::new(response).rest().await)
}

/// `SendStreamingMessage` (A2A 1.0) of `text`, asking for the
/// tool-progress extension: its headers and events.
async fn stream_v1_with_progress(
    url: &str,
    text: &str,
) -> (reqwest::header::HeaderMap, Vec<SseEvent>) {
    let headers = [("A2A-Extensions", EXT)];
    let params = v1_message(text);
    stream_all(url, Some("1.0"), &headers, "SendStreamingMessage", params).await
}

/// The data of the progress updates among 1.0 stream events.
fn progress_v1(events: &[SseEvent]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| {
            let u = e.data["result"].get("statusUpdate")?;
            u["metadata"].get(EXT)?;
            Some(u["status"]["message"]["parts"][0]["data"].clone())
        })
        .collect()
}

fn kinds(progress: &[Value]) -> Vec<&str> {
    progress
        .iter()
        .map(|d| d["event"].as_str().unwrap())
        .collect()
}

/// The events with everything that differs between runs blanked out.
fn normalized(events: &[SseEvent]) -> Vec<Value> {
    fn blank(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if k == "timestamp" || k.ends_with("Id") || k == "id" {
                        *v = json!("_");
                    } else {
                        blank(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(blank),
            _ => {}
        }
    }
    events
        .iter()
        .map(|e| {
            let mut v = e.data.clone();
            blank(&mut v);
            v
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_card_offers_the_extension_unless_turned_off() {
    let server = start(ScriptedRunner::hello()).await;
    for (version, path) in [
        (Some("1.0"), "agent-card.json"),
        (None, "agent-card.json"),
        (None, "agent.json"),
    ] {
        let mut req = http().get(format!("{}/.well-known/{path}", server.url));
        if let Some(v) = version {
            req = req.header("A2A-Version", v);
        }
        let card: Value = req.send().await.unwrap().json().await.unwrap();
        let ext = &card["capabilities"]["extensions"][0];
        assert_eq!(ext["uri"], EXT, "{card}");
        assert_eq!(ext["required"], false);
        assert!(ext["description"].as_str().unwrap().contains("tool"));
    }

    let stores = SharedStores::default();
    let off = serve(
        builder(ScriptedRunner::hello(), &stores)
            .tool_progress(false)
            .build(),
        &stores,
    )
    .await;
    let card = agent_card(&off.url, Some("1.0")).await;
    assert!(card["capabilities"].get("extensions").is_none(), "{card}");
}

#[tokio::test(flavor = "multi_thread")]
async fn opted_in_streams_carry_tool_calls_usage_and_the_trace_id() {
    let server = start(ScriptedRunner::new(vec![tool_script()])).await;
    let (headers, events) = stream_all(
        &server.url,
        Some("1.0"),
        &[(
            "A2A-Extensions",
            &format!("https://other.example/ext/v1, {EXT}"),
        )],
        "SendStreamingMessage",
        v1_message("weather?"),
    )
    .await;
    // Only the extensions activated are echoed.
    assert_eq!(headers["a2a-extensions"], EXT);
    assert!(events[0].data["result"].get("task").is_some());
    let progress = progress_v1(&events);
    assert_eq!(
        kinds(&progress),
        ["turn-start", "usage", "tool-start", "tool-complete"]
    );
    let trace = progress[0]["traceId"].as_str().unwrap();
    assert_eq!(trace.len(), 32);
    assert!(trace.chars().all(|c| c.is_ascii_hexdigit()));
    // No OpenTelemetry layer in this test: the id is made up, and says so.
    assert_eq!(progress[0]["traceIdGenerated"], true);
    assert_eq!(progress[1]["total"]["totalTokens"], 12);
    assert_eq!(progress[2]["callId"], "call-1");
    assert_eq!(progress[2]["name"], "lookup");
    assert_eq!(progress[2]["arguments"], json!({"q": "weather"}));
    assert_eq!(progress[3]["result"], "sunny");
    assert_eq!(progress[3]["isError"], false);
    assert_eq!(progress[3]["durationMs"], 12);
    // Progress updates say `working` and are sent as such.
    let u = events
        .iter()
        .find(|e| {
            e.data["result"]["statusUpdate"]["metadata"]
                .get(EXT)
                .is_some()
        })
        .unwrap();
    assert_eq!(
        u.data["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert!(u.id.is_some(), "progress updates are log events with ids");
    let last = &events.last().unwrap().data["result"]["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test(flavor = "multi_thread")]
async fn clients_that_do_not_opt_in_see_plain_a2a_as_before() {
    // A server without the extension is the "before".
    let before_stores = SharedStores::default();
    let before = serve(
        builder(ScriptedRunner::new(vec![tool_script()]), &before_stores)
            .tool_progress(false)
            .build(),
        &before_stores,
    )
    .await;
    let now = start(ScriptedRunner::new(vec![tool_script()])).await;

    for (version, method, params) in [
        (Some("1.0"), "SendStreamingMessage", v1_message("weather?")),
        (None, "message/stream", v03_message("weather?")),
    ] {
        let (h_before, e_before) =
            stream_all(&before.url, version, &[], method, params.clone()).await;
        let (h_now, e_now) = stream_all(&now.url, version, &[], method, params.clone()).await;
        assert_eq!(normalized(&e_before), normalized(&e_now), "{method}");
        assert!(h_now.get("a2a-extensions").is_none());
        assert!(h_before.get("a2a-extensions").is_none());
        // Asking for the extension of a server that does not offer it changes nothing.
        let (h_asked, e_asked) = stream_all(
            &before.url,
            version,
            &[("A2A-Extensions", EXT)],
            method,
            params,
        )
        .await;
        assert_eq!(normalized(&e_before), normalized(&e_asked), "{method}");
        assert!(h_asked.get("a2a-extensions").is_none());
    }
    // The 1.0 stream has nothing of the extension in it.
    let (_, events) = stream_all(
        &now.url,
        Some("1.0"),
        &[],
        "SendStreamingMessage",
        v1_message("x"),
    )
    .await;
    assert!(!events.iter().any(|e| e.data.to_string().contains(EXT)));
    assert!(progress_v1(&events).is_empty());

    // Task objects are the same too (the updates are not history).
    let task_id = events[0].data["result"]["task"]["id"].as_str().unwrap();
    let task = rpc_v1(&now.url, "GetTask", json!({"id": task_id})).await;
    assert!(!task.to_string().contains(EXT), "{task}");
    assert_eq!(task["result"]["history"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn resubscription_replays_progress_to_opted_in_clients_only() {
    let gate = Arc::new(Semaphore::new(0));
    let mut script = tool_steps();
    script.extend([
        Step::Gate(gate.clone()),
        chunk("done", true, true),
        finish(TaskState::Completed, "done"),
    ]);
    let server = start(ScriptedRunner::new(vec![script])).await;
    let mut first = sse(
        &server.url,
        Some("1.0"),
        &[("A2A-Extensions", EXT)],
        "SendStreamingMessage",
        v1_message("go"),
    )
    .await;
    let task = first.next().await.unwrap();
    let task_id = task.data["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let after = task.id.clone().unwrap();
    // Wait until the tool finished (the turn now waits at the gate).
    loop {
        let e = first.next().await.unwrap();
        if progress_v1(std::slice::from_ref(&e))
            .first()
            .is_some_and(|d| d["event"] == "tool-complete")
        {
            break;
        }
    }

    // A subscription, its response begun but not read.
    let open = |ext: bool, last: Option<String>| {
        let url = server.url.clone();
        let id = task_id.clone();
        async move {
            let mut headers: Vec<(&str, String)> = Vec::new();
            if ext {
                headers.push(("A2A-Extensions", EXT.to_owned()));
            }
            if let Some(l) = last {
                headers.push(("Last-Event-ID", l));
            }
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            stream_request(&url, Some("1.0"), &h, "SubscribeToTask", json!({"id": id})).await
        }
    };
    // A whole subscription: its headers and events.
    let subscribe = |ext: bool, last: Option<String>| {
        let response = open(ext, last);
        async move {
            let response = response.await;
            let headers = response.headers().clone();
            (headers, SseReader::new(response).rest().await)
        }
    };
    // Each subscription is being served before the turn goes on past the
    // gate.
    let opted = open(true, Some(after.clone())).await;
    let plain = open(false, Some(after.clone())).await;
    let from_start = open(true, None).await;
    gate.add_permits(1);
    let h = opted.headers().clone();
    let opted = SseReader::new(opted).rest().await;
    let plain = SseReader::new(plain).rest().await;
    let from_start = SseReader::new(from_start).rest().await;
    assert_eq!(h["a2a-extensions"], EXT);
    assert_eq!(
        kinds(&progress_v1(&opted)),
        ["turn-start", "usage", "tool-start", "tool-complete"]
    );
    assert_eq!(
        kinds(&progress_v1(&from_start)),
        ["turn-start", "usage", "tool-start", "tool-complete"]
    );
    assert!(progress_v1(&plain).is_empty());
    assert!(!plain.iter().any(|e| e.data.to_string().contains(EXT)));
    for events in [&opted, &plain, &from_start] {
        assert_eq!(*last_state_v1(events), "TASK_STATE_COMPLETED");
    }
    let _ = first.rest().await;

    // The finished task replays the same way.
    let (_, replay) = subscribe(true, Some(after.clone())).await;
    assert_eq!(progress_v1(&replay).len(), 4);
    let (_, replay) = subscribe(false, Some(after)).await;
    assert!(progress_v1(&replay).is_empty());
}

/// The log's events of a task whose status update carries the extension.
async fn logged_progress(server: &TestServer, task_id: &str) -> usize {
    use looopy_core::store::EventLog;
    server
        .events
        .read(task_id, None, 1000)
        .await
        .unwrap()
        .iter()
        .filter(|e| match &*e.event.payload {
            EventPayload::StatusUpdate { metadata, .. } => metadata.extra.contains_key(EXT),
            _ => false,
        })
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn only_turns_that_asked_for_the_extension_build_and_log_its_updates() {
    let runner = ScriptedRunner::new(vec![tool_script(), tool_script(), tool_script()]);
    let requests = runner.requests.clone();
    let server = start(runner).await;
    let task_of = |events: &[SseEvent]| {
        events[0].data["result"]["task"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    // Without the extension: none in the stream, none in the log.
    let (_, plain) = stream_all(
        &server.url,
        Some("1.0"),
        &[],
        "SendStreamingMessage",
        v1_message("weather?"),
    )
    .await;
    let plain_task = task_of(&plain);
    assert!(progress_v1(&plain).is_empty());
    assert_eq!(logged_progress(&server, &plain_task).await, 0);
    // A later subscription that asks for them gets the turn's public events only.
    let (_, replay) = stream_all(
        &server.url,
        Some("1.0"),
        &[("A2A-Extensions", EXT), ("Last-Event-ID", "0")],
        "SubscribeToTask",
        json!({"id": plain_task}),
    )
    .await;
    assert!(progress_v1(&replay).is_empty());
    assert_eq!(*last_state_v1(&replay), "TASK_STATE_COMPLETED");

    // With it: the stream carries them and the log holds them.
    let (_, opted) = stream_v1_with_progress(&server.url, "weather?").await;
    assert_eq!(
        kinds(&progress_v1(&opted)),
        ["turn-start", "usage", "tool-start", "tool-complete"]
    );
    assert_eq!(logged_progress(&server, &task_of(&opted)).await, 4);

    // A non-streaming send has no stream to carry them: none are logged.
    let sent = rpc_v1(&server.url, "SendMessage", v1_message("weather?")).await;
    let sent_task = sent["result"]["task"]["id"].as_str().unwrap();
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    assert_eq!(logged_progress(&server, sent_task).await, 0);

    // The runner was told which turns are followed for their progress,
    // so that the others build no internal events.
    let told: Vec<bool> = requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.tool_progress)
        .collect();
    assert_eq!(told, [false, true, false]);
}

#[tokio::test(flavor = "multi_thread")]
async fn v03_clients_opt_in_with_either_header_name() {
    let server = start(ScriptedRunner::new(vec![tool_script()])).await;
    for header in ["A2A-Extensions", "X-A2A-Extensions"] {
        let (h, events) = stream_all(
            &server.url,
            None,
            &[(header, EXT)],
            "message/stream",
            v03_message("weather?"),
        )
        .await;
        assert_eq!(h[header], EXT);
        assert_eq!(h["a2a-extensions"], EXT);
        let data: Vec<&Value> = events
            .iter()
            .filter(|e| e.data["result"]["metadata"].get(EXT).is_some())
            .map(|e| {
                let r = &e.data["result"];
                assert_eq!(r["kind"], "status-update");
                assert_eq!(r["final"], false);
                assert_eq!(r["status"]["state"], "working");
                let part = &r["status"]["message"]["parts"][0];
                assert_eq!(part["kind"], "data");
                &part["data"]
            })
            .collect();
        assert_eq!(data.len(), 4, "{header}");
        assert_eq!(data[3]["event"], "tool-complete");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_turns_report_their_real_tool_calls() {
    let tools = LocalTools::new()
        .raw_tool(
            ToolDefinition::new("nap", "Sleeps", json!({"type": "object"})),
            |call: ToolCall, _cx| async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                ToolResult::text(call.id, "rested")
            },
        )
        .raw_tool(
            ToolDefinition::new("broken", "Fails", json!({"type": "object"})),
            |call: ToolCall, _cx| async move { ToolResult::error(call.id, "disk on fire") },
        )
        .raw_tool(
            ToolDefinition::new("stuck", "Never ends", json!({"type": "object"})),
            |call: ToolCall, _cx| async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                ToolResult::text(call.id, "unstuck")
            },
        );
    let tools = TimeoutTools::new(tools).with_timeout("stuck", Duration::from_millis(20));
    let llm = ScriptedLlm::new()
        .respond(
            LlmResponse::tool_calls(
                "",
                vec![
                    ToolCall::new("a", "nap", r#"{"minutes":1}"#),
                    ToolCall::new("b", "broken", "{}"),
                    ToolCall::new("c", "stuck", "{}"),
                ],
            )
            .with_usage(usage(20, 5)),
        )
        .respond(LlmResponse::text("Rested, but the disk is on fire.").with_usage(usage(30, 8)));
    let tools: Arc<dyn ToolProvider> = Arc::new(tools);
    let (runner, _stores) = agent_runner(llm, vec![tools]);
    let server = start(runner).await;
    let (_, events) = stream_v1_with_progress(&server.url, "rest").await;
    let progress = progress_v1(&events);
    let started: Vec<&Value> = progress
        .iter()
        .filter(|d| d["event"] == "tool-start")
        .collect();
    let done: Vec<&Value> = progress
        .iter()
        .filter(|d| d["event"] == "tool-complete")
        .collect();
    assert_eq!(started.len(), 3, "{progress:?}");
    assert_eq!(done.len(), 3, "{progress:?}");
    let nap = started.iter().find(|d| d["name"] == "nap").unwrap();
    assert_eq!(nap["arguments"], json!({"minutes": 1}));
    let nap_done = done.iter().find(|d| d["callId"] == "a").unwrap();
    assert_eq!(nap_done["result"], "rested");
    assert_eq!(nap_done["isError"], false);
    assert_eq!(nap_done["failure"], Value::Null);
    assert_eq!(nap_done["outcome"], "success");
    assert!(nap_done["durationMs"].as_u64().unwrap() >= 30);
    let broken = done.iter().find(|d| d["callId"] == "b").unwrap();
    assert_eq!(broken["isError"], true);
    assert_eq!(broken["failure"], "failed");
    assert_eq!(broken["outcome"], "error");
    // A call past its limit: the kind says so, not only the text.
    let stuck = done.iter().find(|d| d["callId"] == "c").unwrap();
    assert_eq!(stuck["isError"], true);
    assert_eq!(stuck["failure"], "timeout");
    assert_eq!(stuck["outcome"], "timeout");
    assert!(
        stuck["result"].as_str().unwrap().contains("timed out"),
        "{stuck}"
    );
    assert!(broken["result"].as_str().unwrap().contains("disk on fire"));
    let totals: Vec<u64> = progress
        .iter()
        .filter(|d| d["event"] == "usage")
        .map(|d| d["total"]["totalTokens"].as_u64().unwrap())
        .collect();
    assert_eq!(totals, [25, 63]);
    // The final status still carries the turn's usage for every client.
    let last = &events.last().unwrap().data["result"]["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(last["metadata"]["usage"]["totalTokens"], 63);
}
