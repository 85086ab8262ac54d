//! Authentication and isolation: 401 without credentials, and a principal
//! never sees another's tasks or contexts.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_a2a::AuthConfig;
use serde_json::json;
use support::*;

const ALICE: &[(&str, &str)] = &[("authorization", "Bearer alice-token")];
const BOB: &[(&str, &str)] = &[("x-api-key", "bob-key")];

async fn server(runner: ScriptedRunner) -> TestServer {
    let stores = SharedStores::default();
    let auth = AuthConfig::none()
        .bearer("alice-token", "alice")
        .api_key("bob-key", "bob");
    serve(builder(runner.clone(), &stores).auth(auth).build(), &stores).await
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_without_valid_credentials_get_401() {
    let runner = ScriptedRunner::hello();
    let server = server(runner.clone()).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"message/send","params": v03_message("x")})
        .to_string();
    for headers in [
        &[][..],
        &[("authorization", "Bearer wrong")][..],
        &[("x-api-key", "alice-token")][..],
    ] {
        let res = http()
            .post(format!("{}/", server.url))
            .headers(
                headers
                    .iter()
                    .map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap()))
                    .collect(),
            )
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 401);
        assert!(
            res.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer")
        );
        let v: serde_json::Value = res.json().await.unwrap();
        assert_eq!(v["error"]["code"], -32000);
    }
    assert!(runner.requests().is_empty(), "nothing ran");

    // The card needs no credentials and lists the schemes.
    let card = agent_card(&server.url, Some("1.0")).await;
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(
        card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["location"],
        "header"
    );
    assert_eq!(card["securityRequirements"].as_array().unwrap().len(), 2);
    let legacy = get_json(&server.url, "/.well-known/agent.json", None).await;
    assert_eq!(legacy["securitySchemes"]["apiKey"]["in"], "header");
    assert_eq!(legacy["security"], json!([{"bearer": []}, {"apiKey": []}]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_principal_reaches_the_turn() {
    let runner = ScriptedRunner::hello();
    let server = server(runner.clone()).await;
    rpc_with(&server.url, None, ALICE, "message/send", v03_message("x")).await;
    rpc_with(&server.url, None, BOB, "message/send", v03_message("y")).await;
    let requests = runner.requests();
    assert_eq!(requests[0].auth.principal, "alice");
    assert_eq!(requests[0].auth.credentials.as_deref(), Some("alice-token"));
    assert_eq!(requests[1].auth.principal, "bob");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_principal_gets_task_not_found() {
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let runner = ScriptedRunner::new(vec![
        hello_script(),
        vec![
            working(),
            Step::Gate(gate.clone()),
            finish(looopy_core::TaskState::InputRequired, "?"),
        ],
    ]);
    let server = server(runner).await;
    let url = &server.url;
    let done = rpc_with(url, Some("1.0"), ALICE, "SendMessage", v1_message("mine")).await;
    let task_id = done["result"]["task"]["id"].as_str().unwrap().to_owned();
    let context_id = done["result"]["task"]["contextId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Bob, in both versions, on every method that names the task.
    let get = rpc_with(url, Some("1.0"), BOB, "GetTask", json!({"id": task_id})).await;
    assert_eq!(get["error"]["code"], -32001);
    let get = rpc_with(url, None, BOB, "tasks/get", json!({"id": task_id})).await;
    assert_eq!(get["error"]["code"], -32001);
    let cancel = rpc_with(url, Some("1.0"), BOB, "CancelTask", json!({"id": task_id})).await;
    assert_eq!(
        cancel["error"]["code"], -32001,
        "not -32002: Bob must not learn that it exists"
    );
    // A 1.0 stream that never opens answers with a plain JSON-RPC error.
    let sub = rpc_with(
        url,
        Some("1.0"),
        BOB,
        "SubscribeToTask",
        json!({"id": task_id}),
    )
    .await;
    assert_eq!(sub["error"]["code"], -32001);
    let events = sse(
        url,
        None,
        &[BOB[0], ("last-event-id", "1")],
        "tasks/resubscribe",
        json!({"id": task_id}),
    )
    .await
    .rest()
    .await;
    assert_eq!(events[0].data["error"]["code"], -32001);
    let mut cont = v1_message("continue");
    cont["message"]["taskId"] = json!(task_id);
    let r = rpc_with(url, Some("1.0"), BOB, "SendMessage", cont).await;
    assert_eq!(r["error"]["code"], -32001);
    // Nor can Bob join Alice's conversation.
    let mut join = v1_message("hello");
    join["message"]["contextId"] = json!(context_id);
    let r = rpc_with(url, Some("1.0"), BOB, "SendMessage", join).await;
    assert_eq!(r["error"]["code"], -32001);
    // ListTasks shows each their own.
    let bobs = rpc_with(url, Some("1.0"), BOB, "ListTasks", json!({})).await;
    assert_eq!(bobs["result"]["totalSize"], 0);
    let alices = rpc_with(url, Some("1.0"), ALICE, "ListTasks", json!({})).await;
    assert_eq!(alices["result"]["totalSize"], 1);
    // Alice still can.
    let get = rpc_with(url, Some("1.0"), ALICE, "GetTask", json!({"id": task_id})).await;
    assert_eq!(get["result"]["status"]["state"], "TASK_STATE_COMPLETED");
}
