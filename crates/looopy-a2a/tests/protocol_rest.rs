//! The HTTP+JSON binding (A2A 1.0 §11) under `/rest`: every operation on
//! the same tasks as JSON-RPC, SSE streams of bare `StreamResponse`s,
//! AIP-193 errors with the spec's HTTP status codes, auth, versions.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_a2a::{AuthConfig, REST_PATH};
use serde_json::{Value, json};
use support::*;

struct Rest {
    base: String,
}

impl Rest {
    fn new(server: &TestServer) -> Self {
        Rest {
            base: format!("{}{REST_PATH}", server.url),
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        http()
            .request(method, format!("{}{path}", self.base))
            .header("A2A-Version", "1.0")
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.request(method, path);
        if let Some(body) = body {
            req = req
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let bytes = res.bytes().await.unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    async fn stream(&self, path: &str, body: Value) -> SseReader {
        let response = self
            .request(reqwest::Method::POST, path)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        SseReader::new(response)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_operation_works_over_http_json() {
    let server = start(ScriptedRunner::hello()).await;
    let rest = Rest::new(&server);

    let (status, sent) = rest.post("/message:send", v1_message("hi")).await;
    assert_eq!(status, 200, "{sent}");
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let id = task["id"].as_str().unwrap();
    let context = task["contextId"].as_str().unwrap();

    let (status, got) = rest.get(&format!("/tasks/{id}?historyLength=1")).await;
    assert_eq!(status, 200);
    assert_eq!(got["id"], id);
    assert_eq!(got["history"].as_array().unwrap().len(), 1);
    assert_eq!(got["artifacts"][0]["parts"][0]["text"], "Hello, world");

    let (status, listed) = rest
        .get(&format!(
            "/tasks?contextId={context}&status=completed&pageSize=10"
        ))
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["totalSize"], 1);
    assert_eq!(listed["tasks"][0]["id"], id);

    // The same task over JSON-RPC: one server, one set of tasks.
    let v = rpc_v1(&server.url, "GetTask", json!({"id": id})).await;
    assert_eq!(v["result"]["status"]["state"], "TASK_STATE_COMPLETED");

    // Streams carry bare StreamResponses, with the log ids.
    let events = rest
        .stream("/message:stream", v1_message("again"))
        .await
        .rest()
        .await;
    assert_eq!(
        events[0].data["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    assert!(events[0].data.get("jsonrpc").is_none());
    assert!(events.iter().all(|e| e.id.is_some()));
    let last = &events.last().unwrap().data;
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    // Finished: cancel is refused (409), so is a subscription (400).
    let (status, e) = rest.post(&format!("/tasks/{id}:cancel"), json!({})).await;
    assert_eq!(status, 409, "{e}");
    assert_eq!(e["error"]["status"], "FAILED_PRECONDITION");
    let (status, e) = rest
        .post(&format!("/tasks/{id}:subscribe"), json!({}))
        .await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(e["error"]["details"][0]["reason"], "UNSUPPORTED_OPERATION");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_task_can_be_watched_and_cancelled() {
    let runner = ScriptedRunner::new(vec![vec![working(), Step::UntilCancelled]]);
    let server = start(runner).await;
    let rest = Rest::new(&server);
    let mut body = v1_message("long");
    body["configuration"] = json!({"returnImmediately": true});
    let (_, sent) = rest.post("/message:send", body).await;
    let id = sent["task"]["id"].as_str().unwrap().to_owned();

    let mut sub = rest
        .stream(&format!("/tasks/{id}:subscribe"), json!({}))
        .await;
    let first = sub.next().await.unwrap();
    assert_eq!(first.data["task"]["id"], id);

    let (status, cancelled) = rest.post(&format!("/tasks/{id}:cancel"), json!({})).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"]["state"], "TASK_STATE_CANCELED");
    let rest_events = sub.rest().await;
    let last = &rest_events.last().unwrap().data;
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_are_aip_193_with_the_spec_status_codes() {
    let server = start(ScriptedRunner::hello()).await;
    let rest = Rest::new(&server);

    let (status, e) = rest.get("/tasks/no-such-task").await;
    assert_eq!(status, 404);
    assert_eq!(e["error"]["code"], 404);
    assert_eq!(e["error"]["status"], "NOT_FOUND");
    let info = &e["error"]["details"][0];
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["reason"], "TASK_NOT_FOUND");
    assert_eq!(info["domain"], "a2a-protocol.org");

    // Wrong Content-Type: 415.
    let res = rest
        .request(reqwest::Method::POST, "/message:send")
        .header("content-type", "text/plain")
        .body("hi")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);
    // A part of a media type the card does not accept: 415 too.
    let mut file = v1_message("x");
    file["message"]["parts"] = json!([{"raw": "dGNr", "mediaType": "application/x-nope"}]);
    assert_eq!(rest.post("/message:send", file).await.0, 415);
    // Bad params: 400.
    let (status, e) = rest.post("/message:send", json!({"message": 3})).await;
    assert_eq!(status, 400);
    assert_eq!(e["error"]["status"], "INVALID_ARGUMENT");
    // Another version: 400 VersionNotSupported.
    let res = http()
        .get(format!("{}/tasks/x", rest.base))
        .header("A2A-Version", "0.3")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    let e: Value = serde_json::from_slice(&res.bytes().await.unwrap()).unwrap();
    assert_eq!(e["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED");
    // No such route: 404; no extended card: 400.
    assert_eq!(rest.get("/nothing/here").await.0, 404);
    assert_eq!(rest.get("/extendedAgentCard").await.0, 400);
    // Another HTTP method on a route, or an action the binding lacks, is an
    // unknown route too (404, not 405), named with the binding's path.
    for (method, path) in [
        (reqwest::Method::GET, "/message:send"),
        (reqwest::Method::DELETE, "/tasks/t1"),
        (reqwest::Method::POST, "/tasks/t1:pause"),
        (reqwest::Method::GET, "/tasks/t1:pause"),
    ] {
        let (status, e) = rest.call(method.clone(), path, None).await;
        assert_eq!(status, 404, "{method} {path}: {e}");
        assert_eq!(e["error"]["status"], "NOT_FOUND", "{method} {path}");
        assert_eq!(
            e["error"]["details"][0]["metadata"]["method"],
            format!("/rest{path}"),
            "{method} {path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_body_gets_413() {
    let stores = SharedStores::default();
    let server = serve(
        builder(ScriptedRunner::hello(), &stores)
            .max_body_bytes(512)
            .build(),
        &stores,
    )
    .await;
    let rest = Rest::new(&server);
    let (status, e) = rest
        .post("/message:send", v1_message(&"x".repeat(2048)))
        .await;
    assert_eq!(status, 413, "{e}");
    assert_eq!(e["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_eq!(e["error"]["details"][0]["reason"], "PAYLOAD_TOO_LARGE");
    // The server goes on.
    let (status, r) = rest.post("/message:send", v1_message("small")).await;
    assert_eq!(status, 200, "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_json_requires_the_same_credentials() {
    let stores = SharedStores::default();
    let auth = AuthConfig::none().bearer("s3cret", "alice");
    let server = serve(
        builder(ScriptedRunner::hello(), &stores).auth(auth).build(),
        &stores,
    )
    .await;
    let rest = Rest::new(&server);
    let (status, e) = rest.post("/message:send", v1_message("hi")).await;
    assert_eq!(status, 401);
    assert_eq!(e["error"]["status"], "UNAUTHENTICATED");
    let res = rest
        .request(reqwest::Method::POST, "/message:send")
        .header("authorization", "Bearer s3cret")
        .header("content-type", "application/json")
        .body(v1_message("hi").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}
