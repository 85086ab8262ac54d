//! `looopy serve` serves the chat page at `/` and offers the tool-progress
//! extension on its card (the page itself is tested in a browser in
//! `crates/looopy-a2a/tests/web_ui.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use support::{serve, stop, write_config};

/// Starts `looopy serve` on an empty configuration; returns it and its address.
fn serve_empty(dir: &tempfile::TempDir) -> (std::process::Child, String) {
    let (child, url) = serve(&write_config(dir, ""), &[]);
    (child, url.trim_start_matches("http://").to_owned())
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

#[test]
fn serve_has_the_chat_page_and_the_tool_progress_extension() {
    let dir = tempfile::tempdir().unwrap();
    let (child, addr) = serve_empty(&dir);
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
