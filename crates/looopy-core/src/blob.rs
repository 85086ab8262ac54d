//! Large binary content beside the stores: the [`BlobStore`] trait, the
//! typed reference an artifact keeps ([`BlobRef`]), validated keys
//! ([`BlobKey`]) and the errors ([`BlobError`]).
//!
//! A blob is written once from a stream of chunks and read back whole or by
//! byte range, as a stream: no side holds it whole in memory. The
//! implementations live in `looopy-blobs` (a local directory, S3 and
//! S3-compatible servers); `looopy-testkit` has the conformance suite every
//! implementation must pass (`conformance::blob_store`).
//!
//! What every implementation guarantees:
//!
//! - **Nothing half-written.** A write that fails (the body stream failed,
//!   the size limit was passed, the backend refused) leaves no object
//!   under the key: [`BlobStore::get`] answers [`BlobError::NotFound`] and
//!   [`BlobStore::list`] does not list it. A successful write replaces any
//!   earlier blob under the key at once.
//! - **Checked content.** The SHA-256 of the bytes is computed while they
//!   are written and kept in the [`BlobRef`]. A whole read checks the bytes
//!   it streamed against it and ends with [`BlobError::ChecksumMismatch`]
//!   instead of its last chunk when they differ: a reader that must not act
//!   on unchecked content waits for the end of the stream.
//! - **Keys stay inside the store.** Every key is a [`BlobKey`], checked in
//!   one place: no `..`, no absolute path, no empty segment.
//! - **Typed failures.** Each error says what failed, keeping its cause
//!   ([`std::error::Error::source`]).
//!
//! The orphan sweep ([`sweep_orphans`]) lists blobs with their age
//! ([`BlobEntry`]) and deletes those that no artifact references and that
//! are older than the longest a write can take before its reference is
//! stored (write the blob first, then the reference).

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

/// A stream of chunks being written: an `Err` aborts the write
/// ([`BlobError::Body`]) and nothing is stored.
pub type BlobBody<'a> = BoxStream<'a, Result<Bytes, std::io::Error>>;

/// A stream of chunks being read. A whole read ([`BlobStore::get`]) ends
/// with an `Err` instead of its last chunk when the content does not match
/// its checksum.
pub type BlobStream = BoxStream<'static, Result<Bytes, BlobError>>;

/// The longest key, in bytes (S3's limit, less room for a store's prefix).
pub const MAX_KEY_LEN: usize = 768;

/// Where a blob lives inside its store: `/`-separated segments of ASCII
/// letters, digits and `-_.=~+@`, with no empty segment and no `.` or `..`
/// segment, at most [`MAX_KEY_LEN`] bytes.
///
/// The same key names the same file under a filesystem store's root and
/// the same object under an S3 store's prefix, and can never name
/// anything outside them. [`BlobKey::escape_segment`] turns any string
/// (a context id from a client) into a valid segment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BlobKey(String);

impl BlobKey {
    /// Checks `key`; [`BlobError::InvalidKey`] says which rule it breaks.
    pub fn new(key: impl Into<String>) -> Result<Self, BlobError> {
        let key = key.into();
        match key_problem(&key) {
            None => Ok(BlobKey(key)),
            Some(reason) => Err(BlobError::InvalidKey { key, reason }),
        }
    }

    /// The key of `segments` joined with `/`, each checked as a key of one
    /// segment.
    pub fn from_segments<S: AsRef<str>>(
        segments: impl IntoIterator<Item = S>,
    ) -> Result<Self, BlobError> {
        let mut key = String::new();
        for segment in segments {
            let segment = segment.as_ref();
            if segment.contains('/') {
                return Err(BlobError::InvalidKey {
                    key: segment.to_owned(),
                    reason: "a segment contains `/`",
                });
            }
            if !key.is_empty() {
                key.push('/');
            }
            key.push_str(segment);
        }
        BlobKey::new(key)
    }

    /// `self/segment`.
    pub fn join(&self, segment: &str) -> Result<Self, BlobError> {
        let tail = BlobKey::from_segments([segment])?;
        BlobKey::new(format!("{}/{}", self.0, tail.0))
    }

    /// `text` as one valid segment, reversibly and without collisions:
    /// letters, digits and `-_~+@` stay, `.` stays except at the start,
    /// every other byte (`=` included) becomes `=XX` (upper-case hex). The
    /// empty string becomes `=`.
    pub fn escape_segment(text: &str) -> String {
        if text.is_empty() {
            return "=".to_owned();
        }
        let mut out = String::with_capacity(text.len());
        for (i, byte) in text.bytes().enumerate() {
            let keep = byte.is_ascii_alphanumeric()
                || matches!(byte, b'-' | b'_' | b'~' | b'+' | b'@')
                || (byte == b'.' && i > 0);
            if keep {
                out.push(char::from(byte));
            } else {
                out.push_str(&format!("={byte:02X}"));
            }
        }
        out
    }

    /// The key without its last segment; `None` for a key of one segment.
    pub fn parent(&self) -> Option<BlobKey> {
        self.0
            .rsplit_once('/')
            .map(|(parent, _)| BlobKey(parent.to_owned()))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `self` is `prefix` or lies under it, segment by segment
    /// (`a/bc` is not under `a/b`).
    pub fn starts_with(&self, prefix: &BlobKey) -> bool {
        self.0 == prefix.0
            || (self.0.starts_with(&prefix.0)
                && self.0.as_bytes().get(prefix.0.len()) == Some(&b'/'))
    }
}

/// The one check of every key: `None` when `key` is valid, else the rule it
/// breaks.
fn key_problem(key: &str) -> Option<&'static str> {
    if key.is_empty() {
        return Some("the key is empty");
    }
    if key.len() > MAX_KEY_LEN {
        return Some("the key is longer than 768 bytes");
    }
    if key.starts_with('/') {
        return Some("the key is an absolute path");
    }
    for segment in key.split('/') {
        if segment.is_empty() {
            return Some("the key has an empty segment");
        }
        if segment == "." || segment == ".." {
            return Some("the key has a `.` or `..` segment");
        }
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.=~+@".contains(c);
        if !segment.chars().all(allowed) {
            return Some("the key has a character other than ASCII letters, digits and `-_.=~+@/`");
        }
    }
    None
}

impl fmt::Display for BlobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for BlobKey {
    type Error = BlobError;

    fn try_from(key: String) -> Result<Self, Self::Error> {
        BlobKey::new(key)
    }
}

impl From<BlobKey> for String {
    fn from(key: BlobKey) -> String {
        key.0
    }
}

impl AsRef<str> for BlobKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// What an artifact keeps of a blob: enough to read it back, serve it
/// with the right headers and check it. Its serde form (camelCase) is
/// stored with the artifact.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobRef {
    /// The name of the store that holds it ([`BlobStore::name`]).
    pub store: String,
    /// Its key in that store.
    pub key: BlobKey,
    /// Its length in bytes.
    pub size: u64,
    /// Its media type, such as `image/png`.
    pub media_type: String,
    /// The SHA-256 of its bytes, 64 lower-case hex digits.
    pub sha256: String,
}

/// What to write: where, its media type, and an optional size limit of
/// this write (the store's own limit applies too; the smaller wins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobPut {
    /// The key to write (an existing blob under it is replaced).
    pub key: BlobKey,
    /// The media type, kept with the object and in the [`BlobRef`].
    pub media_type: String,
    /// The most bytes this write may take.
    pub max_size: Option<u64>,
}

impl BlobPut {
    /// A write of `key` with media type `media_type` and no limit of its own.
    pub fn new(key: BlobKey, media_type: impl Into<String>) -> Self {
        BlobPut {
            key,
            media_type: media_type.into(),
            max_size: None,
        }
    }

    /// The same write, refused past `max_size` bytes.
    pub fn with_max_size(mut self, max_size: u64) -> Self {
        self.max_size = Some(max_size);
        self
    }
}

/// A stored blob as listed for the orphan sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobEntry {
    /// Its key.
    pub key: BlobKey,
    /// Its length in bytes.
    pub size: u64,
    /// When it was last written.
    pub last_modified: DateTime<Utc>,
}

impl BlobEntry {
    /// How long ago it was written, at `now` (zero when the clocks
    /// disagree and it looks written in the future).
    pub fn age(&self, now: DateTime<Utc>) -> Duration {
        (now - self.last_modified).to_std().unwrap_or_default()
    }
}

/// A boxed cause of a [`BlobError`].
pub type BlobCause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a blob operation failed. No variant means "partly done": a failed
/// write stored nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    /// No blob under the key.
    #[error("blob `{key}` not found")]
    NotFound {
        /// The key looked for.
        key: String,
    },
    /// The key breaks a rule of [`BlobKey`] (a path-traversal attempt, an
    /// absolute path, an empty segment, a character outside the set).
    #[error("invalid blob key `{key}`: {reason}")]
    InvalidKey {
        /// The key refused.
        key: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// The body passed the size limit; the write was abandoned and nothing
    /// stored.
    #[error("the blob is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// A byte range outside the blob.
    #[error("byte range {start}..{end} is outside blob `{key}` of {size} bytes")]
    InvalidRange {
        /// The blob.
        key: String,
        /// The first byte asked for.
        start: u64,
        /// One past the last byte asked for.
        end: u64,
        /// The blob's length.
        size: u64,
    },
    /// The content read does not match the reference's checksum or size:
    /// it was changed or damaged after it was written.
    #[error(
        "blob `{key}` is damaged: expected {expected_size} bytes with SHA-256 {expected}, read {}",
        read_summary(*actual_size, actual.as_deref())
    )]
    ChecksumMismatch {
        /// The blob.
        key: String,
        /// The SHA-256 in the reference.
        expected: String,
        /// The SHA-256 of what was read; `None` when the read stopped
        /// early, as soon as it passed the expected size.
        actual: Option<String>,
        /// The size in the reference.
        expected_size: u64,
        /// The bytes read.
        actual_size: u64,
    },
    /// The backend refused the credentials or the operation (S3 403 or
    /// 401, a filesystem permission).
    #[error("access to blob storage denied: {source}")]
    Denied {
        /// The backend's answer.
        #[source]
        source: BlobCause,
    },
    /// The backend cannot be reached (connection refused, timeout, DNS).
    #[error("blob storage unavailable: {source}")]
    Unavailable {
        /// What failed.
        #[source]
        source: BlobCause,
    },
    /// The backend has no room left (a full disk, a quota).
    #[error("blob storage is full: {source}")]
    StorageFull {
        /// The backend's answer.
        #[source]
        source: BlobCause,
    },
    /// The body being written failed (a client that went away mid-upload);
    /// nothing was stored.
    #[error("the blob's body failed while it was written: {source}")]
    Body {
        /// The body's error.
        #[source]
        source: std::io::Error,
    },
    /// The store is configured wrongly (an unknown store name, a missing
    /// root, a bad endpoint).
    #[error("blob storage misconfigured: {message}")]
    Config {
        /// What is wrong.
        message: String,
        /// The cause, when there is one.
        #[source]
        source: Option<BlobCause>,
    },
    /// Any other backend failure.
    #[error("blob storage error: {source}")]
    Backend {
        /// The backend's error.
        #[source]
        source: BlobCause,
    },
}

/// What a damaged read read, for [`BlobError::ChecksumMismatch`]'s message.
fn read_summary(size: u64, sha256: Option<&str>) -> String {
    match sha256 {
        Some(sha256) => format!("{size} bytes with SHA-256 {sha256}"),
        None => format!("more: {size} bytes before it stopped"),
    }
}

impl BlobError {
    /// Whether trying again later may succeed (the backend was unreachable).
    pub fn is_transient(&self) -> bool {
        matches!(self, BlobError::Unavailable { .. })
    }
}

/// Binary content by key: written from a stream, read whole or by range as
/// a stream, deleted, listed. The module docs list what every
/// implementation guarantees; `looopy-testkit`'s `conformance::blob_store`
/// checks it.
#[async_trait]
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// The store's name, kept in every [`BlobRef`] it returns (several
    /// stores may be configured; a reference names the one to read from).
    fn name(&self) -> &str;

    /// Writes `body` under `put.key`, streaming it (never whole in memory),
    /// and returns its reference with size and SHA-256. Past the smaller of
    /// the store's limit and `put.max_size` it stops with
    /// [`BlobError::TooLarge`]; on any failure nothing is stored.
    async fn put(&self, put: BlobPut, body: BlobBody<'_>) -> Result<BlobRef, BlobError>;

    /// Reads the whole blob as a stream, checked against `blob.sha256` and
    /// `blob.size`: when they differ the stream ends with
    /// [`BlobError::ChecksumMismatch`] instead of its last chunk.
    async fn get(&self, blob: &BlobRef) -> Result<BlobStream, BlobError>;

    /// Reads bytes `range` of the blob (unchecked: a range cannot be
    /// checked against the whole's checksum). `range.end` must not pass
    /// `blob.size` and `range.start` must not pass `range.end`
    /// ([`BlobError::InvalidRange`]); an empty range reads nothing.
    async fn get_range(&self, blob: &BlobRef, range: Range<u64>) -> Result<BlobStream, BlobError>;

    /// Deletes the blob under `key`; deleting a missing blob succeeds.
    async fn delete(&self, key: &BlobKey) -> Result<(), BlobError>;

    /// Every blob below `prefix` (whose key starts with `prefix/`: whole
    /// segments, and not a blob whose key is `prefix` itself; every blob
    /// with `None`), in no particular order, with its size and the time it
    /// was written. Objects of the backend that are no valid [`BlobKey`]
    /// (which the store never wrote) are left out.
    fn list(&self, prefix: Option<&BlobKey>) -> BoxStream<'static, Result<BlobEntry, BlobError>>;

    /// A URL that lets its holder `GET` the blob without credentials for
    /// `lifetime`, when the backend can sign one (S3); `None` otherwise, and
    /// the blob is served by the server's own download route.
    async fn presigned_get(
        &self,
        blob: &BlobRef,
        lifetime: Duration,
    ) -> Result<Option<String>, BlobError> {
        let _ = (blob, lifetime);
        Ok(None)
    }
}

/// Reads the whole blob into memory, checked, refusing it past `max_size`
/// bytes: for content that must be whole anyway (an image given to a
/// model).
pub async fn read_to_bytes(
    store: &dyn BlobStore,
    blob: &BlobRef,
    max_size: u64,
) -> Result<Bytes, BlobError> {
    use futures::StreamExt;
    if blob.size > max_size {
        return Err(BlobError::TooLarge { limit: max_size });
    }
    let mut stream = store.get(blob).await?;
    let mut out = Vec::with_capacity(usize::try_from(blob.size).unwrap_or(0));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if (out.len() + chunk.len()) as u64 > max_size {
            return Err(BlobError::TooLarge { limit: max_size });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

/// What one [`sweep_orphans`] pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Blobs listed.
    pub listed: usize,
    /// Blobs spared because they are younger than the minimum age (their
    /// reference may still be on its way).
    pub young: usize,
    /// Blobs spared because a reference to them exists.
    pub referenced: usize,
    /// The orphans deleted.
    pub deleted: Vec<BlobKey>,
}

/// One pass of the orphan sweep: every blob below `prefix` (all with
/// `None`) at least `min_age` old at `now` that `is_referenced` says no
/// artifact references is deleted.
///
/// Blobs are written before their reference, so `min_age` must be longer
/// than the longest a write and the storing of its reference can take; a
/// younger blob is spared. `is_referenced` must answer `true` when it cannot
/// tell (its store is unreachable): a blob is deleted only when it is
/// known to be an orphan. A listing or delete error stops the pass.
pub async fn sweep_orphans<F, Fut>(
    store: &dyn BlobStore,
    prefix: Option<&BlobKey>,
    min_age: Duration,
    now: DateTime<Utc>,
    mut is_referenced: F,
) -> Result<SweepReport, BlobError>
where
    F: FnMut(&BlobKey) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    use futures::StreamExt;
    let mut report = SweepReport::default();
    let mut listing = store.list(prefix);
    while let Some(entry) = listing.next().await {
        let entry = entry?;
        report.listed += 1;
        if entry.age(now) < min_age {
            report.young += 1;
        } else if is_referenced(&entry.key).await {
            report.referenced += 1;
        } else {
            store.delete(&entry.key).await?;
            report.deleted.push(entry.key);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_leave_the_store_or_are_malformed_are_refused() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a/./b",
            "a//b",
            "a/",
            "a\\..\\b",
            "a b",
            "a\0b",
            "a#1",
            "ä",
        ] {
            let err = BlobKey::new(bad).expect_err(bad);
            assert!(
                matches!(&err, BlobError::InvalidKey { key, .. } if key == bad),
                "{bad:?}: {err}"
            );
        }
        assert!(BlobKey::new("x".repeat(MAX_KEY_LEN + 1)).is_err());
        for good in [
            "a",
            "ctx-1/art_2/v=3.bin",
            "a.b/..c/~+@",
            &"y".repeat(MAX_KEY_LEN),
        ] {
            assert_eq!(BlobKey::new(good).expect(good).as_str(), good);
        }
    }

    #[test]
    fn serde_goes_through_the_same_check() {
        let key: BlobKey = serde_json::from_str("\"a/b\"").expect("valid");
        assert_eq!(key.as_str(), "a/b");
        assert!(serde_json::from_str::<BlobKey>("\"../b\"").is_err());
        let blob = BlobRef {
            store: "files".into(),
            key,
            size: 3,
            media_type: "text/plain".into(),
            sha256: "ab".repeat(32),
        };
        let json = serde_json::to_value(&blob).expect("serializes");
        assert_eq!(json["mediaType"], "text/plain");
        assert_eq!(json["key"], "a/b");
        let back: BlobRef = serde_json::from_value(json).expect("deserializes");
        assert_eq!(back, blob);
    }

    #[test]
    fn escaped_segments_are_valid_and_distinct() {
        let texts = [
            "", ".", "..", "=", "=3D", "a/b", "a b", "ctx-1", ".hidden", "x.y", "ä", "../etc",
        ];
        let escaped: Vec<String> = texts.iter().map(|t| BlobKey::escape_segment(t)).collect();
        for (text, segment) in texts.iter().zip(&escaped) {
            assert!(
                BlobKey::new(segment.clone()).is_ok(),
                "{text:?} -> {segment:?}"
            );
            assert!(!segment.contains('/'));
        }
        let mut unique = escaped.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), escaped.len(), "{escaped:?}");
        assert_eq!(BlobKey::escape_segment("ctx-1"), "ctx-1");
        assert_eq!(BlobKey::escape_segment("a/b"), "a=2Fb");
    }

    #[test]
    fn segments_join_and_prefixes_match_whole_segments() {
        let key = BlobKey::from_segments(["ctx", "art", "1"]).expect("valid");
        assert_eq!(key.as_str(), "ctx/art/1");
        assert!(BlobKey::from_segments(["a", "b/c"]).is_err());
        assert!(BlobKey::from_segments(["a", ".."]).is_err());
        let prefix = BlobKey::new("ctx/art").expect("valid");
        assert!(key.starts_with(&prefix));
        assert!(prefix.starts_with(&prefix));
        assert!(
            !BlobKey::new("ctx/artx")
                .expect("valid")
                .starts_with(&prefix)
        );
        assert_eq!(prefix.join("2").expect("valid").as_str(), "ctx/art/2");
        assert_eq!(key.parent(), Some(prefix));
        assert_eq!(BlobKey::new("top").expect("valid").parent(), None);
    }

    #[test]
    fn age_is_never_negative() {
        let now = Utc::now();
        let entry = BlobEntry {
            key: BlobKey::new("a").expect("valid"),
            size: 1,
            last_modified: now - chrono::Duration::seconds(90),
        };
        assert_eq!(entry.age(now), Duration::from_secs(90));
        let future = BlobEntry {
            last_modified: now + chrono::Duration::seconds(5),
            ..entry
        };
        assert_eq!(future.age(now), Duration::ZERO);
    }
}
