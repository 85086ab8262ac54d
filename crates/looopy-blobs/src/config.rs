//! The configuration of a blob store, in the shape `looopy.toml`'s
//! `[artifacts]` table gives it (`backend = "filesystem"` or `"s3"`).

use std::path::PathBuf;
#[cfg(feature = "s3")]
use std::time::Duration;

use serde::Deserialize;

/// Which backend holds the blobs, and where.
///
/// ```
/// use looopy_blobs::BlobBackend;
///
/// let fs: BlobBackend = toml::from_str(r#"
///     backend = "filesystem"
///     path = "data/blobs"
/// "#).unwrap();
/// assert!(matches!(fs, BlobBackend::Filesystem { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "backend", rename_all = "lowercase", deny_unknown_fields)]
#[non_exhaustive]
pub enum BlobBackend {
    /// Files under a local directory, created when missing.
    Filesystem {
        /// The root directory; every key is a file below it.
        path: PathBuf,
    },
    /// Objects in an S3 bucket (or an S3-compatible server's).
    S3(S3Config),
}

/// Where an S3 store writes, and how it reaches the server. Credentials
/// and anything left unset here come from the standard AWS variables
/// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
/// `AWS_REGION`, `AWS_ENDPOINT_URL`, ...) and, failing them, the instance's
/// or container's role.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Config {
    /// The bucket (which must exist).
    pub bucket: String,
    /// A key prefix inside the bucket (`looopy/blobs`): every key lives
    /// below it, and listing sees nothing else of the bucket.
    #[serde(default)]
    pub prefix: Option<String>,
    /// The endpoint of an S3-compatible server (`http://127.0.0.1:9000`);
    /// AWS's own when unset.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The region (`us-east-1` when neither this nor `AWS_REGION` says).
    #[serde(default)]
    pub region: Option<String>,
    /// Whether a plain `http://` endpoint is allowed (a local server).
    #[serde(default)]
    pub allow_http: bool,
    /// Path-style requests (`endpoint/bucket/key`), as most S3-compatible
    /// servers want; virtual-hosted style (`bucket.endpoint/key`) when
    /// false. Default: true when `endpoint` is set.
    #[serde(default)]
    pub path_style: Option<bool>,
    /// Credentials given here instead of the environment (tests; a
    /// configuration that names them in its own secret store).
    #[serde(skip)]
    pub credentials: Option<S3Credentials>,
    /// How many times a failed request is retried (default 3).
    #[serde(default)]
    pub max_retries: Option<usize>,
    /// How long a request keeps being retried, in seconds (default 20).
    #[serde(default)]
    pub retry_timeout_secs: Option<u64>,
    /// How long connecting may take, in seconds (default 5).
    #[serde(default)]
    pub connect_timeout_secs: Option<u64>,
}

impl S3Config {
    /// A configuration of `bucket`, everything else from the environment
    /// or the defaults.
    pub fn new(bucket: impl Into<String>) -> Self {
        S3Config {
            bucket: bucket.into(),
            ..S3Config::default()
        }
    }

    #[cfg(feature = "s3")]
    pub(crate) fn retry_timeout(&self) -> Duration {
        Duration::from_secs(self.retry_timeout_secs.unwrap_or(20))
    }

    #[cfg(feature = "s3")]
    pub(crate) fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs.unwrap_or(5))
    }
}

/// An S3 access key.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Credentials {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
    /// A session token, for temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}
