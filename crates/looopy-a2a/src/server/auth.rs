//! [`AuthConfig`]: bearer tokens and API keys from configuration, each
//! naming a principal.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use looopy_core::AuthContext;

/// The header carrying API keys.
pub const API_KEY_HEADER: &str = "X-API-Key";

/// The principal of requests when authentication is off.
pub const ANONYMOUS: &str = "anonymous";

/// Who may call the server: bearer tokens (`Authorization: Bearer <token>`)
/// and API keys (`X-API-Key: <key>`), each mapped to a principal name.
///
/// With no token and no key configured, authentication is off and every
/// request acts as [`ANONYMOUS`]. Otherwise every request but the agent card
/// must present one, or gets HTTP 401 with `WWW-Authenticate: Bearer`.
/// Tasks and contexts are visible only to the principal that created them.
///
/// `Debug` never prints the secrets.
#[derive(Clone, Default)]
pub struct AuthConfig {
    bearer: Vec<(String, String)>,
    api_keys: Vec<(String, String)>,
}

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |v: &[(String, String)]| v.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>();
        f.debug_struct("AuthConfig")
            .field("bearer_principals", &names(&self.bearer))
            .field("api_key_principals", &names(&self.api_keys))
            .finish()
    }
}

impl AuthConfig {
    /// No credentials: authentication off.
    pub fn none() -> Self {
        Self::default()
    }

    /// Accepts `Authorization: Bearer <token>` as `principal`.
    pub fn bearer(mut self, token: impl Into<String>, principal: impl Into<String>) -> Self {
        self.bearer.push((token.into(), principal.into()));
        self
    }

    /// Accepts `X-API-Key: <key>` as `principal`.
    pub fn api_key(mut self, key: impl Into<String>, principal: impl Into<String>) -> Self {
        self.api_keys.push((key.into(), principal.into()));
        self
    }

    /// Whether any credential is configured.
    pub fn is_enabled(&self) -> bool {
        !self.bearer.is_empty() || !self.api_keys.is_empty()
    }

    /// Whether bearer tokens are configured.
    pub(crate) fn has_bearer(&self) -> bool {
        !self.bearer.is_empty()
    }

    /// Whether API keys are configured.
    pub(crate) fn has_api_keys(&self) -> bool {
        !self.api_keys.is_empty()
    }

    /// The caller of a request, or `None` when it must be refused.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Option<AuthContext> {
        if !self.is_enabled() {
            return Some(AuthContext::new(ANONYMOUS));
        }
        if let Some(token) = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token)
            && let Some(principal) = lookup(&self.bearer, token)
        {
            return Some(AuthContext::new(principal).with_credentials(token));
        }
        let key = headers.get(API_KEY_HEADER).and_then(|v| v.to_str().ok())?;
        lookup(&self.api_keys, key.trim())
            .map(|principal| AuthContext::new(principal).with_credentials(key.trim()))
    }
}

/// `routes` behind `auth`: a request without valid credentials gets 401
/// (`WWW-Authenticate: Bearer`, a JSON error body); any other goes on with
/// its caller's [`AuthContext`] in its extensions.
pub(crate) fn authenticated(routes: axum::Router, auth: &AuthConfig) -> axum::Router {
    let auth = auth.clone();
    routes.layer(axum::middleware::from_fn(
        move |mut request: axum::extract::Request, next: axum::middleware::Next| {
            let caller = auth.authenticate(request.headers());
            async move {
                match caller {
                    Some(caller) => {
                        request.extensions_mut().insert(caller);
                        next.run(request).await
                    }
                    None => unauthenticated(),
                }
            }
        },
    ))
}

/// The answer to a request without valid credentials, outside the A2A
/// bindings (which answer in their own error forms).
fn unauthenticated() -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        axum::http::StatusCode::UNAUTHORIZED,
        [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
        axum::Json(serde_json::json!({
            "error": "unauthenticated",
            "message": "this endpoint needs `Authorization: Bearer <token>` or `X-API-Key: <key>`"
        })),
    )
        .into_response()
}

fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Finds the principal of `secret`, comparing every entry in constant time.
fn lookup<'a>(entries: &'a [(String, String)], secret: &str) -> Option<&'a str> {
    let mut found = None;
    for (s, principal) in entries {
        if constant_time_eq(s.as_bytes(), secret.as_bytes()) {
            found = Some(principal.as_str());
        }
    }
    found
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn tokens_and_keys_name_principals() {
        let auth = AuthConfig::none()
            .bearer("t-a", "alice")
            .api_key("k-b", "bob");
        let who = |h: HeaderMap| auth.authenticate(&h).map(|a| a.principal);
        assert_eq!(
            who(headers(&[("authorization", "Bearer t-a")])).as_deref(),
            Some("alice")
        );
        assert_eq!(
            who(headers(&[("authorization", "bearer  t-a ")])).as_deref(),
            Some("alice")
        );
        assert_eq!(
            who(headers(&[("x-api-key", "k-b")])).as_deref(),
            Some("bob")
        );
        assert_eq!(who(headers(&[("authorization", "Bearer k-b")])), None);
        assert_eq!(who(headers(&[("authorization", "Basic t-a")])), None);
        assert_eq!(who(headers(&[])), None);
        let anon = AuthConfig::none().authenticate(&HeaderMap::new()).unwrap();
        assert_eq!(anon.principal, ANONYMOUS);
        assert!(!format!("{auth:?}").contains("t-a"));
    }
}
