//! The clients: reqwest over HTTP/1.1 keep-alive, A2A 1.0
//! `SendStreamingMessage`, SSE events counted from the raw bytes.
#![allow(dead_code, reason = "each bench uses part of it")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

/// What one streaming turn saw.
pub(crate) struct Streamed {
    /// From before the request to the first complete `data:` event.
    pub(crate) first_event: Duration,
    /// Events with data.
    pub(crate) events: usize,
}

/// Sends one streaming request and reads the stream to its end.
pub(crate) async fn stream_once(client: &reqwest::Client, url: &str, n: usize) -> Streamed {
    let body = json!({"jsonrpc": "2.0", "id": n, "method": "SendStreamingMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": uuid::Uuid::new_v4().to_string(),
            "parts": [{"text": "go"}]}}})
    .to_string();
    let started = Instant::now();
    let mut response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("A2A-Version", "1.0")
        .body(body)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 200);
    let mut buffer: Vec<u8> = Vec::with_capacity(4096);
    let mut first_event = None;
    let mut events = 0;
    while let Some(chunk) = response.chunk().await.expect("stream") {
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let block = &buffer[..end];
            if block.starts_with(b"data:") || block.windows(6).any(|w| w == b"\ndata:") {
                assert!(
                    !block.windows(8).any(|w| w == b"\"error\":"),
                    "error event: {}",
                    String::from_utf8_lossy(block)
                );
                events += 1;
                first_event.get_or_insert_with(|| started.elapsed());
            }
            buffer.drain(..end + 2);
        }
    }
    Streamed {
        first_event: first_event.expect("no event"),
        events,
    }
}

/// `turns` turns from `concurrency` clients at once; the wall time and what
/// each turn saw.
pub(crate) async fn drive(
    client: &reqwest::Client,
    url: &str,
    concurrency: usize,
    turns: usize,
) -> (Duration, Vec<Streamed>) {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let (client, url, next) = (client.clone(), url.to_owned(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= turns {
                    break;
                }
                seen.push(stream_once(&client, &url, i).await);
            }
            seen
        }));
    }
    let mut all = Vec::with_capacity(turns);
    for w in workers {
        all.extend(w.await.expect("client task"));
    }
    (started.elapsed(), all)
}
