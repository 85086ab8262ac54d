//! The HTTP surface: the agent card routes and the JSON-RPC endpoint (body
//! limit, authentication, envelope, version, then [`dispatch`]).

use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use tracing::Instrument;

use crate::RpcError;
use crate::jsonrpc;
use crate::server::ServerState;
use crate::server::card::{self, CardInputs};
use crate::server::dispatch::{self, StreamOptions};
use crate::server::progress::{
    self, EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER, TOOL_PROGRESS_EXTENSION,
};
use crate::server::{rest, web};
use crate::trace;
use crate::version::{ProtocolVersion, VERSION_HEADER};
use crate::wire;

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
    router = rest::routes(router);
    if state.web_ui {
        router = web::routes(router);
    }
    #[cfg(feature = "grpc")]
    let grpc = super::grpc::routes(state.clone());
    let router = router.with_state(state);
    #[cfg(feature = "grpc")]
    let router = router.merge(grpc);
    router
}

pub(crate) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
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
    let from_query = query.and_then(|q| {
        q.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            k.eq_ignore_ascii_case(VERSION_HEADER).then_some(v)
        })
    });
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
        rest_url: format!("{}{}", base_url(state, headers), rest::REST_PATH),
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

fn error_response(status: StatusCode, id: &Value, e: &RpcError) -> Response {
    (status, axum::Json(jsonrpc::failure(id, e))).into_response()
}

fn too_large(limit: usize) -> Response {
    let e = RpcError::invalid_request(format!("payload too large (the limit is {limit} bytes)"));
    error_response(StatusCode::PAYLOAD_TOO_LARGE, &Value::Null, &e)
}

/// -32005 for a body declared as something else than JSON (`Content-Type`
/// other than `application/json` or a `+json` type); a request without the
/// header is read as JSON.
pub(crate) fn content_type_error(headers: &HeaderMap) -> Option<RpcError> {
    let declared = header_str(headers, "content-type")?;
    let essence = declared.split(';').next().unwrap_or("").trim();
    let json = essence.eq_ignore_ascii_case("application/json")
        || essence
            .rsplit_once('+')
            .is_some_and(|(_, suffix)| suffix.eq_ignore_ascii_case("json"));
    (!json).then(|| RpcError::content_type_not_supported(essence))
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
    if let Some(e) = content_type_error(&headers) {
        return error_response(StatusCode::OK, &Value::Null, &e);
    }
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => return too_large(limit),
    };
    let mut request = match jsonrpc::parse_request(&bytes) {
        Ok(r) => r,
        Err((id, e)) => return error_response(StatusCode::OK, &id, &e),
    };
    let version_header = header_str(&headers, VERSION_HEADER);
    let (version, method) = match dispatch::resolve(version_header, &request.method) {
        Ok(found) => found,
        Err(e) => return error_response(StatusCode::OK, &request.id, &e),
    };
    wire::normalize_params(version, &mut request.params);
    let span = trace::request_span(&request.method, version, &headers);
    let options = StreamOptions::of(&state, method, &headers);
    let progress = options.progress;
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
