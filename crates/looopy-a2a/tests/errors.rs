//! Bad input gets the JSON-RPC error the spec names, never a 500.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::json;
use support::*;

async fn code(url: &str, version: Option<&str>, body: &str) -> (u16, i64) {
    let (status, v) = rpc_raw(url, version, &[], body.to_owned()).await;
    (
        status,
        v["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error in {v}")),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn envelope_errors() {
    let server = start(ScriptedRunner::hello()).await;
    let url = &server.url;
    // (A2A-Version header, body, the error code expected with HTTP 200.)
    let cases: &[(Option<&str>, &str, i64)] = &[
        (None, "{not json", -32700),
        (None, "", -32700),
        (None, "[]", -32600),
        (
            None,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tasks/get"}]"#,
            -32600,
        ),
        (None, r#"{"jsonrpc":"2.0","id":1}"#, -32600),
        // No id: answered all the same (A2A has no notifications).
        (
            None,
            r#"{"jsonrpc":"2.0","method":"message/ssend"}"#,
            -32601,
        ),
        (
            None,
            r#"{"jsonrpc":"2.0","method":"message/send","params":{"":"x"}}"#,
            -32602,
        ),
        (
            None,
            r#"{"jsonrpc":"1.0","id":1,"method":"tasks/get"}"#,
            -32600,
        ),
        (
            None,
            r#"{"jsonrpc":"2.0","id":{},"method":"tasks/get"}"#,
            -32600,
        ),
        (None, r#"{"jsonrpc":"2.0","id":1,"method":5}"#, -32600),
        (
            None,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":3}"#,
            -32600,
        ),
        (
            None,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/nope"}"#,
            -32601,
        ),
        (
            Some("1.0"),
            r#"{"jsonrpc":"2.0","id":1,"method":"Nope"}"#,
            -32601,
        ),
    ];
    for (version, body, want) in cases {
        assert_eq!(code(url, *version, body).await, (200, *want), "{body}");
    }
    // The id is echoed when it could be read.
    let (_, v) = rpc_raw(
        url,
        None,
        &[],
        r#"{"jsonrpc":"2.0","id":"abc","method":"nope"}"#.into(),
    )
    .await;
    assert_eq!(v["id"], "abc");
    assert_eq!(v["error"]["data"][0]["reason"], "METHOD_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn version_errors() {
    let server = start(ScriptedRunner::hello()).await;
    let url = &server.url;
    let send1 = json!({"jsonrpc":"2.0","id":1,"method":"SendMessage","params": v1_message("x")})
        .to_string();
    assert_eq!(code(url, Some("0.5"), &send1).await, (200, -32009));
    assert_eq!(code(url, Some("2.0"), &send1).await, (200, -32009));
    // A method of the other version under an explicit header.
    assert_eq!(code(url, Some("0.3"), &send1).await, (200, -32009));
    let send03 = json!({"jsonrpc":"2.0","id":1,"method":"message/send","params": v03_message("x")})
        .to_string();
    assert_eq!(code(url, Some("1.0"), &send03).await, (200, -32009));
}

#[tokio::test(flavor = "multi_thread")]
async fn params_errors() {
    let server = start(ScriptedRunner::hello()).await;
    let url = &server.url;
    let call = |method: &str, params: serde_json::Value, v: Option<&'static str>| {
        let body = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}).to_string();
        let url = url.clone();
        async move { code(&url, v, &body).await }
    };
    let v1 = Some("1.0");
    // (method, params, A2A-Version header, the error code expected with HTTP 200.)
    let cases = [
        ("SendMessage", json!({}), v1, -32602),
        ("SendMessage", json!([1]), v1, -32602),
        (
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": []}}),
            v1,
            -32602,
        ),
        (
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"bogus": 1}]}}),
            v1,
            -32602,
        ),
        (
            "SendMessage",
            json!({"message": {"role": "ROLE_AGENT", "messageId": "m", "parts": [{"text": "x"}]}}),
            v1,
            -32602,
        ),
        ("GetTask", json!({}), v1, -32602),
        ("GetTask", json!({"id": 5}), v1, -32602),
        (
            "message/send",
            json!({"message": {"role": "user", "messageId": "m", "parts": [{"kind": "text"}]}}),
            None,
            -32602,
        ),
        (
            "message/send",
            json!({"message": {"role": "user", "parts": [{"kind": "text", "text": "x"}]}}),
            None,
            -32602,
        ),
        ("tasks/get", json!({"id": "nope"}), None, -32001),
        ("tasks/cancel", json!({"id": "nope"}), None, -32001),
        ("GetTask", json!({"id": "nope"}), v1, -32001),
    ];
    for (method, params, version, want) in cases {
        let what = format!("{method} {params}");
        assert_eq!(call(method, params, version).await, (200, want), "{what}");
    }

    // The field at fault is named.
    let body = json!({"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id": 5}}).to_string();
    let (_, v) = rpc_raw(url, v1, &[], body).await;
    assert!(
        v["error"]["message"].as_str().unwrap().contains("id"),
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn media_types_the_card_does_not_accept_are_refused() {
    let server = start(ScriptedRunner::hello()).await;
    let mut params = v1_message("look");
    params["message"]["parts"] =
        json!([{"raw": "iVBORw0KGgo=", "mediaType": "image/png", "filename": "a.png"}]);
    let r = rpc_v1(&server.url, "SendMessage", params).await;
    assert_eq!(r["error"]["code"], -32005);
    let mut params = v03_message("look");
    params["message"]["parts"] =
        json!([{"kind": "file", "file": {"uri": "http://x/a.mp4", "mimeType": "video/mp4"}}]);
    let r = rpc_v03(&server.url, "message/send", params).await;
    assert_eq!(r["error"]["code"], -32005);
    // JSON data is accepted by default.
    let mut params = v03_message("x");
    params["message"]["parts"] = json!([{"kind": "data", "data": {"a": 1}}]);
    let r = rpc_v03(&server.url, "message/send", params).await;
    assert_eq!(r["result"]["status"]["state"], "completed");
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_bodies_get_413_with_a_json_rpc_error() {
    let stores = SharedStores::default();
    let server = serve(
        builder(ScriptedRunner::hello(), &stores)
            .max_body_bytes(1024)
            .build(),
        &stores,
    )
    .await;
    let mut params = v03_message(&"x".repeat(4096));
    params["message"]["messageId"] = json!("m");
    let body = json!({"jsonrpc":"2.0","id":1,"method":"message/send","params":params}).to_string();
    let (status, v) = rpc_raw(&server.url, None, &[], body.clone()).await;
    assert_eq!(status, 413);
    assert_eq!(v["error"]["code"], -32600);
    // Also without a Content-Length (chunked): the body is written in one
    // go, small enough for the socket buffers, so the server's early answer
    // cannot turn into a broken pipe on our side.
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let status_line = raw_post(
        &server.url,
        "Transfer-Encoding: chunked",
        chunked.as_bytes(),
    )
    .await;
    assert!(status_line.starts_with("HTTP/1.1 413"), "{status_line}");
    // The server is fine afterwards.
    let r = rpc_v03(&server.url, "message/send", v03_message("small")).await;
    assert_eq!(r["result"]["status"]["state"], "completed");
    // And the default limit is 1 MiB. The server answers from the declared
    // length alone; sending the 2 MiB body as well would race its early
    // answer (the client may see a broken pipe instead of the response), so
    // this client declares the length and waits for the answer.
    let default = start(ScriptedRunner::hello()).await;
    let status_line = declare_only(&default.url, 2 << 20).await;
    assert!(status_line.starts_with("HTTP/1.1 413"), "{status_line}");
}

/// Sends a POST that declares `length` bytes of body without sending them,
/// and returns the response's status line.
async fn declare_only(url: &str, length: usize) -> String {
    raw_post(url, &format!("Content-Length: {length}"), b"").await
}

/// Sends a POST with this framing header and these body bytes over a plain
/// TCP connection, and returns the response's status line.
async fn raw_post(url: &str, framing: &str, body: &[u8]) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut line = String::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        BufReader::new(stream).read_line(&mut line),
    )
    .await
    .expect("the server answers")
    .unwrap();
    line
}
