//! The HTTP surface: the agent card routes and the JSON-RPC endpoint (body
//! limit, authentication, envelope, version, then [`dispatch`]).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use tracing::Instrument;

use crate::RpcError;
use crate::jsonrpc;
use crate::server::ServerState;
use crate::server::card::{self, CardInputs};
use crate::server::dispatch::{self, Method, StreamOptions};
use crate::server::progress::{
    self, EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER, TOOL_PROGRESS_EXTENSION,
};
use crate::server::web;
use crate::trace;
use crate::version::{ProtocolVersion, VERSION_HEADER};

/// The routes of a server.
pub(crate) fn router(state: Arc<ServerState>) -> Router {
    let mut router = Router::new()
        .route("/.well-known/agent-card.json", get(card_negotiated))
        .route("/.well-known/agent.json", get(card_legacy))
        .route(&state.rpc_path, post(rpc));
    if state.rpc_path != "/a2a" {
        router = router.route("/a2a", post(rpc));
    }
    if state.rpc_path != "/" {
        router = router.route("/", post(rpc));
    }
    if state.web_ui {
        router = web::routes(router);
    }
    router.with_state(state)
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The JSON-RPC URL clients should use.
fn rpc_url(state: &ServerState, headers: &HeaderMap) -> String {
    let base = match &state.card.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => {
            let host = header_str(headers, "host").unwrap_or("localhost");
            format!("http://{host}")
        }
    };
    if state.rpc_path == "/" {
        format!("{base}/")
    } else {
        format!("{base}{}", state.rpc_path)
    }
}

fn card_response(card: Value) -> Response {
    let mut response = axum::Json(card).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    h.insert(header::VARY, HeaderValue::from_static(VERSION_HEADER));
    response
}

/// `/.well-known/agent-card.json`: the 1.0 card for `A2A-Version: 1.x`, the
/// 0.3 card otherwise.
async fn card_negotiated(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    let inputs = CardInputs {
        config: &state.card,
        auth: &state.auth,
        rpc_url: rpc_url(&state, &headers),
        tool_progress: state.tool_progress,
    };
    match ProtocolVersion::from_header(header_str(&headers, VERSION_HEADER)) {
        Ok(ProtocolVersion::V1_0) => card_response(card::card_v1(&inputs)),
        _ => card_response(card::card_v03(&inputs)),
    }
}

/// `/.well-known/agent.json`: always the 0.3 card.
async fn card_legacy(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    let inputs = CardInputs {
        config: &state.card,
        auth: &state.auth,
        rpc_url: rpc_url(&state, &headers),
        tool_progress: state.tool_progress,
    };
    card_response(card::card_v03(&inputs))
}

fn error_response(status: StatusCode, id: &Value, e: &RpcError) -> Response {
    (status, axum::Json(jsonrpc::failure(id, e))).into_response()
}

fn too_large(limit: usize) -> Response {
    let e = RpcError::invalid_request(format!("payload too large (the limit is {limit} bytes)"));
    error_response(StatusCode::PAYLOAD_TOO_LARGE, &Value::Null, &e)
}

/// The JSON-RPC endpoint.
async fn rpc(State(state): State<Arc<ServerState>>, headers: HeaderMap, body: Body) -> Response {
    let limit = state.max_body_bytes;
    if header_str(&headers, "content-length")
        .and_then(|l| l.parse::<usize>().ok())
        .is_some_and(|l| l > limit)
    {
        return too_large(limit);
    }
    let Some(auth) = state.auth.authenticate(&headers) else {
        let mut response = error_response(
            StatusCode::UNAUTHORIZED,
            &Value::Null,
            &RpcError::unauthenticated(),
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"a2a\""),
        );
        return response;
    };
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => return too_large(limit),
    };
    let request = match jsonrpc::parse_request(&bytes) {
        Ok(r) => r,
        Err((id, e)) => return error_response(StatusCode::OK, &id, &e),
    };
    let version_header = header_str(&headers, VERSION_HEADER);
    let (version, method) = match dispatch::resolve(version_header, &request.method) {
        Ok(found) => found,
        Err(e) => return error_response(StatusCode::OK, &request.id, &e),
    };
    let span = trace::request_span(&request.method, version, &headers);
    let last_event_id = match method {
        Method::Subscribe => header_str(&headers, "last-event-id")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        _ => None,
    };
    // The extension changes only streams: it is activated (and echoed) there.
    let progress = state.tool_progress
        && matches!(method, Method::Stream | Method::Subscribe)
        && progress::requested(&headers);
    let options = StreamOptions {
        last_event_id,
        progress,
    };
    let mut response = dispatch::dispatch(state, auth, version, method, request, options)
        .instrument(span)
        .await;
    if progress {
        let h = response.headers_mut();
        let value = HeaderValue::from_static(TOOL_PROGRESS_EXTENSION);
        if progress::uses_legacy_header(&headers) {
            h.insert(LEGACY_EXTENSIONS_HEADER, value.clone());
        }
        h.insert(EXTENSIONS_HEADER, value);
    }
    response
}
