//! The routes of a server: the agent card, the three bindings (JSON-RPC
//! at the configured paths, HTTP+JSON under [`REST_PATH`], gRPC with the
//! `grpc` feature), each in its request span, and the chat page.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post_service};
use serde_json::Value;

use crate::server::card::{self, CardInputs};
use crate::server::extract::{header_str, version_query};
use crate::server::layers::traced;
use crate::server::rest::{self, REST_PATH};
use crate::server::state::ServerState;
use crate::server::{records, rpc, web};
use crate::version::{ProtocolVersion, VERSION_HEADER};

/// The paths that serve JSON-RPC whatever the configured `rpc_path` (the
/// one the card advertises): `/`, `/a2a`, and `/api/a2a`, where clients
/// written for other A2A servers post.
const RPC_PATHS: [&str; 3] = ["/", "/a2a", "/api/a2a"];

/// The routes of a server.
pub(crate) fn router(state: Arc<ServerState>) -> Router {
    let rpc = || post_service(traced("jsonrpc", &state, rpc::endpoint));
    let mut router = Router::new()
        .route("/.well-known/agent-card.json", get(card_negotiated))
        .route("/.well-known/agent.json", get(card_legacy))
        .route(&state.rpc_path, rpc());
    for path in RPC_PATHS {
        if state.rpc_path != path {
            router = router.route(path, rpc());
        }
    }
    router = router.nest(REST_PATH, rest::routes(&state));
    router = router
        .route(
            records::RECORD_ROUTE,
            axum::routing::get_service(traced("http", &state, records::get_record)),
        )
        .route(
            records::RECORDS_ROUTE,
            axum::routing::get_service(traced("http", &state, records::get_records)),
        );
    if state.web_ui {
        router = web::routes(router);
    }
    #[cfg(feature = "grpc")]
    let router = router.merge(super::grpc::routes(state.clone()));
    router.with_state(state)
}

/// The server's base URL: the configured public one, else from `Host`.
fn base_url(state: &ServerState, headers: &HeaderMap) -> String {
    match &state.card.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => {
            let host = header_str(headers, "host").unwrap_or("localhost");
            format!("http://{host}")
        }
    }
}

/// `host:port` of a base URL: what gRPC clients dial.
fn authority(base: &str) -> String {
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// The JSON-RPC URL clients should use.
fn rpc_url(state: &ServerState, headers: &HeaderMap) -> String {
    let base = base_url(state, headers);
    if state.rpc_path == "/" {
        format!("{base}/")
    } else {
        format!("{base}{}", state.rpc_path)
    }
}

/// When this process started serving: the card's `Last-Modified` (the card
/// is built from configuration, which changes only with a restart).
fn started() -> &'static str {
    static STARTED: OnceLock<String> = OnceLock::new();
    STARTED.get_or_init(|| {
        chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string()
    })
}

/// A weak validator of the card's content (spec §8.6): the same card gets
/// the same tag, in every process running the same build.
fn etag(body: &[u8]) -> String {
    let mut hasher = std::hash::DefaultHasher::new();
    body.hash(&mut hasher);
    format!("W/\"{:016x}\"", hasher.finish())
}

/// The card with its caching headers (spec §8.6): `Cache-Control`, a weak
/// `ETag` (a request whose `If-None-Match` names it gets 304),
/// `Last-Modified`, and `Vary: A2A-Version` (the card depends on it).
fn card_response(card: &Value, request: &HeaderMap) -> Response {
    let body = serde_json::to_vec(card).unwrap_or_default();
    let tag = etag(&body);
    let unchanged = header_str(request, "if-none-match").is_some_and(|h| {
        h.split(',')
            .map(|c| c.trim().trim_start_matches("W/"))
            .any(|c| c == "*" || c == tag.trim_start_matches("W/"))
    });
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    h.insert(header::VARY, HeaderValue::from_static(VERSION_HEADER));
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(started()) {
        h.insert(header::LAST_MODIFIED, v);
    }
    response
}

/// The version a card request asks for: its `A2A-Version` header, else its
/// `A2A-Version` query parameter (spec §3.6.1 allows either), else the
/// server's default. An unknown version gets the default too: a card is
/// never refused.
fn card_version(state: &ServerState, headers: &HeaderMap, query: Option<&str>) -> ProtocolVersion {
    let from_query = version_query(query);
    header_str(headers, VERSION_HEADER)
        .or(from_query)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .and_then(|v| v.parse().ok())
        .unwrap_or(state.card_default)
}

fn card_inputs<'a>(state: &'a ServerState, headers: &HeaderMap) -> CardInputs<'a> {
    CardInputs {
        config: &state.card,
        auth: &state.auth,
        rpc_url: rpc_url(state, headers),
        rest_url: format!("{}{REST_PATH}", base_url(state, headers)),
        grpc_url: cfg!(feature = "grpc").then(|| authority(&base_url(state, headers))),
        tool_progress: state.tool_progress,
    }
}

/// `/.well-known/agent-card.json`: the card of the version the request
/// names ([`card_version`]).
async fn card_negotiated(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let inputs = card_inputs(&state, &headers);
    match card_version(&state, &headers, uri.query()) {
        ProtocolVersion::V1_0 => card_response(&card::card_v1(&inputs), &headers),
        ProtocolVersion::V0_3 => card_response(&card::card_v03(&inputs), &headers),
    }
}

/// `/.well-known/agent.json` (the path of 0.2 and 0.3 clients): always the
/// 0.3 card.
async fn card_legacy(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    card_response(&card::card_v03(&card_inputs(&state, &headers)), &headers)
}
