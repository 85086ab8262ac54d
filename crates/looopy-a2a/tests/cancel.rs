//! CancelTask / tasks/cancel: running -> canceled, finished -> -32002,
//! waiting for input -> canceled, and through a second server.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_core::{LlmResponse, TaskState};
use looopy_testkit::{ScriptStep, ScriptedLlm};
use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn cancel_a_running_task_then_again() {
    let runner = ScriptedRunner::new(vec![vec![working(), Step::UntilCancelled]]);
    let server = start(runner).await;
    let mut stream = stream_v1(&server.url, v1_message("long job")).await;
    let task_id = stream.next().await.unwrap().data["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        stream.next().await.unwrap().data["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );

    let r = rpc_v1(&server.url, "CancelTask", json!({"id": task_id})).await;
    assert_eq!(r["result"]["id"], task_id.as_str());
    assert_eq!(r["result"]["status"]["state"], "TASK_STATE_CANCELED");
    // The open stream sees the end too.
    let rest = stream.rest().await;
    assert_eq!(*last_state_v1(&rest), "TASK_STATE_CANCELED");

    // A finished task is not cancelable, in both versions.
    let again = rpc_v1(&server.url, "CancelTask", json!({"id": task_id})).await;
    assert_eq!(again["error"]["code"], -32002);
    let again = rpc_v03(&server.url, "tasks/cancel", json!({"id": task_id})).await;
    assert_eq!(again["error"]["code"], -32002);
}

#[tokio::test(flavor = "multi_thread")]
async fn completed_tasks_are_not_cancelable_and_unknown_ones_not_found() {
    let server = start(ScriptedRunner::hello()).await;
    let r = rpc_v03(&server.url, "message/send", v03_message("x")).await;
    let id = r["result"]["id"].as_str().unwrap();
    let c = rpc_v03(&server.url, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(c["error"]["code"], -32002);
    assert_eq!(c["error"]["data"][0]["reason"], "TASK_NOT_CANCELABLE");
    let c = rpc_v1(&server.url, "CancelTask", json!({"id": "no-such-task"})).await;
    assert_eq!(c["error"]["code"], -32001);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_waiting_for_input_can_be_canceled() {
    let server = start(ScriptedRunner::new(vec![vec![
        working(),
        finish(TaskState::InputRequired, "Which one?"),
    ]]))
    .await;
    let r = rpc_v03(&server.url, "message/send", v03_message("x")).await;
    assert_eq!(r["result"]["status"]["state"], "input-required");
    let id = r["result"]["id"].as_str().unwrap();
    let c = rpc_v03(&server.url, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(c["result"]["status"]["state"], "canceled");
    let mut cont = v03_message("too late");
    cont["message"]["taskId"] = json!(id);
    let r = rpc_v03(&server.url, "message/send", cont).await;
    assert_eq!(
        r["error"]["code"], -32004,
        "a canceled task takes no more messages"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_through_another_server_sharing_the_stores() {
    let stores = SharedStores::default();
    let a = serve(
        builder(
            ScriptedRunner::new(vec![vec![working(), Step::UntilCancelled]]),
            &stores,
        )
        .build(),
        &stores,
    )
    .await;
    let b = serve(builder(ScriptedRunner::hello(), &stores).build(), &stores).await;
    let r = rpc_v1(&a.url, "SendMessage", {
        let mut p = v1_message("long");
        p["configuration"] = json!({"returnImmediately": true});
        p
    })
    .await;
    let id = r["result"]["task"]["id"].as_str().unwrap();
    let c = rpc_v1(&b.url, "CancelTask", json!({"id": id})).await;
    assert_eq!(c["result"]["status"]["state"], "TASK_STATE_CANCELED");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_an_agent_turn_waiting_on_its_model() {
    let llm = ScriptedLlm::new().then(ScriptStep::Delay(
        std::time::Duration::from_secs(600),
        Box::new(ScriptStep::Respond(LlmResponse::text("never"))),
    ));
    let (runner, _stores) = agent_runner(llm, Vec::<Arc<dyn looopy_core::ToolProvider>>::new());
    let server = start(runner).await;
    let mut stream = sse(
        &server.url,
        None,
        &[],
        "message/stream",
        v03_message("slow"),
    )
    .await;
    let task_id = stream.next().await.unwrap().data["result"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let c = rpc_v03(&server.url, "tasks/cancel", json!({"id": task_id})).await;
    assert_eq!(c["result"]["status"]["state"], "canceled");
    let rest = stream.rest().await;
    let last = &rest.last().unwrap().data["result"];
    assert_eq!(last["final"], true);
    assert_eq!(last["status"]["state"], "canceled");
}
