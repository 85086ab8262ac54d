//! Push notifications against a real webhook receiver (axum on
//! 127.0.0.1, started by each test): the config methods of both versions,
//! what is POSTed and with which headers, retries after a 500, the SSRF
//! guard, and a turn that ends while its webhook hangs.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use looopy_a2a::{PUSH_TOKEN_HEADER, PushSettings};
use looopy_core::store::PushConfigStore;
use looopy_stores_memory::MemoryPushConfigStore;
use serde_json::{Value, json};
use support::*;
use tokio::sync::Semaphore;

/// What the receiver does with a request.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// 200 at once.
    Accept,
    /// Never answers.
    Hang,
}

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    headers: HeaderMap,
    body: Value,
    /// The status it was answered with (none: it hung).
    status: Option<u16>,
}

#[derive(Clone)]
struct Receiver {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

struct ReceiverState {
    mode: Mode,
    /// Requests answered 500 before the receiver accepts any.
    fail_first: AtomicUsize,
    received: Arc<Mutex<Vec<Received>>>,
}

async fn hook(State(s): State<Arc<ReceiverState>>, headers: HeaderMap, body: String) -> StatusCode {
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    let fail = s
        .fail_first
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let status = match (s.mode, fail) {
        (_, true) => Some(500),
        (Mode::Accept, false) => Some(200),
        (Mode::Hang, false) => None,
    };
    s.received.lock().unwrap().push(Received {
        headers,
        body,
        status,
    });
    match status {
        Some(code) => StatusCode::from_u16(code).unwrap(),
        None => std::future::pending().await,
    }
}

impl Receiver {
    async fn start(mode: Mode, fail_first: usize) -> Receiver {
        let received = Arc::new(Mutex::new(Vec::new()));
        let state = Arc::new(ReceiverState {
            mode,
            fail_first: AtomicUsize::new(fail_first),
            received: received.clone(),
        });
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(hook))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { url, received }
    }

    fn all(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Bodies answered 200.
    fn delivered(&self) -> Vec<Value> {
        self.all()
            .into_iter()
            .filter(|r| r.status == Some(200))
            .map(|r| r.body)
            .collect()
    }

    /// Waits until the final A2A 1.0 `completed` status update was
    /// delivered (answered 200).
    async fn wait_for_v1_completed(&self) {
        eventually(async || {
            self.delivered()
                .iter()
                .any(|b| b["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED")
        })
        .await;
    }
}

/// The push-config methods of A2A 1.0 on the server at this URL; each
/// returns the whole JSON-RPC response (a result or an error).
struct ConfigsV1<'a>(&'a str);

impl ConfigsV1<'_> {
    /// `CreateTaskPushNotificationConfig` with these params as sent.
    async fn create(&self, params: Value) -> Value {
        rpc_v1(self.0, "CreateTaskPushNotificationConfig", params).await
    }

    async fn get(&self, task_id: &str, id: &str) -> Value {
        let params = json!({"taskId": task_id, "id": id});
        rpc_v1(self.0, "GetTaskPushNotificationConfig", params).await
    }

    async fn list(&self, task_id: &str) -> Value {
        let params = json!({"taskId": task_id});
        rpc_v1(self.0, "ListTaskPushNotificationConfigs", params).await
    }

    async fn delete(&self, task_id: &str, id: &str) -> Value {
        let params = json!({"taskId": task_id, "id": id});
        rpc_v1(self.0, "DeleteTaskPushNotificationConfig", params).await
    }
}

/// The push-config methods of A2A 0.3 (`tasks/pushNotificationConfig/*`)
/// on the server at this URL; each returns the whole JSON-RPC response.
struct ConfigsV03<'a>(&'a str);

impl ConfigsV03<'_> {
    /// `get` of the task's config `config_id`, or of its first one.
    async fn get(&self, task_id: &str, config_id: Option<&str>) -> Value {
        let mut params = json!({"id": task_id});
        if let Some(config_id) = config_id {
            params["pushNotificationConfigId"] = json!(config_id);
        }
        rpc_v03(self.0, "tasks/pushNotificationConfig/get", params).await
    }

    /// `set` of `config` (a `pushNotificationConfig`) on the task.
    async fn set(&self, task_id: &str, config: Value) -> Value {
        let params = json!({"taskId": task_id, "pushNotificationConfig": config});
        rpc_v03(self.0, "tasks/pushNotificationConfig/set", params).await
    }

    async fn list(&self, task_id: &str) -> Value {
        let params = json!({"id": task_id});
        rpc_v03(self.0, "tasks/pushNotificationConfig/list", params).await
    }

    async fn delete(&self, task_id: &str, config_id: &str) -> Value {
        let params = json!({"id": task_id, "pushNotificationConfigId": config_id});
        rpc_v03(self.0, "tasks/pushNotificationConfig/delete", params).await
    }
}

/// Fast retries, and the receiver on 127.0.0.1 allowed.
fn test_settings() -> PushSettings {
    PushSettings::default()
        .allow_private_webhooks(true)
        .backoff(Duration::from_millis(20), Duration::from_millis(100))
}

async fn push_server(runner: ScriptedRunner, settings: PushSettings) -> TestServer {
    let stores = SharedStores::default();
    let server = builder(runner, &stores)
        .push_notifications(Arc::new(MemoryPushConfigStore::new()), settings)
        .build();
    serve(server, &stores).await
}

fn result(response: &Value) -> &Value {
    assert!(response.get("error").is_none(), "{response}");
    &response["result"]
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error: {response}"))
}

/// The single field a 1.0 `StreamResponse` holds.
fn stream_kind(body: &Value) -> &str {
    let object = body.as_object().unwrap();
    let kinds: Vec<&String> = object
        .keys()
        .filter(|k| ["task", "message", "statusUpdate", "artifactUpdate"].contains(&k.as_str()))
        .collect();
    assert_eq!(
        (kinds.len(), object.len()),
        (1, 1),
        "a StreamResponse holds exactly one of task, message, statusUpdate, artifactUpdate: {body}"
    );
    kinds[0]
}

async fn card_capability(url: &str, version: &str) -> Value {
    agent_card(url, Some(version)).await["capabilities"]["pushNotifications"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn v1_configs_with_a_message_receive_stream_responses_with_token_and_auth() {
    let receiver = Receiver::start(Mode::Accept, 0).await;
    let server = push_server(ScriptedRunner::hello(), test_settings()).await;
    assert_eq!(card_capability(&server.url, "1.0").await, true);
    assert_eq!(card_capability(&server.url, "0.3").await, true);

    let task_id = send_v1(
        &server.url,
        json!({"taskPushNotificationConfig": {
        "id": "hook-1", "url": receiver.url, "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}}),
    )
    .await;

    receiver.wait_for_v1_completed().await;
    let all = receiver.all();
    for r in &all {
        assert_eq!(r.headers[PUSH_TOKEN_HEADER], "tok-1");
        assert_eq!(r.headers["authorization"], "Bearer s3cret");
        assert_eq!(r.headers["content-type"], "application/json");
    }
    let kinds: Vec<&str> = all.iter().map(|r| stream_kind(&r.body)).collect();
    // Every A2A event of the turn, in order: the task, working, the two
    // streamed chunks, the final status (internal events never leave).
    assert_eq!(
        kinds,
        [
            "task",
            "statusUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate"
        ],
        "{all:?}"
    );
    assert_eq!(all[0].body["task"]["id"], task_id.as_str());
    assert_eq!(all[4].body["statusUpdate"]["taskId"], task_id.as_str());

    // The config methods on the same task.
    let got = ConfigsV1(&server.url).get(&task_id, "hook-1").await;
    assert_eq!(
        result(&got),
        &json!({"taskId": task_id, "id": "hook-1", "url": receiver.url, "token": "tok-1",
                "authentication": {"scheme": "Bearer", "credentials": "s3cret"}})
    );
    // A config created on a finished task (snake_case, as the TCK sends it).
    let created = ConfigsV1(&server.url)
        .create(json!({"task_id": task_id, "id": "hook-2", "url": "https://example.com/hook"}))
        .await;
    assert_eq!(result(&created)["id"], "hook-2");
    assert_eq!(result(&created)["taskId"], task_id.as_str());
    let listed = ConfigsV1(&server.url).list(&task_id).await;
    let ids: Vec<&str> = result(&listed)["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["hook-1", "hook-2"]);

    for _ in 0..2 {
        // Deleting is idempotent.
        let deleted = ConfigsV1(&server.url).delete(&task_id, "hook-2").await;
        assert_eq!(result(&deleted), &Value::Null);
    }
    let gone = ConfigsV1(&server.url).get(&task_id, "hook-2").await;
    assert_eq!(error_code(&gone), -32001);
    let unknown = ConfigsV1(&server.url)
        .create(json!({"taskId": "no-such-task", "url": "https://example.com/hook"}))
        .await;
    assert_eq!(error_code(&unknown), -32001);
}

#[tokio::test(flavor = "multi_thread")]
async fn v03_configs_receive_the_task() {
    let receiver = Receiver::start(Mode::Accept, 0).await;
    let server = push_server(ScriptedRunner::hello(), test_settings()).await;

    let mut params = v03_message("hi");
    params["configuration"] = json!({"pushNotificationConfig": {
        "url": receiver.url, "token": "tok-03",
        "authentication": {"schemes": ["Bearer"], "credentials": "abc"}}});
    let sent = rpc_v03(&server.url, "message/send", params).await;
    let task_id = result(&sent)["id"].as_str().unwrap().to_owned();

    eventually(async || {
        receiver
            .delivered()
            .iter()
            .any(|b| b["status"]["state"] == "completed")
    })
    .await;
    let all = receiver.all();
    for r in &all {
        assert_eq!(r.headers[PUSH_TOKEN_HEADER], "tok-03");
        assert_eq!(r.headers["authorization"], "Bearer abc");
        // 0.3 webhooks get the Task itself.
        assert_eq!(r.body["kind"], "task", "{}", r.body);
        assert_eq!(r.body["id"], task_id.as_str());
    }
    let last = &all.last().unwrap().body;
    assert_eq!(
        last["status"]["message"]["parts"][0]["text"],
        "Hello, world"
    );

    // set / get / list / delete in their 0.3 shapes. The config sent with
    // the message has the task's id.
    let got = ConfigsV03(&server.url).get(&task_id, None).await;
    assert_eq!(result(&got)["taskId"], task_id.as_str());
    assert_eq!(
        result(&got)["pushNotificationConfig"]["id"],
        task_id.as_str()
    );
    assert_eq!(
        result(&got)["pushNotificationConfig"]["authentication"],
        json!({"schemes": ["Bearer"], "credentials": "abc"})
    );
    let second = json!({"id": "second", "url": "https://example.com/h"});
    let set = ConfigsV03(&server.url).set(&task_id, second).await;
    assert_eq!(result(&set)["pushNotificationConfig"]["id"], "second");
    let listed = ConfigsV03(&server.url).list(&task_id).await;
    assert_eq!(result(&listed).as_array().unwrap().len(), 2);
    let deleted = ConfigsV03(&server.url).delete(&task_id, "second").await;
    assert_eq!(result(&deleted), &Value::Null);
    let listed = ConfigsV03(&server.url).list(&task_id).await;
    assert_eq!(result(&listed).as_array().unwrap().len(), 1);
    // An unknown config id gets the task's first config (as the 0.3 SDK).
    let got = ConfigsV03(&server.url).get(&task_id, Some("default")).await;
    assert_eq!(
        result(&got)["pushNotificationConfig"]["id"],
        task_id.as_str()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_update_answered_500_is_sent_again() {
    let receiver = Receiver::start(Mode::Accept, 2).await;
    let server = push_server(ScriptedRunner::hello(), test_settings()).await;
    let params = configured_message(json!({"taskPushNotificationConfig": {"url": receiver.url}}));
    let sent = rpc_v1(&server.url, "SendMessage", params).await;
    result(&sent);

    eventually(async || receiver.delivered().len() == 5).await;
    let all = receiver.all();
    let statuses: Vec<Option<u16>> = all.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            Some(500),
            Some(500),
            Some(200),
            Some(200),
            Some(200),
            Some(200),
            Some(200)
        ]
    );
    // The first update was sent three times, then the others in order.
    assert_eq!(all[0].body, all[2].body);
    assert_eq!(all[1].body, all[2].body);
    assert_eq!(stream_kind(&all[2].body), "task");
    assert_eq!(
        all[6].body["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn private_webhooks_are_refused_unless_allowed() {
    let receiver = Receiver::start(Mode::Accept, 0).await;
    let server = push_server(ScriptedRunner::hello(), PushSettings::default()).await;

    // With a message: refused before any turn starts.
    let params = configured_message(json!({"taskPushNotificationConfig": {"url": receiver.url}}));
    let refused = rpc_v1(&server.url, "SendMessage", params).await;
    assert_eq!(error_code(&refused), -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("url:"),
        "{refused}"
    );
    let listed = rpc_v1(&server.url, "ListTasks", json!({})).await;
    assert_eq!(result(&listed)["tasks"].as_array().map_or(0, Vec::len), 0);

    // On a task: loopback by address and by name, private, link-local.
    let sent = rpc_v1(&server.url, "SendMessage", v1_message("hi")).await;
    let task_id = result(&sent)["task"]["id"].as_str().unwrap().to_owned();
    for url in [
        receiver.url.clone(),
        receiver.url.replace("127.0.0.1", "localhost"),
        "http://10.0.0.1/hook".into(),
        "http://169.254.169.254/latest/meta-data".into(),
        "http://[::1]:8080/hook".into(),
    ] {
        let refused = ConfigsV1(&server.url)
            .create(json!({"taskId": task_id, "url": url}))
            .await;
        assert_eq!(error_code(&refused), -32602, "{url}: {refused}");
    }
    let listed = ConfigsV1(&server.url).list(&task_id).await;
    assert!(result(&listed)["configs"].as_array().unwrap().is_empty());
    assert!(receiver.all().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_ends_while_its_webhook_hangs() {
    let receiver = Receiver::start(Mode::Hang, 0).await;
    let (runner, gate) = gated_runner();
    let settings = test_settings().request_timeout(Duration::from_secs(600));
    let server = push_server(runner, settings).await;

    let task_id = send_v1(
        &server.url,
        json!({"returnImmediately": true,
        "taskPushNotificationConfig": {"url": receiver.url}}),
    )
    .await;

    // The first update reached the webhook, which holds it and never answers.
    eventually(async || !receiver.all().is_empty()).await;
    gate.add_permits(1);
    wait_for_state(&server.url, &task_id, "TASK_STATE_COMPLETED").await;
    // Still hanging on the first update: nothing else was sent.
    let all = receiver.all();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].status, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_push_the_methods_and_configs_are_refused() {
    let server = start(ScriptedRunner::hello()).await;
    assert_eq!(card_capability(&server.url, "1.0").await, false);
    let sent = rpc_v1(&server.url, "SendMessage", v1_message("hi")).await;
    let task_id = result(&sent)["task"]["id"].as_str().unwrap().to_owned();
    let refused = ConfigsV1(&server.url)
        .create(json!({"taskId": task_id, "url": "https://example.com/hook"}))
        .await;
    assert_eq!(error_code(&refused), -32003);
    let params = configured_message(
        json!({"taskPushNotificationConfig": {"url": "https://example.com/hook"}}),
    );
    let refused = rpc_v1(&server.url, "SendMessage", params).await;
    assert_eq!(error_code(&refused), -32003);
}

/// The official Python SDK (a2a-sdk 1.x, `.tools/venv`, provisioned by
/// `scripts/provision.sh python`) sends a config with a message and
/// creates, gets, lists and deletes configs.
#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_1_x_push_configs() {
    let Some(python) = sdk_1_x_python() else {
        return;
    };
    let receiver = Receiver::start(Mode::Accept, 0).await;
    let stores = SharedStores::default();
    let server = builder(ScriptedRunner::hello(), &stores)
        .auth(looopy_a2a::AuthConfig::none().bearer("py-token", "python"))
        .push_notifications(Arc::new(MemoryPushConfigStore::new()), test_settings())
        .build();
    let server = serve(server, &stores).await;

    let args = [server.url.as_str(), "py-token", &receiver.url];
    let out = run_python(&python, "a2a_push_v1.py", &args).await;

    let task_id = out["task_id"].as_str().unwrap();
    assert_eq!(out["create"]["id"], "py-2");
    assert_eq!(out["create"]["taskId"], task_id);
    assert_eq!(out["get"]["url"], receiver.url.as_str());
    assert_eq!(out["get"]["token"], "py-token-1");
    assert_eq!(out["get"]["authentication"]["scheme"], "Bearer");
    let ids: Vec<&str> = out["list"]["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["py-1", "py-2"]);
    assert_eq!(
        out["list_after_delete"]["configs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_ne!(out["get_deleted"], "no error", "{out}");

    // The config sent with the message got the turn's updates.
    receiver.wait_for_v1_completed().await;
    let first = &receiver.all()[0];
    assert_eq!(first.headers[PUSH_TOKEN_HEADER], "py-token-1");
    assert_eq!(first.headers["authorization"], "Bearer py-cred");
}

/// A turn gated after `working`: task, working, [gate], two chunks, final.
fn gated_runner() -> (ScriptedRunner, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let mut script = hello_script();
    script.insert(2, Step::Gate(gate.clone()));
    (ScriptedRunner::new(vec![script]), gate)
}

fn tokens(received: &[Received]) -> Vec<String> {
    received
        .iter()
        .map(|r| r.headers[PUSH_TOKEN_HEADER].to_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_created_during_a_turn_gets_the_rest_of_it() {
    let receiver = Receiver::start(Mode::Accept, 0).await;
    let (runner, gate) = gated_runner();
    let server = push_server(runner, test_settings()).await;
    let task_id = send_v1(&server.url, json!({"returnImmediately": true})).await;
    wait_for_state(&server.url, &task_id, "TASK_STATE_WORKING").await;

    let created = ConfigsV1(&server.url)
        .create(json!({"taskId": task_id, "url": receiver.url, "token": "late"}))
        .await;
    result(&created);
    gate.add_permits(1);
    receiver.wait_for_v1_completed().await;
    let all = receiver.all();
    assert!(tokens(&all).iter().all(|t| t == "late"));
    let kinds: Vec<&str> = all.iter().map(|r| stream_kind(&r.body)).collect();
    assert_eq!(kinds.last(), Some(&"statusUpdate"));
    assert!(kinds.contains(&"artifactUpdate"), "{kinds:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_config_gets_nothing_more() {
    let receiver = Receiver::start(Mode::Accept, 0).await;
    let (runner, gate) = gated_runner();
    let server = push_server(runner, test_settings()).await;
    let task_id = send_v1(
        &server.url,
        json!({"returnImmediately": true,
        "taskPushNotificationConfig": {"id": "gone", "url": receiver.url, "token": "gone"}}),
    )
    .await;
    // It got the updates before the gate (task, working).
    eventually(async || tokens(&receiver.all()).len() == 2).await;
    // A second config from here on, and the first one deleted.
    let kept = ConfigsV1(&server.url)
        .create(json!({"taskId": task_id, "id": "kept", "url": receiver.url, "token": "kept"}))
        .await;
    result(&kept);
    let deleted = ConfigsV1(&server.url).delete(&task_id, "gone").await;
    result(&deleted);
    gate.add_permits(1);
    eventually(async || {
        receiver.all().iter().any(|r| {
            r.headers[PUSH_TOKEN_HEADER] == "kept"
                && r.body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        })
    })
    .await;
    // After the gate: the two chunks and the final status.
    let t = tokens(&receiver.all());
    assert_eq!(t.iter().filter(|t| *t == "kept").count(), 3, "{t:?}");
    assert_eq!(
        t.iter().filter(|t| *t == "gone").count(),
        2,
        "a deleted config got updates: {t:?}"
    );
}

/// Two servers ("processes") on one Redis: a config created through one,
/// while the turn runs on the other, is stored for both and gets the rest
/// of the turn (the second server follows the turn in the shared log).
#[tokio::test(flavor = "multi_thread")]
async fn two_servers_on_redis_share_configs() {
    let redis = match looopy_testkit::test_redis() {
        Ok(r) => r,
        Err(e) if std::env::var("LOOOPY_SKIP_EXTERNAL").as_deref() == Ok("1") => {
            eprintln!("\n!!!!! SKIPPED: no Redis ({e}) (LOOOPY_SKIP_EXTERNAL=1) !!!!!\n");
            return;
        }
        Err(e) => panic!(
            "no Redis for the tests: {e} (run `scripts/provision.sh redis`, or set LOOOPY_TEST_REDIS_URL)"
        ),
    };
    let config = looopy_stores_redis::RedisConfig::new(redis.url()).with_key_prefix(
        looopy_testkit::conformance::UniqueIds::new()
            .prefix()
            .to_owned(),
    );
    let stores = looopy_stores_redis::connect(config).await.unwrap();
    let configs = stores.push_configs.clone();
    let server = |runner: ScriptedRunner| {
        looopy_a2a::A2aServer::builder(runner, stores.events.clone(), stores.task_records.clone())
            .push_notifications(configs.clone(), test_settings())
            .build()
    };
    let shared = SharedStores::default(); // only for `serve`'s bookkeeping
    let (runner, gate) = gated_runner();
    let a = serve(server(runner), &shared).await;
    let b = serve(server(ScriptedRunner::hello()), &shared).await;
    let receiver = Receiver::start(Mode::Accept, 0).await;

    let task_id = send_v1(&a.url, json!({"returnImmediately": true})).await;
    wait_for_state(&a.url, &task_id, "TASK_STATE_WORKING").await;

    let created = ConfigsV1(&b.url)
        .create(json!({"taskId": task_id, "id": "via-b", "url": receiver.url, "token": "via-b"}))
        .await;
    result(&created);
    let got = ConfigsV1(&a.url).get(&task_id, "via-b").await;
    assert_eq!(result(&got)["url"], receiver.url.as_str());

    gate.add_permits(1);
    receiver.wait_for_v1_completed().await;
    let all = receiver.all();
    assert!(tokens(&all).iter().all(|t| t == "via-b"));
    assert!(
        all.iter().any(|r| stream_kind(&r.body) == "artifactUpdate"),
        "the chunks after the gate reach the webhook"
    );
    configs.delete_all(&task_id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_ending_during_shutdown_still_sends_its_last_update() {
    let receiver = Receiver::start(Mode::Accept, 0).await;
    let (runner, gate) = gated_runner();
    let server = push_server(runner, test_settings()).await;
    let url = server.url.clone();
    let params = configured_message(json!({"returnImmediately": true,
        "taskPushNotificationConfig": {"url": receiver.url}}));
    let sent = rpc_v1(&url, "SendMessage", params).await;
    result(&sent);
    eventually(async || receiver.delivered().len() == 2).await;

    // The server stops taking connections; the turn is still running.
    let stopping = tokio::spawn(server.stop());
    eventually(async || {
        http()
            .get(format!("{url}/.well-known/agent-card.json"))
            .send()
            .await
            .is_err()
    })
    .await;
    gate.add_permits(1);
    stopping.await.unwrap();
    assert!(
        receiver
            .delivered()
            .iter()
            .any(|b| { b["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED" }),
        "{:?}",
        receiver.all()
    );
}

/// Resumes a stranded turn (taking its lease over) with a final
/// `completed`; starts no turn of its own.
struct ResumingRunner {
    lock: Arc<looopy_stores_memory::MemoryTurnLock>,
}

#[async_trait::async_trait]
impl looopy_a2a::TurnRunner for ResumingRunner {
    async fn run_turn(
        &self,
        _: looopy_a2a::TurnRequest,
    ) -> Result<looopy_a2a::TurnEvents, looopy_a2a::RunnerError> {
        Err(looopy_a2a::RunnerError::new(
            "this runner only resumes turns",
        ))
    }

    async fn resume_turn(
        &self,
        request: looopy_a2a::ResumeRequest,
    ) -> Result<Option<looopy_a2a::TurnEvents>, looopy_a2a::RunnerError> {
        use futures::StreamExt;
        use looopy_core::store::TurnLock;
        let won = self
            .lock
            .take_over(
                &request.context_id,
                &request.task_id,
                "this-process",
                Duration::from_secs(30),
            )
            .await
            .map_err(|e| looopy_a2a::RunnerError::new(e.to_string()))?;
        if !won {
            return Ok(None);
        }
        let done = looopy_core::AgentEvent::new(
            request.task_id.clone(),
            request.context_id.clone(),
            looopy_core::EventPayload::StatusUpdate {
                status: looopy_core::TaskStatus::new(looopy_core::TaskState::Completed),
                is_final: true,
                metadata: Default::default(),
            },
        );
        Ok(Some(futures::stream::iter([done]).boxed()))
    }
}

/// A turn whose process died is resumed by another server, which takes over
/// following it for the task's webhooks: the rest of the turn is delivered.
#[tokio::test(flavor = "multi_thread")]
async fn a_recovered_turn_sends_the_rest_of_its_updates() {
    use looopy_core::store::{EventLog, TaskRecord, TaskRecordStore, TurnLock};
    use looopy_core::{AgentEvent, EventPayload, TaskState, TaskStatus};

    let receiver = Receiver::start(Mode::Accept, 0).await;
    let stores = SharedStores::default();
    let lock = Arc::new(looopy_stores_memory::MemoryTurnLock::new());
    let configs = Arc::new(MemoryPushConfigStore::new());

    // What the dead process left: a working task, its first event logged,
    // a push config, and a turn lease that nobody renews.
    let (task_id, context_id) = ("t-stranded", "c-stranded");
    let status = TaskStatus::new(TaskState::Working);
    let first = AgentEvent::new(
        task_id.into(),
        context_id.into(),
        EventPayload::Task {
            status: status.clone(),
            metadata: Default::default(),
        },
    );
    let id = stores
        .events
        .append(task_id, Arc::new(first))
        .await
        .unwrap();
    let mut record = TaskRecord::new(task_id, context_id, None, status);
    record.last_event_id = Some(id);
    record.turns = 1;
    assert!(stores.tasks.compare_and_put(&record).await.unwrap());
    configs
        .put(&looopy_core::store::PushConfig {
            task_id: task_id.into(),
            id: "hook".into(),
            url: receiver.url.clone(),
            token: Some("recovered-token".into()),
            authentication: None,
            protocol_version: "1.0".into(),
        })
        .await
        .unwrap();
    lock.try_acquire(
        context_id,
        "dead-process",
        Some(task_id),
        Duration::from_millis(50),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;

    let server = builder(ResumingRunner { lock: lock.clone() }, &stores)
        .recovery(lock)
        .recovery_scan_interval(Duration::from_millis(50))
        .push_notifications(configs, test_settings())
        .build();
    let server = serve(server, &stores).await;
    receiver.wait_for_v1_completed().await;
    let sent = tokens(&receiver.all());
    assert!(sent.iter().all(|t| t == "recovered-token"), "{sent:?}");
    server.stop().await;
}
