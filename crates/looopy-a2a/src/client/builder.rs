//! [`A2aClientBuilder`] and [`Credentials`].

use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::{A2aClient, Negotiation};
use crate::version::ProtocolVersion;

/// How the client authenticates.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// `X-API-Key: <key>`.
    ApiKey(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            Credentials::ApiKey(_) => f.write_str("ApiKey(<redacted>)"),
        }
    }
}

/// Builds an [`A2aClient`].
#[derive(Debug)]
pub struct A2aClientBuilder {
    base_url: String,
    rpc_url: Option<String>,
    version: Option<ProtocolVersion>,
    credentials: Option<Credentials>,
    headers: HeaderMap,
    http: Option<reqwest::Client>,
}

impl A2aClientBuilder {
    pub(super) fn new(base_url: String) -> Self {
        A2aClientBuilder {
            base_url,
            rpc_url: None,
            version: None,
            credentials: None,
            headers: HeaderMap::new(),
            http: None,
        }
    }

    /// Speaks only this version (no fallback).
    pub fn version(mut self, version: ProtocolVersion) -> Self {
        self.version = Some(version);
        self
    }

    /// The JSON-RPC endpoint, when it differs from the base URL and no card
    /// is read.
    pub fn rpc_url(mut self, url: impl Into<String>) -> Self {
        self.rpc_url = Some(url.into());
        self
    }

    /// Authenticates with `Authorization: Bearer <token>`.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.credentials = Some(Credentials::Bearer(token.into()));
        self
    }

    /// Authenticates with `X-API-Key: <key>`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.credentials = Some(Credentials::ApiKey(key.into()));
        self
    }

    /// Adds a header to every request (ignored when name or value are invalid).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            self.headers.insert(n, v);
        }
        self
    }

    /// Uses this HTTP client (timeouts, proxies, TLS settings).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// The client.
    pub fn build(self) -> A2aClient {
        let base_url = self.base_url.trim_end_matches('/').to_owned();
        let rpc_url = self.rpc_url.unwrap_or_else(|| format!("{base_url}/"));
        A2aClient {
            http: self.http.unwrap_or_default(),
            credentials: self.credentials,
            headers: self.headers,
            negotiation: Arc::new(Mutex::new(Negotiation {
                version: self.version.unwrap_or(ProtocolVersion::V1_0),
                rpc_url,
                may_fall_back: self.version.is_none(),
            })),
            base_url,
        }
    }
}
