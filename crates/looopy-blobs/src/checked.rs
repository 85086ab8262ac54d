//! SHA-256 while writing, and whole reads checked against their
//! reference.

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use looopy_core::blob::BlobStream;
use looopy_core::{BlobError, BlobRef};
use sha2::{Digest, Sha256};

/// A running SHA-256.
pub(crate) struct Sha256Hasher(Sha256);

impl Sha256Hasher {
    pub(crate) fn new() -> Self {
        Sha256Hasher(Sha256::new())
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest as 64 lower-case hex digits.
    pub(crate) fn finish_hex(self) -> String {
        hex(&self.0.finalize())
    }
}

/// `bytes` as lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

struct Check {
    chunks: BoxStream<'static, Result<Bytes, BlobError>>,
    /// The chunk read but not yet passed on: the last one is passed on
    /// only once the whole matched.
    held: Option<Bytes>,
    hasher: Option<Sha256Hasher>,
    size: u64,
    blob: BlobRef,
}

impl Check {
    fn mismatch(&mut self, actual: Option<String>) -> BlobError {
        BlobError::ChecksumMismatch {
            key: self.blob.key.to_string(),
            expected: self.blob.sha256.clone(),
            actual,
            expected_size: self.blob.size,
            actual_size: self.size,
        }
    }
}

/// `chunks`, the whole content of `blob`, passed on one chunk behind: the
/// last chunk comes only when size and SHA-256 match the reference, and an
/// error comes instead when they do not (or as soon as more bytes than
/// the reference's size arrive).
pub(crate) fn checked(
    chunks: BoxStream<'static, Result<Bytes, BlobError>>,
    blob: &BlobRef,
) -> BlobStream {
    let state = Check {
        chunks,
        held: None,
        hasher: Some(Sha256Hasher::new()),
        size: 0,
        blob: blob.clone(),
    };
    stream::unfold(Some(state), |state| async move {
        let mut check = state?;
        loop {
            match check.chunks.next().await {
                Some(Err(e)) => return Some((Err(e), None)),
                Some(Ok(chunk)) => {
                    if chunk.is_empty() {
                        continue;
                    }
                    check.size += chunk.len() as u64;
                    if check.size > check.blob.size {
                        let e = check.mismatch(None);
                        return Some((Err(e), None));
                    }
                    if let Some(hasher) = &mut check.hasher {
                        hasher.update(&chunk);
                    }
                    if let Some(previous) = check.held.replace(chunk) {
                        return Some((Ok(previous), Some(check)));
                    }
                }
                None => {
                    let actual = check.hasher.take().map(Sha256Hasher::finish_hex)?;
                    if check.size != check.blob.size || actual != check.blob.sha256 {
                        let e = check.mismatch(Some(actual));
                        return Some((Err(e), None));
                    }
                    let last = check.held.take()?;
                    return Some((Ok(last), None));
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::BlobKey;

    fn blob_of(content: &[u8]) -> BlobRef {
        let mut hasher = Sha256Hasher::new();
        hasher.update(content);
        BlobRef {
            store: "t".into(),
            key: BlobKey::new("k").expect("valid"),
            size: content.len() as u64,
            media_type: "application/octet-stream".into(),
            sha256: hasher.finish_hex(),
        }
    }

    fn chunks(parts: &[&'static [u8]]) -> BoxStream<'static, Result<Bytes, BlobError>> {
        let parts: Vec<_> = parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        stream::iter(parts).boxed()
    }

    async fn collect(stream: BlobStream) -> (Vec<u8>, Option<BlobError>) {
        let mut out = Vec::new();
        let mut stream = stream;
        while let Some(item) = stream.next().await {
            match item {
                Ok(chunk) => out.extend_from_slice(&chunk),
                Err(e) => return (out, Some(e)),
            }
        }
        (out, None)
    }

    #[test]
    fn the_sha256_of_nothing_is_the_known_one() {
        assert_eq!(
            Sha256Hasher::new().finish_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[tokio::test]
    async fn matching_content_streams_whole() {
        let blob = blob_of(b"hello world");
        let (out, err) = collect(checked(chunks(&[b"hello", b" ", b"world"]), &blob)).await;
        assert_eq!(out, b"hello world");
        assert!(err.is_none());
        let empty = blob_of(b"");
        let (out, err) = collect(checked(chunks(&[]), &empty)).await;
        assert!(out.is_empty() && err.is_none());
    }

    #[tokio::test]
    async fn changed_content_ends_in_an_error_instead_of_its_last_chunk() {
        let blob = blob_of(b"hello world");
        let (out, err) = collect(checked(chunks(&[b"hello", b" ", b"wOrld"]), &blob)).await;
        assert_eq!(out, b"hello ", "the last chunk is held back");
        assert!(
            matches!(
                err,
                Some(BlobError::ChecksumMismatch {
                    actual: Some(_),
                    ..
                })
            ),
            "{err:?}"
        );
        // Shorter, and longer (stopped as soon as it passes the size).
        let (_, err) = collect(checked(chunks(&[b"hello"]), &blob)).await;
        assert!(matches!(
            err,
            Some(BlobError::ChecksumMismatch { actual_size: 5, .. })
        ));
        let (out, err) = collect(checked(chunks(&[b"hello world", b"!"]), &blob)).await;
        assert!(out.is_empty());
        assert!(matches!(
            err,
            Some(BlobError::ChecksumMismatch { actual: None, .. })
        ));
    }
}
