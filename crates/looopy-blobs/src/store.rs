//! [`ObjectBlobStore`]: the [`BlobStore`] over an `object_store` backend.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, FuturesUnordered};
use futures::{StreamExt, TryStreamExt};
use looopy_core::blob::{BlobBody, BlobEntry, BlobPut, BlobStream};
use looopy_core::{BlobError, BlobKey, BlobRef, BlobStore};
use object_store::path::Path;
use object_store::{
    Attribute, Attributes, GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMultipartOptions,
    PutOptions, PutPayloadMut,
};

use crate::checked::{Sha256Hasher, checked};
use crate::config::BlobBackend;
use crate::errors::{Op, map};

/// The default size of a multipart part: bodies up to this size are
/// written with one request, larger ones in parts of this size.
pub const DEFAULT_PART_SIZE: usize = 8 * 1024 * 1024;

/// S3's smallest part (but the last).
const MIN_PART_SIZE: usize = 5 * 1024 * 1024;

/// A new part is handed to the backend once fewer than this many are in
/// flight: with 2, one part uploads while the next fills, and a write
/// holds at most two parts in memory.
const PARTS_IN_FLIGHT: usize = 2;

/// A [`BlobStore`] over one of `object_store`'s backends: a local
/// directory ([`ObjectBlobStore::filesystem`], feature `fs`) or S3 and
/// S3-compatible servers ([`ObjectBlobStore::s3`], feature `s3`).
///
/// Writes stream: a body up to the part size is written with one request,
/// a larger one as a multipart upload (staged in a hidden file on the
/// filesystem and renamed into place when complete; an S3 multipart upload
/// that is only visible once completed), aborted on any failure, so that a
/// failed write leaves nothing under its key.
#[derive(Debug, Clone)]
pub struct ObjectBlobStore {
    name: String,
    store: Arc<dyn ObjectStore>,
    prefix: Option<Path>,
    max_size: Option<u64>,
    part_size: usize,
    /// Whether the backend keeps a media type with the object (the local
    /// filesystem does not).
    keeps_media_type: bool,
    #[cfg(feature = "s3")]
    signer: Option<Arc<object_store::aws::AmazonS3>>,
}

impl ObjectBlobStore {
    /// A store named `name` over any `object_store` backend, keys below
    /// `prefix` when given. `keeps_media_type`: whether the backend stores
    /// a content type with an object.
    pub fn new(
        name: impl Into<String>,
        store: Arc<dyn ObjectStore>,
        prefix: Option<&str>,
        keeps_media_type: bool,
    ) -> Result<Self, BlobError> {
        let prefix = match prefix.map(|p| p.trim_matches('/')) {
            None | Some("") => None,
            Some(p) => {
                BlobKey::new(p)?;
                Some(Path::parse(p).map_err(|e| BlobError::Config {
                    message: format!("invalid prefix `{p}`"),
                    source: Some(Box::new(e)),
                })?)
            }
        };
        Ok(ObjectBlobStore {
            name: name.into(),
            store,
            prefix,
            max_size: None,
            part_size: DEFAULT_PART_SIZE,
            keeps_media_type,
            #[cfg(feature = "s3")]
            signer: None,
        })
    }

    /// The store `backend` configures, named `name`.
    pub fn open(name: impl Into<String>, backend: &BlobBackend) -> Result<Self, BlobError> {
        let name = name.into();
        match backend {
            #[cfg(feature = "fs")]
            BlobBackend::Filesystem { path } => ObjectBlobStore::filesystem(name, path),
            #[cfg(feature = "s3")]
            BlobBackend::S3(config) => ObjectBlobStore::s3(name, config),
            #[allow(unreachable_patterns)]
            other => Err(BlobError::Config {
                message: format!(
                    "blob store `{name}`: this build has no backend for {other:?} (looopy-blobs' features `fs` and `s3`)"
                ),
                source: None,
            }),
        }
    }

    /// Blobs as files under `root`, which is created when missing. A write
    /// is staged in a hidden file beside its target and renamed into place;
    /// directories left empty by a delete are removed.
    #[cfg(feature = "fs")]
    pub fn filesystem(
        name: impl Into<String>,
        root: impl AsRef<std::path::Path>,
    ) -> Result<Self, BlobError> {
        let root = root.as_ref();
        std::fs::create_dir_all(root).map_err(|e| {
            let message = format!("cannot create the blob directory {}", root.display());
            match e.kind() {
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                    BlobError::Denied {
                        source: format!("{message}: {e}").into(),
                    }
                }
                _ => BlobError::Config {
                    message,
                    source: Some(Box::new(e)),
                },
            }
        })?;
        let local = object_store::local::LocalFileSystem::new_with_prefix(root)
            .map_err(|e| BlobError::Config {
                message: format!("cannot use {} as a blob directory", root.display()),
                source: Some(Box::new(e)),
            })?
            .with_automatic_cleanup(true);
        ObjectBlobStore::new(name, Arc::new(local), None, false)
    }

    /// Blobs as objects of an S3 bucket (AWS or an S3-compatible server),
    /// configured by `config` and the standard AWS variables. Nothing is
    /// sent until the first operation.
    #[cfg(feature = "s3")]
    pub fn s3(name: impl Into<String>, config: &crate::S3Config) -> Result<Self, BlobError> {
        use object_store::aws::AmazonS3Builder;
        use object_store::{BackoffConfig, ClientOptions, RetryConfig};

        let mut builder = AmazonS3Builder::from_env().with_bucket_name(&config.bucket);
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let path_style = config.path_style.unwrap_or(config.endpoint.is_some());
        builder = builder.with_virtual_hosted_style_request(!path_style);
        if let Some(region) = &config.region {
            builder = builder.with_region(region);
        }
        if let Some(credentials) = &config.credentials {
            builder = builder
                .with_access_key_id(&credentials.access_key_id)
                .with_secret_access_key(&credentials.secret_access_key);
            if let Some(token) = &credentials.session_token {
                builder = builder.with_token(token);
            }
        }
        let client = ClientOptions::new()
            .with_allow_http(config.allow_http)
            .with_connect_timeout(config.connect_timeout());
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: config.max_retries.unwrap_or(3),
            retry_timeout: config.retry_timeout(),
        };
        let s3 = builder
            .with_client_options(client)
            .with_retry(retry)
            .build()
            .map_err(|e| BlobError::Config {
                message: format!("cannot configure the S3 bucket `{}`", config.bucket),
                source: Some(Box::new(e)),
            })?;
        let s3 = Arc::new(s3);
        let mut store = ObjectBlobStore::new(
            name,
            Arc::clone(&s3) as Arc<dyn ObjectStore>,
            config.prefix.as_deref(),
            true,
        )?;
        store.signer = Some(s3);
        Ok(store)
    }

    /// The same store, refusing writes past `max_size` bytes
    /// ([`BlobError::TooLarge`]).
    pub fn with_max_size(mut self, max_size: u64) -> Self {
        self.max_size = Some(max_size);
        self
    }

    /// The same store, writing bodies larger than `part_size` bytes as
    /// multipart uploads in parts of that size (at least 5 MiB, S3's
    /// smallest; default [`DEFAULT_PART_SIZE`]).
    pub fn with_part_size(mut self, part_size: usize) -> Self {
        self.part_size = part_size.max(MIN_PART_SIZE);
        self
    }

    /// The backend's path of `key`.
    fn path(&self, key: &BlobKey) -> Result<Path, BlobError> {
        let full = match &self.prefix {
            Some(prefix) => format!("{prefix}/{key}"),
            None => key.as_str().to_owned(),
        };
        Path::parse(&full).map_err(|e| map(Op::Write, key.as_str(), e.into()))
    }

    fn attributes(&self, media_type: &str) -> Attributes {
        let mut attributes = Attributes::new();
        if self.keeps_media_type {
            attributes.insert(Attribute::ContentType, media_type.to_owned().into());
        }
        attributes
    }

    /// The key of a listed `path`, `None` for objects that are not under
    /// the prefix or whose name is no valid key (this store never wrote
    /// them).
    fn key_of(&self, path: &Path) -> Option<BlobKey> {
        let raw = path.as_ref();
        let rest = match &self.prefix {
            Some(prefix) => raw.strip_prefix(prefix.as_ref())?.strip_prefix('/')?,
            None => raw,
        };
        BlobKey::new(rest).ok()
    }

    /// Writes a body whose first `head` chunks (fewer bytes than a part)
    /// are the whole of it, with one request.
    async fn put_whole(
        &self,
        path: &Path,
        put: &BlobPut,
        head: PutPayloadMut,
    ) -> Result<(), BlobError> {
        let options = PutOptions {
            attributes: self.attributes(&put.media_type),
            ..PutOptions::default()
        };
        self.store
            .put_opts(path, head.freeze(), options)
            .await
            .map(drop)
            .map_err(|e| map(Op::Write, put.key.as_str(), e))
    }
}

/// What a write has taken in so far.
struct Intake {
    hasher: Sha256Hasher,
    size: u64,
    limit: Option<u64>,
}

impl Intake {
    fn take(&mut self, chunk: &Bytes) -> Result<(), BlobError> {
        self.size += chunk.len() as u64;
        if let Some(limit) = self.limit
            && self.size > limit
        {
            return Err(BlobError::TooLarge { limit });
        }
        self.hasher.update(chunk);
        Ok(())
    }
}

/// The next chunk of `body`, a failed body as [`BlobError::Body`].
async fn next_chunk(body: &mut BlobBody<'_>) -> Result<Option<Bytes>, BlobError> {
    match body.next().await {
        None => Ok(None),
        Some(Ok(chunk)) => Ok(Some(chunk)),
        Some(Err(source)) => Err(BlobError::Body { source }),
    }
}

#[async_trait]
impl BlobStore for ObjectBlobStore {
    fn name(&self) -> &str {
        &self.name
    }

    async fn put(&self, put: BlobPut, mut body: BlobBody<'_>) -> Result<BlobRef, BlobError> {
        let path = self.path(&put.key)?;
        let limit = match (self.max_size, put.max_size) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut intake = Intake {
            hasher: Sha256Hasher::new(),
            size: 0,
            limit,
        };
        // Up to one part: one request.
        let mut part = PutPayloadMut::new();
        let mut rest = None;
        while let Some(chunk) = next_chunk(&mut body).await? {
            intake.take(&chunk)?;
            let room = self.part_size - part.content_length();
            if chunk.len() >= room {
                let mut chunk = chunk;
                part.push(chunk.split_to(room));
                rest = Some(chunk);
                break;
            }
            part.push(chunk);
        }
        let Some(rest) = rest else {
            self.put_whole(&path, &put, part).await?;
            return Ok(intake.into_ref(self, put));
        };
        // More: a multipart upload, aborted on any failure.
        let options = PutMultipartOptions {
            attributes: self.attributes(&put.media_type),
            ..PutMultipartOptions::default()
        };
        let mut upload = self
            .store
            .put_multipart_opts(&path, options)
            .await
            .map_err(|e| map(Op::Write, put.key.as_str(), e))?;
        let written: Result<(), BlobError> = async {
            let mut in_flight = FuturesUnordered::new();
            let mut pending = Some(rest);
            let key = put.key.as_str();
            loop {
                if part.content_length() == self.part_size {
                    let full = std::mem::take(&mut part).freeze();
                    in_flight.push(upload.put_part(full));
                    while in_flight.len() >= PARTS_IN_FLIGHT {
                        if let Some(done) = in_flight.next().await {
                            done.map_err(|e| map(Op::Write, key, e))?;
                        }
                    }
                }
                let chunk = match pending.take() {
                    Some(chunk) => chunk,
                    None => match next_chunk(&mut body).await? {
                        Some(chunk) => {
                            intake.take(&chunk)?;
                            chunk
                        }
                        None => break,
                    },
                };
                let room = self.part_size - part.content_length();
                let mut chunk = chunk;
                if chunk.len() > room {
                    part.push(chunk.split_to(room));
                    pending = Some(chunk);
                } else if !chunk.is_empty() {
                    part.push(chunk);
                }
            }
            if !part.is_empty() {
                in_flight.push(upload.put_part(std::mem::take(&mut part).freeze()));
            }
            while let Some(done) = in_flight.next().await {
                done.map_err(|e| map(Op::Write, key, e))?;
            }
            Ok(())
        }
        .await;
        let completed = match written {
            Ok(()) => upload
                .complete()
                .await
                .map(drop)
                .map_err(|e| map(Op::Write, put.key.as_str(), e)),
            Err(e) => Err(e),
        };
        if let Err(e) = completed {
            // The parts written so far go; the error that stopped the write
            // is the one reported.
            let _ = upload.abort().await;
            return Err(e);
        }
        Ok(intake.into_ref(self, put))
    }

    async fn get(&self, blob: &BlobRef) -> Result<BlobStream, BlobError> {
        let path = self.path(&blob.key)?;
        let key = blob.key.as_str().to_owned();
        let result = self
            .store
            .get_opts(&path, GetOptions::default())
            .await
            .map_err(|e| map(Op::Read, &key, e))?;
        let chunks = result
            .into_stream()
            .map_err(move |e| map(Op::Read, &key, e))
            .boxed();
        Ok(checked(chunks, blob))
    }

    async fn get_range(&self, blob: &BlobRef, range: Range<u64>) -> Result<BlobStream, BlobError> {
        if range.start > range.end || range.end > blob.size {
            return Err(BlobError::InvalidRange {
                key: blob.key.to_string(),
                start: range.start,
                end: range.end,
                size: blob.size,
            });
        }
        if range.is_empty() {
            return Ok(stream::empty().boxed());
        }
        let path = self.path(&blob.key)?;
        let key = blob.key.as_str().to_owned();
        let options = GetOptions {
            range: Some(GetRange::Bounded(range)),
            ..GetOptions::default()
        };
        let result = self
            .store
            .get_opts(&path, options)
            .await
            .map_err(|e| map(Op::Read, &key, e))?;
        Ok(result
            .into_stream()
            .map_err(move |e| map(Op::Read, &key, e))
            .boxed())
    }

    async fn delete(&self, key: &BlobKey) -> Result<(), BlobError> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) => Ok(()),
            Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(map(Op::Delete, key.as_str(), e)),
        }
    }

    fn list(&self, prefix: Option<&BlobKey>) -> BoxStream<'static, Result<BlobEntry, BlobError>> {
        let path = match prefix {
            Some(key) => match self.path(key) {
                Ok(path) => Some(path),
                Err(e) => return stream::once(async move { Err(e) }).boxed(),
            },
            None => self.prefix.clone(),
        };
        let this = self.clone();
        let shown = prefix.map_or_else(String::new, |p| p.to_string());
        self.store
            .list(path.as_ref())
            .filter_map(move |item| {
                let entry = match item {
                    Ok(meta) => this.key_of(&meta.location).map(|key| {
                        Ok(BlobEntry {
                            key,
                            size: meta.size,
                            last_modified: meta.last_modified,
                        })
                    }),
                    // A directory that vanished while it was walked.
                    Err(object_store::Error::NotFound { .. }) => None,
                    Err(e) => Some(Err(map(Op::List, &shown, e))),
                };
                futures::future::ready(entry)
            })
            .boxed()
    }

    async fn presigned_get(
        &self,
        blob: &BlobRef,
        lifetime: Duration,
    ) -> Result<Option<String>, BlobError> {
        #[cfg(feature = "s3")]
        if let Some(signer) = &self.signer {
            use object_store::signer::{Method, Signer};
            let path = self.path(&blob.key)?;
            let url = signer
                .signed_url(Method::GET, &path, lifetime)
                .await
                .map_err(|e| map(Op::Sign, blob.key.as_str(), e))?;
            return Ok(Some(url.to_string()));
        }
        let _ = (blob, lifetime);
        Ok(None)
    }
}

impl Intake {
    fn into_ref(self, store: &ObjectBlobStore, put: BlobPut) -> BlobRef {
        BlobRef {
            store: store.name.clone(),
            key: put.key,
            size: self.size,
            media_type: put.media_type,
            sha256: self.hasher.finish_hex(),
        }
    }
}
