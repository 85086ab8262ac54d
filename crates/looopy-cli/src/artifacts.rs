//! `[artifacts]`: where files and large artifacts are stored (a blob store
//! beside the artifact store, `docs/artifacts.md`), and the sizes and
//! lifetimes that govern them.
//!
//! ```toml
//! [artifacts]
//! backend = "filesystem"        # or "s3" with bucket, prefix, endpoint, region
//! path = ".looopy/blobs"
//! inline_limit_bytes = 65536    # content past this is stored as a blob
//! max_upload_bytes = 104857600  # the largest file accepted
//! presign_ttl_secs = 3600       # how long a presigned S3 URL stays valid
//! ```

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use base64::Engine as _;
use looopy_blobs::{BlobBackend, ObjectBlobStore};
use looopy_core::blob::read_to_bytes;
use looopy_core::{BlobRef, BlobStore, History, LlmRequest, Message, Part};
use looopy_loop::hooks::{BeforeLlm, Hook, HookContext, HookError, HookPoints};
use serde::Deserialize;

/// The name the configured blob store writes into every [`looopy_core::BlobRef`].
pub const BLOB_STORE_NAME: &str = "files";

/// The default `inline_limit_bytes`: 64 KiB.
pub const DEFAULT_INLINE_LIMIT: u64 = 64 << 10;
/// The default `max_upload_bytes`: 100 MiB.
pub const DEFAULT_MAX_UPLOAD: u64 = 100 << 20;
/// The default `presign_ttl_secs`: an hour.
pub const DEFAULT_PRESIGN_TTL_SECS: u64 = 3600;
/// The longest `presign_ttl_secs` S3 accepts: seven days.
pub const MAX_PRESIGN_TTL_SECS: u64 = 7 * 24 * 3600;

/// `[artifacts]`: the blob store's backend (the keys of
/// [`looopy_blobs::BlobBackend`]) and the limits. Without the table,
/// everything stays inline in the artifact store.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ArtifactsSection {
    /// Where blobs live: `backend = "filesystem"` with `path`, or
    /// `backend = "s3"` with `bucket`, `prefix`, `endpoint`, `region`
    /// (credentials from the standard AWS variables).
    #[serde(flatten)]
    pub backend: BlobBackend,
    /// Content larger than this many bytes (a file part, an artifact, a
    /// tool result) is stored as a blob and referenced; smaller content
    /// stays inline.
    #[serde(default = "default_inline_limit")]
    pub inline_limit_bytes: u64,
    /// The largest file, in bytes, that is accepted: a larger upload or
    /// inline part is refused.
    #[serde(default = "default_max_upload")]
    pub max_upload_bytes: u64,
    /// How long a presigned download URL (S3) stays valid, in seconds.
    #[serde(default = "default_presign_ttl")]
    pub presign_ttl_secs: u64,
}

fn default_inline_limit() -> u64 {
    DEFAULT_INLINE_LIMIT
}
fn default_max_upload() -> u64 {
    DEFAULT_MAX_UPLOAD
}
fn default_presign_ttl() -> u64 {
    DEFAULT_PRESIGN_TTL_SECS
}

impl ArtifactsSection {
    /// Checks the limits against each other.
    pub fn validate(&self) -> Result<()> {
        if self.max_upload_bytes == 0 {
            bail!("[artifacts] max_upload_bytes must be at least 1");
        }
        if self.inline_limit_bytes > self.max_upload_bytes {
            bail!(
                "[artifacts] inline_limit_bytes ({}) must not be larger than max_upload_bytes ({})",
                self.inline_limit_bytes,
                self.max_upload_bytes
            );
        }
        if !(1..=MAX_PRESIGN_TTL_SECS).contains(&self.presign_ttl_secs) {
            bail!(
                "[artifacts] presign_ttl_secs must be between 1 and {MAX_PRESIGN_TTL_SECS} seconds (seven days), not {}",
                self.presign_ttl_secs
            );
        }
        if let BlobBackend::S3(s3) = &self.backend
            && s3.bucket.trim().is_empty()
        {
            bail!("[artifacts] bucket must name a bucket");
        }
        Ok(())
    }

    /// The lifetime of a presigned URL.
    pub fn presign_ttl(&self) -> Duration {
        Duration::from_secs(self.presign_ttl_secs)
    }

    /// Opens the blob store (a filesystem store creates its directory),
    /// refusing writes past `max_upload_bytes`.
    pub fn open(&self) -> Result<Arc<dyn BlobStore>> {
        let store = ObjectBlobStore::open(BLOB_STORE_NAME, &self.backend)
            .context("[artifacts]: opening the blob store")?
            .with_max_size(self.max_upload_bytes);
        Ok(Arc::new(store))
    }
}

/// Gives the model the content of the file parts kept in the blob store:
/// before each model call, each file part that holds a [`BlobRef`] and no
/// bytes is read from the store, checked against its size and SHA-256, and
/// sent inline. The stored conversation keeps the references. A blob that
/// cannot be read (missing, damaged, the store down or refusing) fails the
/// turn with a message naming the file.
pub struct BlobContentHook {
    store: Arc<dyn BlobStore>,
    max_size: u64,
}

impl BlobContentHook {
    /// Reads from `store`, at most `max_size` bytes per file.
    pub fn new(store: Arc<dyn BlobStore>, max_size: u64) -> Self {
        BlobContentHook { store, max_size }
    }

    /// The bytes of `blob`, base64-encoded, or why they cannot be read.
    async fn content(&self, name: Option<&str>, blob: &BlobRef) -> Result<String, HookError> {
        let file = name.unwrap_or(blob.key.as_ref());
        if blob.store != self.store.name() {
            return Err(HookError::new(format!(
                "the file `{file}` is kept in blob store `{}`, which is not configured (this server's is `{}`)",
                blob.store,
                self.store.name()
            )));
        }
        let bytes = read_to_bytes(&*self.store, blob, self.max_size)
            .await
            .map_err(|e| {
                HookError::new(format!(
                    "the file `{file}` could not be read from the blob store: {e}"
                ))
            })?;
        Ok(base64::engine::general_purpose::STANDARD.encode(&bytes))
    }

    /// `message` with the content of its blob parts filled in; `None` when
    /// it has none.
    async fn resolved(&self, message: &Message) -> Result<Option<Message>, HookError> {
        if !message.parts.iter().any(needs_content) {
            return Ok(None);
        }
        let mut message = message.clone();
        for part in &mut message.parts {
            if let Part::File { file } = part
                && file.bytes.is_none()
                && let Some(blob) = &file.blob
            {
                let content = self.content(file.name.as_deref(), blob).await?;
                if file.mime_type.is_none() {
                    file.mime_type = Some(blob.media_type.clone());
                }
                file.bytes = Some(content);
            }
        }
        Ok(Some(message))
    }
}

/// Whether `part` is a file kept in a blob store whose bytes are not here.
fn needs_content(part: &Part) -> bool {
    matches!(part, Part::File { file } if file.bytes.is_none() && file.blob.is_some())
}

#[async_trait]
impl Hook for BlobContentHook {
    fn name(&self) -> &str {
        "blob-content"
    }

    fn points(&self) -> HookPoints {
        HookPoints::BEFORE_LLM
    }

    async fn before_llm(
        &self,
        _cx: &HookContext,
        request: &mut LlmRequest,
    ) -> Result<BeforeLlm, HookError> {
        if !request
            .messages
            .iter()
            .any(|m| m.parts.iter().any(needs_content))
        {
            return Ok(BeforeLlm::Continue);
        }
        let mut out = History::new();
        for message in request.messages.iter_from(0) {
            match self.resolved(message).await? {
                Some(resolved) => out.push(resolved),
                None => out.push_shared(message.clone()),
            }
        }
        request.messages = out;
        Ok(BeforeLlm::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ArtifactsSection> {
        let section: ArtifactsSection = toml::from_str(text)?;
        section.validate()?;
        Ok(section)
    }

    use looopy_core::blob::BlobPut;
    use looopy_core::{BlobKey, FileContent, Role, TurnContext};
    use looopy_testkit::conformance::blobs::{body_of, pattern};

    /// A filesystem store in a temp dir, and a blob written to it.
    async fn store_with(content: &[u8]) -> (tempfile::TempDir, Arc<dyn BlobStore>, BlobRef) {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn BlobStore> =
            Arc::new(ObjectBlobStore::filesystem(BLOB_STORE_NAME, dir.path()).unwrap());
        let key = BlobKey::new("ctx/a1/report.pdf").unwrap();
        let blob = store
            .put(BlobPut::new(key, "application/pdf"), body_of(content, 4096))
            .await
            .unwrap();
        (dir, store, blob)
    }

    fn request_with(blob: &BlobRef) -> LlmRequest {
        let mut message = Message::new(Role::User, "Summarise this");
        message.parts.push(Part::file(FileContent::from_blob(
            blob.clone(),
            Some("report.pdf".into()),
        )));
        LlmRequest {
            messages: History::from(vec![message]),
            ..LlmRequest::default()
        }
    }

    fn cx() -> HookContext {
        HookContext {
            turn: TurnContext::new("t", "ctx"),
            iteration: 0,
        }
    }

    #[tokio::test]
    async fn the_model_is_sent_the_content_of_a_blob_part() {
        let content = pattern(200_000, 7);
        let (_dir, store, blob) = store_with(&content).await;
        let hook = BlobContentHook::new(store, DEFAULT_MAX_UPLOAD);
        let mut request = request_with(&blob);
        hook.before_llm(&cx(), &mut request).await.unwrap();
        let sent = request.messages.to_vec();
        let Part::File { file } = &sent[0].parts[1] else {
            panic!("a file part: {sent:?}");
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(file.bytes.as_deref().expect("the content, inline"))
            .unwrap();
        assert_eq!(bytes, content);
        assert_eq!(file.mime_type.as_deref(), Some("application/pdf"));
        assert_eq!(file.blob.as_ref(), Some(&blob), "the reference is kept");
    }

    #[tokio::test]
    async fn damaged_missing_or_foreign_blobs_fail_with_the_file_named() {
        let (dir, store, blob) = store_with(&pattern(10_000, 1)).await;
        let hook = BlobContentHook::new(store.clone(), DEFAULT_MAX_UPLOAD);
        // Damaged on disk: the checksum no longer matches.
        let path = dir.path().join("ctx/a1/report.pdf");
        std::fs::write(&path, pattern(10_000, 2)).unwrap();
        let err = hook
            .before_llm(&cx(), &mut request_with(&blob))
            .await
            .expect_err("a damaged blob is refused");
        assert!(err.message.contains("report.pdf"), "{}", err.message);
        assert!(err.message.contains("damaged"), "{}", err.message);
        // Missing.
        std::fs::remove_file(&path).unwrap();
        let err = hook
            .before_llm(&cx(), &mut request_with(&blob))
            .await
            .expect_err("a missing blob is refused");
        assert!(err.message.contains("report.pdf"), "{}", err.message);
        // Another store's reference.
        let foreign = BlobRef {
            store: "elsewhere".into(),
            ..blob
        };
        let err = hook
            .before_llm(&cx(), &mut request_with(&foreign))
            .await
            .expect_err("another store's blob is refused");
        assert!(err.message.contains("elsewhere"), "{}", err.message);
    }

    #[test]
    fn a_filesystem_table_takes_the_defaults() {
        let section = parse("backend = \"filesystem\"\npath = \"blobs\"\n").unwrap();
        assert_eq!(
            section.backend,
            BlobBackend::Filesystem {
                path: "blobs".into()
            }
        );
        assert_eq!(section.inline_limit_bytes, 64 * 1024);
        assert_eq!(section.max_upload_bytes, 100 * 1024 * 1024);
        assert_eq!(section.presign_ttl(), Duration::from_secs(3600));
    }

    #[test]
    fn an_s3_table_keeps_its_limits() {
        let section = parse(
            "backend = \"s3\"\nbucket = \"b\"\nprefix = \"p\"\nendpoint = \"http://127.0.0.1:9\"\n\
             region = \"eu-west-1\"\ninline_limit_bytes = 10\nmax_upload_bytes = 20\npresign_ttl_secs = 60\n",
        )
        .unwrap();
        let BlobBackend::S3(s3) = &section.backend else {
            panic!("an S3 backend: {section:?}");
        };
        assert_eq!(s3.bucket, "b");
        assert_eq!(s3.prefix.as_deref(), Some("p"));
        assert_eq!(s3.region.as_deref(), Some("eu-west-1"));
        assert_eq!(
            (
                section.inline_limit_bytes,
                section.max_upload_bytes,
                section.presign_ttl_secs
            ),
            (10, 20, 60)
        );
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        for (text, key) in [
            (
                "backend = \"filesystem\"\npath = \"x\"\ninline_limt = 1\n",
                "inline_limt",
            ),
            (
                "backend = \"s3\"\nbucket = \"b\"\nregoin = \"x\"\n",
                "regoin",
            ),
            ("backend = \"ftp\"\npath = \"x\"\n", "ftp"),
            ("path = \"x\"\n", "backend"),
            (
                "backend = \"filesystem\"\npath = \"x\"\ninline_limit_bytes = -1\n",
                "inline_limit_bytes",
            ),
            (
                "backend = \"filesystem\"\npath = \"x\"\nmax_upload_bytes = \"big\"\n",
                "max_upload_bytes",
            ),
            (
                "backend = \"filesystem\"\npath = \"x\"\nmax_upload_bytes = 0\n",
                "max_upload_bytes",
            ),
            (
                "backend = \"filesystem\"\npath = \"x\"\ninline_limit_bytes = 10\nmax_upload_bytes = 5\n",
                "inline_limit_bytes",
            ),
            (
                "backend = \"filesystem\"\npath = \"x\"\npresign_ttl_secs = 0\n",
                "presign_ttl_secs",
            ),
            (
                "backend = \"s3\"\nbucket = \"b\"\npresign_ttl_secs = 700000\n",
                "presign_ttl_secs",
            ),
            ("backend = \"s3\"\nbucket = \"\"\n", "bucket"),
        ] {
            let err = format!("{:#}", parse(text).expect_err(text));
            assert!(err.contains(key), "{text}: {err}");
        }
    }
}
