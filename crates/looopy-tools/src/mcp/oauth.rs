//! OAuth 2.0 client credentials for MCP servers over streamable HTTP
//! (feature `mcp-oauth`), on rmcp's authorization client.
//!
//! rmcp finds the authorization server (the MCP server's protected-resource
//! metadata, RFC 9728, then the authorization server's own metadata, RFC
//! 8414) and makes the token request. What rmcp's `AuthClient` does not do
//! for this grant is fetch a new token when the one held expires: the grant
//! has no refresh token, so rmcp would send the next request without one.
//! [`OAuthHttpClient`] does it: it fetches a token before the session, a new
//! one shortly before the held one expires, and a new one when the server
//! answers 401 (a token it revoked or expired early), then sends that
//! request again once.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthError, AuthorizationManager, ClientCredentialsConfig};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};

use super::open_error::OpenError;

/// A client's credentials for the OAuth 2.0 client credentials grant
/// (`client_secret_post`, or `client_secret_basic` when the authorization
/// server takes only that): see
/// [`HttpServer::with_oauth_client_credentials`](super::HttpServer::with_oauth_client_credentials).
#[derive(Clone)]
pub struct OAuthClientCredentials {
    /// The client's id at the authorization server.
    pub client_id: String,
    /// Its secret.
    pub client_secret: String,
    /// The scopes asked for (none: the authorization server's default).
    pub scopes: Vec<String>,
}

impl fmt::Debug for OAuthClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// How long before its expiry a token is replaced, at most: a request sent
/// with it must still reach the server in time. A token that lives shorter
/// than twice this is replaced halfway through its life.
const RENEW_MARGIN: Duration = Duration::from_secs(30);

/// The tokens of one session: the one held, and how to get the next.
pub(super) struct TokenSource {
    manager: AuthorizationManager,
    config: ClientCredentialsConfig,
    held: tokio::sync::Mutex<Option<Token>>,
}

struct Token {
    secret: String,
    /// When to fetch the next one; `None` when the authorization server
    /// gave no lifetime (then only a 401 replaces it).
    renew_at: Option<Instant>,
}

impl TokenSource {
    /// Finds the authorization server of the MCP server at `url` and sets
    /// the client up with it; fetches no token yet. The token is asked for
    /// the MCP server's URL as its resource (RFC 8707), as the MCP
    /// authorization specification requires.
    pub(super) async fn discover(
        url: &str,
        credentials: &OAuthClientCredentials,
    ) -> Result<Arc<Self>, OpenError> {
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| unavailable("the OAuth client could not be set up", &e))?;
        let resolution = manager
            .resolve_metadata()
            .await
            .map_err(|e| unavailable("finding the authorization server failed", &e))?;
        tracing::debug!(
            target: "looopy_tools::mcp",
            url,
            token_endpoint = %resolution.metadata.token_endpoint,
            source = ?resolution.source,
            "OAuth authorization server found"
        );
        manager.set_metadata(resolution.metadata);
        let config = ClientCredentialsConfig::ClientSecret {
            client_id: credentials.client_id.clone(),
            client_secret: credentials.client_secret.clone(),
            scopes: credentials.scopes.clone(),
            resource: Some(url.to_owned()),
        };
        // The metadata lists the client authentication methods it takes:
        // none of the secret's is a refusal of this client.
        manager
            .validate_client_credentials_metadata(&config)
            .map_err(|e| OpenError::Refused(e.to_string()))?;
        manager
            .configure_client_credentials(&config)
            .map_err(|e| unavailable("the OAuth client could not be set up", &e))?;
        Ok(Arc::new(TokenSource {
            manager,
            config,
            held: tokio::sync::Mutex::new(None),
        }))
    }

    /// Fetches the first token, before the session opens: a refused client
    /// fails here, as [`OpenError::Refused`].
    pub(super) async fn first(&self) -> Result<(), OpenError> {
        self.token()
            .await
            .map(|_| ())
            .map_err(|e| match refusal(&e) {
                Some(message) => OpenError::Refused(message),
                None => unavailable("fetching the OAuth token failed", &e),
            })
    }

    /// The token to send: the one held while it is fresh, else a new one.
    async fn token(&self) -> Result<String, AuthError> {
        let mut held = self.held.lock().await;
        if let Some(token) = held.as_ref()
            && token.renew_at.is_none_or(|at| Instant::now() < at)
        {
            return Ok(token.secret.clone());
        }
        self.fetch(&mut held).await
    }

    /// A new token after the server refused `refused`, unless another
    /// request already replaced it.
    async fn renew(&self, refused: &str) -> Result<String, AuthError> {
        let mut held = self.held.lock().await;
        if let Some(token) = held.as_ref()
            && token.secret != refused
        {
            return Ok(token.secret.clone());
        }
        self.fetch(&mut held).await
    }

    async fn fetch(&self, held: &mut Option<Token>) -> Result<String, AuthError> {
        let asked = Instant::now();
        let response = self
            .manager
            .exchange_client_credentials(&self.config)
            .await?;
        // rmcp gives oauth2's token response; its fields are read from its
        // standard JSON form (RFC 6749 section 5.1).
        let json = serde_json::to_value(&response)
            .map_err(|e| AuthError::InternalError(format!("reading the token response: {e}")))?;
        let secret = json
            .get("access_token")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| {
                AuthError::InternalError("the token response has no access_token".into())
            })?
            .to_owned();
        let renew_at = renew_at(
            asked,
            json.get("expires_in").and_then(serde_json::Value::as_u64),
        );
        tracing::debug!(target: "looopy_tools::mcp", expires_in = ?renew_at.map(|at| at - asked), "OAuth token fetched");
        *held = Some(Token {
            secret: secret.clone(),
            renew_at,
        });
        Ok(secret)
    }
}

/// When to replace a token asked for at `asked` that lives `expires_in`
/// seconds: [`RENEW_MARGIN`] before it expires, or halfway through a short
/// life. `None` (only a 401 replaces it) without a lifetime, or with one
/// too long to count.
fn renew_at(asked: Instant, expires_in: Option<u64>) -> Option<Instant> {
    let life = Duration::from_secs(expires_in?);
    asked.checked_add(life - RENEW_MARGIN.min(life / 2))
}

/// The authorization server's refusal in a failed token request, if it
/// was one. rmcp folds oauth2's error into a message: an error response
/// of the authorization server (RFC 6749 section 5.2: `invalid_client`,
/// `invalid_scope`, ...) reads "Server returned error response"; a
/// network failure or a malformed answer does not.
fn refusal(error: &AuthError) -> Option<String> {
    const ERROR_RESPONSE: &str = "Server returned error response: ";
    match error {
        AuthError::ClientCredentialsError(message) => message
            .find(ERROR_RESPONSE)
            .map(|at| message[at + ERROR_RESPONSE.len()..].to_owned()),
        _ => None,
    }
}

fn unavailable(what: &str, error: &AuthError) -> OpenError {
    OpenError::Unavailable(format!("{what}: {error}"))
}

/// An HTTP client of streamable HTTP that sends the [`TokenSource`]'s token
/// with every request, and on a 401 fetches a new one and sends the request
/// again, once.
#[derive(Clone)]
pub(super) struct OAuthHttpClient<C> {
    inner: C,
    tokens: Arc<TokenSource>,
}

impl<C> OAuthHttpClient<C> {
    pub(super) fn new(inner: C, tokens: Arc<TokenSource>) -> Self {
        OAuthHttpClient { inner, tokens }
    }
}

type HttpResult<T, E> = Result<T, StreamableHttpError<E>>;

impl<C: StreamableHttpClient + Sync> OAuthHttpClient<C> {
    async fn authorized<T, F, Fut>(&self, call: F) -> HttpResult<T, C::Error>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = HttpResult<T, C::Error>>,
    {
        let token = self.tokens.token().await?;
        match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(_)) => {
                tracing::debug!(target: "looopy_tools::mcp", "the MCP server refused the OAuth token; fetching a new one");
                let fresh = self.tokens.renew(&token).await?;
                call(fresh).await
            }
            other => other,
        }
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for OAuthHttpClient<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse, C::Error> {
        self.authorized(|token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                Some(token),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse, C::Error> {
        self.authorized(|token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                Some(token),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<(), C::Error> {
        self.authorized(|token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                Some(token),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxedSseResponse, C::Error> {
        self.authorized(|token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                Some(token),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxedSseResponse, C::Error> {
        self.authorized(|token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                Some(token),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_response_of_the_token_endpoint_is_a_refusal_and_a_network_failure_is_not() {
        let refused = AuthError::ClientCredentialsError(
            "Token exchange failed: Server returned error response: invalid_client: bad secret"
                .into(),
        );
        assert_eq!(
            refusal(&refused).as_deref(),
            Some("invalid_client: bad secret")
        );
        let network =
            AuthError::ClientCredentialsError("Token exchange failed: Request failed".into());
        assert_eq!(refusal(&network), None);
        assert_eq!(refusal(&AuthError::AuthorizationRequired), None);
    }

    #[test]
    fn a_token_is_replaced_before_it_expires() {
        let now = Instant::now();
        let at = |secs| renew_at(now, Some(secs)).map(|at| at - now);
        assert_eq!(at(3600), Some(Duration::from_secs(3570)), "30 s early");
        assert_eq!(at(60), Some(Duration::from_secs(30)));
        assert_eq!(at(4), Some(Duration::from_secs(2)), "halfway");
        assert_eq!(at(0), Some(Duration::ZERO));
        assert_eq!(renew_at(now, None), None);
        assert_eq!(renew_at(now, Some(u64::MAX)), None, "no overflow");
    }

    #[test]
    fn the_secret_stays_out_of_debug() {
        let credentials = OAuthClientCredentials {
            client_id: "agent".into(),
            client_secret: "s3cret".into(),
            scopes: vec!["tools".into()],
        };
        let shown = format!("{credentials:?}");
        assert!(
            shown.contains("agent") && !shown.contains("s3cret"),
            "{shown}"
        );
    }
}
