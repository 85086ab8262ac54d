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
use looopy_blobs::{BlobBackend, ObjectBlobStore};
use looopy_core::BlobStore;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ArtifactsSection> {
        let section: ArtifactsSection = toml::from_str(text)?;
        section.validate()?;
        Ok(section)
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
