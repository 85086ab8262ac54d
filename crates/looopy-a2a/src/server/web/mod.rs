//! The chat page ([`A2aServerBuilder::web_ui`](crate::A2aServerBuilder::web_ui)):
//! plain HTML, CSS and JavaScript compiled into the binary, served at `GET /`
//! and `GET /web/*`. The page is a client like any other: it speaks A2A 1.0
//! JSON-RPC to the server's endpoint with `fetch`, parses the SSE streams
//! itself and activates the tool-progress extension. See `docs/web.md`.
//!
//! The page is served without authentication (it holds no data); every
//! JSON-RPC call it makes is authenticated as usual. A strict
//! `Content-Security-Policy` keeps it to this origin.

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::server::state::ServerState;

const INDEX_HTML: &str = include_str!("index.html");
const APP_CSS: &str = include_str!("app.css");
const CLIENT_JS: &str = include_str!("client.js");
const VIEW_JS: &str = include_str!("view.js");
const MARKDOWN_JS: &str = include_str!("markdown.js");
const APP_JS: &str = include_str!("app.js");
const TIMELINE_JS: &str = include_str!("timeline.js");

/// Everything the page loads comes from this origin; nothing is inlined.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// Adds the page's routes (`GET` only; `POST /` stays the JSON-RPC endpoint).
pub(crate) fn routes(router: Router<Arc<ServerState>>) -> Router<Arc<ServerState>> {
    router
        .route(
            "/",
            get(|| async { asset(INDEX_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/web/app.css",
            get(|| async { asset(APP_CSS, "text/css; charset=utf-8") }),
        )
        .route(
            "/web/client.js",
            get(|| async { asset(CLIENT_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/web/view.js",
            get(|| async { asset(VIEW_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/web/markdown.js",
            get(|| async { asset(MARKDOWN_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/web/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/web/timeline.js",
            get(|| async { asset(TIMELINE_JS, "text/javascript; charset=utf-8") }),
        )
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // The page changes with the binary: always revalidate.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}
