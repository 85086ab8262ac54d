//! `looopy serve` serves the chat page at `/` and offers the tool-progress
//! extension on its card (the page itself is tested in a browser in
//! `crates/looopy-a2a/tests/web_ui.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_looopy");

/// Starts `looopy serve` on an empty configuration; returns it and its address.
fn serve(dir: &tempfile::TempDir) -> (Child, String) {
    let config = dir.path().join("looopy.toml");
    std::fs::write(&config, "").unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--bind", "127.0.0.1:0"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("looopy listening on http://")
        .expect("listening line")
        .to_owned();
    (child, addr)
}

/// A plain HTTP/1.1 GET: the status line, headers and body as one text.
fn get(addr: &str, path: &str, headers: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "looopy serve did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serve_has_the_chat_page_and_the_tool_progress_extension() {
    let dir = tempfile::tempdir().unwrap();
    let (child, addr) = serve(&dir);
    let page = get(&addr, "/", "");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.to_ascii_lowercase()
            .contains("content-type: text/html")
    );
    assert!(page.contains("web/app.js"), "{page}");
    let script = get(&addr, "/web/client.js", "");
    assert!(script.starts_with("HTTP/1.1 200"), "{script}");
    let card = get(
        &addr,
        "/.well-known/agent-card.json",
        "A2A-Version: 1.0\r\n",
    );
    assert!(
        card.contains("https://looopy.dev/extensions/tool-progress/v1"),
        "{card}"
    );
    stop(child);
}
