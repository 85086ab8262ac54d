//! What every binding reads from a request beside its parameters, as axum
//! extractors: the caller ([`Caller`]), the protocol version
//! ([`NamedVersion`] for JSON-RPC, [`OnlyV1`] for HTTP+JSON and gRPC), the
//! extensions ([`Extensions`]), `Last-Event-ID` ([`LastEventId`]), and the
//! body ([`JsonBody`]: within the limit, declared as JSON). [`Call`] is the
//! three first together, for the bindings that serve 1.0 only.
//!
//! Each rejection is an [`RpcError`]; a binding takes `Result<X, RpcError>`
//! where it answers the error its own way (JSON-RPC, for one, answers with
//! the request's id, known only once the body is read).

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use looopy_core::AuthContext;

use crate::RpcError;
use crate::server::progress::{
    self, EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER, TOOL_PROGRESS_EXTENSION,
};
use crate::server::service::Call;
use crate::server::state::ServerState;
use crate::version::{ProtocolVersion, VERSION_HEADER};

/// A header's value, when it is there and text.
pub(crate) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The `A2A-Version` query parameter (spec §3.6.1 allows it in place of
/// the header).
pub(crate) fn version_query(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.eq_ignore_ascii_case(VERSION_HEADER).then_some(v)
    })
}

/// The caller, authenticated by the server's [`AuthConfig`](crate::AuthConfig):
/// rejected with -32000 (HTTP 401) without valid credentials.
pub(crate) struct Caller(pub(crate) AuthContext);

impl FromRequestParts<Arc<ServerState>> for Caller {
    type Rejection = RpcError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<ServerState>,
    ) -> Result<Self, RpcError> {
        state
            .auth
            .authenticate(&parts.headers)
            .map(Caller)
            .ok_or_else(RpcError::unauthenticated)
    }
}

/// The version the `A2A-Version` header names (`None`: no header, or an
/// empty one); rejected with -32009 when it is not one this server speaks.
pub(crate) struct NamedVersion(pub(crate) Option<ProtocolVersion>);

impl<S: Send + Sync> FromRequestParts<S> for NamedVersion {
    type Rejection = RpcError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, RpcError> {
        match header_str(&parts.headers, VERSION_HEADER).map(str::trim) {
            None | Some("") => Ok(NamedVersion(None)),
            Some(v) => v
                .parse()
                .map(|v| NamedVersion(Some(v)))
                .map_err(|_| RpcError::version_not_supported(v)),
        }
    }
}

/// The version of a request to a binding that serves 1.0 only (HTTP+JSON,
/// gRPC): named by the header, else the query parameter; none means 1.0,
/// another one is refused (-32009).
pub(crate) struct OnlyV1;

impl<S: Send + Sync> FromRequestParts<S> for OnlyV1 {
    type Rejection = RpcError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, RpcError> {
        let named =
            header_str(&parts.headers, VERSION_HEADER).or_else(|| version_query(parts.uri.query()));
        match named.map(str::trim) {
            None | Some("") => Ok(OnlyV1),
            Some(v) => match v.parse() {
                Ok(ProtocolVersion::V1_0) => Ok(OnlyV1),
                _ => Err(RpcError::version_not_supported(v)),
            },
        }
    }
}

/// The extensions a request activates that this server offers: today the
/// tool-progress extension (header `A2A-Extensions`, or the 0.3
/// `X-A2A-Extensions`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extensions {
    /// The request activates tool progress and the server offers it.
    pub(crate) progress: bool,
    /// The request named its extensions in the 0.3 header.
    legacy: bool,
}

impl Extensions {
    /// Echoes the activated extensions on the response of a stream (the
    /// extension changes only streams), in the header names the request used.
    pub(crate) fn echo(self, response: &mut Response) {
        if !self.progress {
            return;
        }
        let h = response.headers_mut();
        let value = HeaderValue::from_static(TOOL_PROGRESS_EXTENSION);
        if self.legacy {
            h.insert(LEGACY_EXTENSIONS_HEADER, value.clone());
        }
        h.insert(EXTENSIONS_HEADER, value);
    }
}

impl FromRequestParts<Arc<ServerState>> for Extensions {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<ServerState>,
    ) -> Result<Self, Infallible> {
        Ok(Extensions {
            progress: state.tool_progress && progress::requested(&parts.headers),
            legacy: progress::uses_legacy_header(&parts.headers),
        })
    }
}

/// The `Last-Event-ID` a subscription resumes after.
#[derive(Debug, Clone)]
pub(crate) struct LastEventId(pub(crate) Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for LastEventId {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        Ok(LastEventId(
            header_str(&parts.headers, "last-event-id")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        ))
    }
}

/// A 1.0 request's caller, version and extensions.
impl FromRequestParts<Arc<ServerState>> for Call {
    type Rejection = RpcError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<ServerState>,
    ) -> Result<Self, RpcError> {
        let Caller(auth) = Caller::from_request_parts(parts, state).await?;
        OnlyV1::from_request_parts(parts, state).await?;
        let Ok(extensions) = Extensions::from_request_parts(parts, state).await;
        Ok(Call {
            auth,
            version: ProtocolVersion::V1_0,
            progress: extensions.progress,
        })
    }
}

/// -32005 for a body declared as something else than JSON (`Content-Type`
/// other than `application/json` or a `+json` type); a request without the
/// header is read as JSON.
fn content_type_error(headers: &HeaderMap) -> Option<RpcError> {
    let declared = header_str(headers, header::CONTENT_TYPE.as_str())?;
    let essence = declared.split(';').next().unwrap_or("").trim();
    let json = essence.eq_ignore_ascii_case("application/json")
        || essence
            .rsplit_once('+')
            .is_some_and(|(_, suffix)| suffix.eq_ignore_ascii_case("json"));
    (!json).then(|| RpcError::content_type_not_supported(essence))
}

/// A request body of at most the server's
/// [`max_body_bytes`](crate::A2aServerBuilder::max_body_bytes), declared as
/// JSON when it is not empty. A larger one is refused with
/// [`RpcError::payload_too_large`] (HTTP 413): from its `Content-Length`
/// before any of it is read, else once the limit is passed.
///
/// The limit is applied here, on the body as it is read, rather than by a
/// layer that wraps the body: axum boxes every request body a layer
/// changes the type of.
pub(crate) struct JsonBody(pub(crate) Bytes);

impl FromRequest<Arc<ServerState>> for JsonBody {
    type Rejection = RpcError;

    async fn from_request(req: Request, state: &Arc<ServerState>) -> Result<Self, RpcError> {
        let limit = state.max_body_bytes;
        let headers = req.headers();
        if header_str(headers, header::CONTENT_LENGTH.as_str())
            .and_then(|l| l.parse::<usize>().ok())
            .is_some_and(|l| l > limit)
        {
            return Err(RpcError::payload_too_large(limit));
        }
        let declared = content_type_error(headers);
        let bytes = axum::body::to_bytes(req.into_body(), limit)
            .await
            .map_err(|_| RpcError::payload_too_large(limit))?;
        match declared {
            Some(e) if !bytes.is_empty() => Err(e),
            _ => Ok(JsonBody(bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use axum::http::Request as HttpRequest;

    use super::*;

    async fn only_v1(uri: &str, header: Option<&str>) -> Result<(), i32> {
        let mut request = HttpRequest::builder().uri(uri);
        if let Some(h) = header {
            request = request.header(VERSION_HEADER, h);
        }
        let (mut parts, ()) = request.body(()).unwrap().into_parts();
        OnlyV1::from_request_parts(&mut parts, &())
            .await
            .map(drop)
            .map_err(|e| e.code)
    }

    #[tokio::test]
    async fn the_1_0_bindings_serve_only_1_0() {
        assert_eq!(only_v1("/x", None).await, Ok(()));
        assert_eq!(only_v1("/x?A2A-Version=0.3", None).await, Err(-32009));
        assert_eq!(only_v1("/x", Some("1.0")).await, Ok(()));
        assert_eq!(only_v1("/x", Some("9.9")).await, Err(-32009));
    }

    #[test]
    fn json_is_any_json_media_type() {
        let mut h = HeaderMap::new();
        assert!(content_type_error(&h).is_none());
        for ok in ["application/json", "application/a2a+json; charset=utf-8"] {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ok));
            assert!(content_type_error(&h).is_none(), "{ok}");
        }
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(content_type_error(&h).unwrap().code, -32005);
    }
}
