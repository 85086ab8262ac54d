//! The rules of [`BlobStore`]: round trips of every size, range reads,
//! missing blobs, deletes, keys, the size limit and failed bodies leaving
//! nothing behind, damaged content detected, and the listing of the
//! orphan sweep.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::Utc;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use looopy_core::blob::{BlobBody, BlobEntry, BlobPut, BlobStream, read_to_bytes};
use looopy_core::{BlobError, BlobKey, BlobRef, BlobStore};

use super::UniqueIds;

/// The SHA-256 of nothing.
const SHA256_EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// The SHA-256 of `abc` (FIPS 180-2's first example).
const SHA256_ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

/// The size of the large round trip: more than one multipart part of the
/// default part size (8 MiB), not a multiple of the chunk size.
const LARGE: usize = 12 * 1024 * 1024 + 12_345;
/// The chunk size of the large bodies.
const CHUNK: usize = 100_000;

/// What the suite needs of a backend besides the trait: changing a stored
/// blob behind the store's back, as a damaged disk or another writer would.
#[async_trait]
pub trait BlobBackdoor: Send + Sync {
    /// Replaces the stored content of `key` with `content`, keeping the
    /// store's reference to it unchanged.
    async fn overwrite(&self, key: &BlobKey, content: Vec<u8>);
}

/// Runs every rule on `store`, writing only under keys that start with
/// the prefix of `ids`; panics at the first broken rule. `backdoor`
/// damages blobs for the checksum rule.
pub async fn blob_store(store: &dyn BlobStore, backdoor: &dyn BlobBackdoor, ids: &UniqueIds) {
    let root = BlobKey::new(ids.prefix()).expect("the UniqueIds prefix is a valid key");
    round_trips(store, &root, ids).await;
    ranges(store, &root, ids).await;
    missing_blobs(store, &root, ids).await;
    deletes(store, &root, ids).await;
    keys(store, &root, ids).await;
    size_limits(store, &root, ids).await;
    failed_bodies(store, &root, ids).await;
    damaged_content(store, backdoor, &root, ids).await;
    listing(store, &root, ids).await;
}

/// A key under `root` that no other case uses.
fn fresh(root: &BlobKey, ids: &UniqueIds, what: &str) -> BlobKey {
    root.join(&ids.next(what)).expect("a valid key")
}

/// `content` as a body of `chunk`-sized chunks.
pub fn body_of(content: &[u8], chunk: usize) -> BlobBody<'static> {
    let chunks: Vec<Result<Bytes, std::io::Error>> = content
        .chunks(chunk.max(1))
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    stream::iter(chunks).boxed()
}

/// `len` bytes that differ from position to position (no run repeats
/// within a part), the same for the same `seed`.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}

/// Everything a read stream yields: the bytes, then the error it ended
/// with, if any.
pub async fn drain(stream: BlobStream) -> (Vec<u8>, Option<BlobError>) {
    let mut stream = stream;
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => out.extend_from_slice(&chunk),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

/// The whole blob, checked; panics on any error.
async fn read_all(store: &dyn BlobStore, blob: &BlobRef) -> Vec<u8> {
    let stream = store
        .get(blob)
        .await
        .unwrap_or_else(|e| panic!("get `{}`: {e}", blob.key));
    let (out, err) = drain(stream).await;
    if let Some(e) = err {
        panic!("reading `{}` failed: {e}", blob.key);
    }
    out
}

/// The error of reading `blob` whole: from `get` or from its stream.
async fn read_error(store: &dyn BlobStore, blob: &BlobRef) -> Option<BlobError> {
    match store.get(blob).await {
        Err(e) => Some(e),
        Ok(stream) => drain(stream).await.1,
    }
}

async fn put(store: &dyn BlobStore, key: &BlobKey, media: &str, body: BlobBody<'_>) -> BlobRef {
    store
        .put(BlobPut::new(key.clone(), media), body)
        .await
        .unwrap_or_else(|e| panic!("put `{key}`: {e}"))
}

/// The entries listed under `prefix`, sorted by key.
async fn listed(store: &dyn BlobStore, prefix: &BlobKey) -> Vec<BlobEntry> {
    let mut entries: Vec<BlobEntry> = store
        .list(Some(prefix))
        .map(|entry| entry.unwrap_or_else(|e| panic!("listing `{prefix}`: {e}")))
        .collect()
        .await;
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    entries
}

/// A blob that must not exist: not read, not listed.
async fn assert_absent(store: &dyn BlobStore, key: &BlobKey, rule: &str) {
    let probe = BlobRef {
        store: store.name().to_owned(),
        key: key.clone(),
        size: 0,
        media_type: "application/octet-stream".into(),
        sha256: SHA256_EMPTY.into(),
    };
    let err = read_error(store, &probe).await;
    assert!(
        matches!(&err, Some(BlobError::NotFound { key: k }) if k == key.as_str()),
        "{rule}: `{key}` must not exist, reading it gave {err:?}"
    );
    let parent = key.parent().expect("under the root");
    assert!(
        listed(store, &parent).await.iter().all(|e| &e.key != key),
        "{rule}: `{key}` must not be listed"
    );
}

async fn round_trips(store: &dyn BlobStore, root: &BlobKey, ids: &UniqueIds) {
    // Empty.
    let key = fresh(root, ids, "empty");
    let empty = put(store, &key, "text/plain", stream::empty().boxed()).await;
    assert_eq!(empty.size, 0);
    assert_eq!(empty.sha256, SHA256_EMPTY, "the SHA-256 of an empty blob");
    assert_eq!(empty.store, store.name(), "a reference names its store");
    assert_eq!(empty.key, key);
    assert_eq!(empty.media_type, "text/plain");
    assert!(read_all(store, &empty).await.is_empty());

    // Small, in uneven chunks with empty ones among them.
    let key = fresh(root, ids, "small");
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from_static(b"a")),
        Ok(Bytes::new()),
        Ok(Bytes::from_static(b"bc")),
    ];
    let small = put(
        store,
        &key,
        "text/plain; charset=utf-8",
        stream::iter(chunks).boxed(),
    )
    .await;
    assert_eq!(small.size, 3);
    assert_eq!(small.sha256, SHA256_ABC, "the SHA-256 of `abc`");
    assert_eq!(small.media_type, "text/plain; charset=utf-8");
    assert_eq!(read_all(store, &small).await, b"abc");
    assert_eq!(
        read_to_bytes(store, &small, 3)
            .await
            .expect("within the limit"),
        "abc"
    );
    assert!(matches!(
        read_to_bytes(store, &small, 2).await,
        Err(BlobError::TooLarge { limit: 2 })
    ));

    // Large, in chunks: several parts.
    let key = fresh(root, ids, "large");
    let content = pattern(LARGE, 1);
    let large = put(store, &key, "application/pdf", body_of(&content, CHUNK)).await;
    assert_eq!(large.size, LARGE as u64);
    assert_eq!(large.sha256.len(), 64, "64 hex digits");
    assert!(
        large
            .sha256
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert!(
        read_all(store, &large).await == content,
        "the large blob reads back unchanged"
    );
    // The same content in other chunks has the same checksum; other content another.
    let again = put(
        store,
        &fresh(root, ids, "large-again"),
        "application/pdf",
        body_of(&content, 777_777),
    )
    .await;
    assert_eq!(again.sha256, large.sha256);
    let other = put(
        store,
        &fresh(root, ids, "large-other"),
        "application/pdf",
        body_of(&pattern(LARGE, 2), CHUNK),
    )
    .await;
    assert_ne!(other.sha256, large.sha256);

    // A write replaces what was under the key.
    let replaced = put(store, &key, "text/plain", body_of(b"new", 2)).await;
    assert_eq!(
        read_all(store, &replaced).await,
        b"new",
        "a second write replaces the first"
    );
    let parent = key.parent().expect("under the root");
    let times = listed(store, &parent)
        .await
        .iter()
        .filter(|e| e.key == key)
        .count();
    assert_eq!(times, 1, "a replaced blob is listed once");
}

async fn ranges(store: &dyn BlobStore, root: &BlobKey, ids: &UniqueIds) {
    let key = fresh(root, ids, "ranges");
    let content = pattern(LARGE, 3);
    let blob = put(
        store,
        &key,
        "application/octet-stream",
        body_of(&content, CHUNK),
    )
    .await;
    let part = 8 * 1024 * 1024;
    for range in [
        0..10,
        1000..1001,
        part - 5..part + 5,
        LARGE - 7..LARGE,
        0..LARGE,
    ] {
        let stream = store
            .get_range(&blob, range.start as u64..range.end as u64)
            .await
            .unwrap_or_else(|e| panic!("range {range:?}: {e}"));
        let (out, err) = drain(stream).await;
        assert!(err.is_none(), "range {range:?}: {err:?}");
        assert!(
            out == content[range.clone()],
            "range {range:?} reads those bytes"
        );
    }
    let (out, err) = drain(store.get_range(&blob, 5..5).await.expect("an empty range")).await;
    assert!(
        out.is_empty() && err.is_none(),
        "an empty range reads nothing"
    );
    let size = LARGE as u64;
    for (start, end) in [(0, size + 1), (size, size + 1), (10, 5)] {
        let err = store.get_range(&blob, start..end).await.err();
        assert!(
            matches!(err, Some(BlobError::InvalidRange { start: s, end: e, size: n, .. }) if s == start && e == end && n == size),
            "range {start}..{end} of {size} bytes is refused: {err:?}"
        );
    }
}

async fn missing_blobs(store: &dyn BlobStore, root: &BlobKey, ids: &UniqueIds) {
    let key = fresh(root, ids, "never-written");
    assert_absent(store, &key, "a key never written").await;
    let probe = BlobRef {
        store: store.name().to_owned(),
        key: key.clone(),
        size: 10,
        media_type: "text/plain".into(),
        sha256: SHA256_EMPTY.into(),
    };
    let err = match store.get_range(&probe, 0..5).await {
        Err(e) => Some(e),
        Ok(stream) => drain(stream).await.1,
    };
    assert!(
        matches!(&err, Some(BlobError::NotFound { .. })),
        "a range of a missing blob: {err:?}"
    );
    store
        .delete(&key)
        .await
        .expect("deleting a missing blob succeeds");
}

async fn deletes(store: &dyn BlobStore, root: &BlobKey, ids: &UniqueIds) {
    let dir = fresh(root, ids, "deletes");
    let kept = dir.join("kept").expect("valid");
    let gone = dir.join("gone").expect("valid");
    put(store, &kept, "text/plain", body_of(b"kept", 4)).await;
    put(store, &gone, "text/plain", body_of(b"gone", 4)).await;
    store.delete(&gone).await.expect("delete");
    assert_absent(store, &gone, "a deleted blob").await;
    let left: Vec<BlobKey> = listed(store, &dir)
        .await
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(left, vec![kept.clone()], "a delete removes that blob only");
    store.delete(&gone).await.expect("deleting twice succeeds");
    store.delete(&kept).await.expect("delete");
    assert!(listed(store, &dir).await.is_empty());
}

async fn keys(store: &dyn BlobStore, root: &BlobKey, ids: &UniqueIds) {
    for bad in [
        "../x",
        "a/../../x",
        "/etc/passwd",
        "a//b",
        "a/",
        "",
        ".",
        "a\\b",
        "a b",
    ] {
        assert!(
            matches!(BlobKey::new(bad), Err(BlobError::InvalidKey { .. })),
            "`{bad}` is refused as a key"
        );
        assert!(root.join(bad).is_err(), "`{bad}` is refused as a segment");
    }
    // Every allowed character, and a deep key, round trip and list as written.
    let dir = fresh(root, ids, "keys");
    let odd = dir.join("A-z_0.9=~+@.x").expect("every allowed character");
    let escaped = dir
        .join(&BlobKey::escape_segment("../a b/ä"))
        .expect("an escaped segment");
    let deep = BlobKey::new(format!("{dir}/d1/d2/d3/leaf")).expect("valid");
    for key in [&odd, &escaped, &deep] {
        let blob = put(
            store,
            key,
            "text/plain",
            body_of(key.as_str().as_bytes(), 7),
        )
        .await;
        assert_eq!(read_all(store, &blob).await, key.as_str().as_bytes());
    }
    let mut expected = vec![odd, escaped, deep];
    expected.sort();
    let keys: Vec<BlobKey> = listed(store, &dir)
        .await
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(keys, expected, "keys list exactly as written");
}

async fn size_limits(store: &dyn BlobStore, root: &BlobKey, ids: &UniqueIds) {
    // At the limit: written.
    let key = fresh(root, ids, "at-limit");
    let blob = store
        .put(
            BlobPut::new(key.clone(), "text/plain").with_max_size(1000),
            body_of(&pattern(1000, 4), 300),
        )
        .await
        .expect("a body of exactly the limit is written");
    assert_eq!(blob.size, 1000);
    // Past it, in one part and in several: refused, nothing left.
    for (len, limit) in [(1001usize, 1000u64), (LARGE, 9 * 1024 * 1024)] {
        let key = fresh(root, ids, "too-large");
        let err = store
            .put(
                BlobPut::new(key.clone(), "text/plain").with_max_size(limit),
                body_of(&pattern(len, 5), CHUNK),
            )
            .await
            .err();
        assert!(
            matches!(err, Some(BlobError::TooLarge { limit: l }) if l == limit),
            "{len} bytes past a limit of {limit}: {err:?}"
        );
        assert_absent(store, &key, "a write refused as too large").await;
    }
    // A refused write does not disturb an earlier blob under its key.
    let err = store
        .put(
            BlobPut::new(key.clone(), "text/plain").with_max_size(10),
            body_of(&pattern(100, 6), 10),
        )
        .await
        .err();
    assert!(matches!(err, Some(BlobError::TooLarge { .. })));
    assert_eq!(
        read_all(store, &blob).await,
        pattern(1000, 4),
        "the earlier blob stays"
    );
}

/// `content` as chunks, then an I/O error.
fn failing_body(content: Vec<u8>) -> BoxStream<'static, Result<Bytes, std::io::Error>> {
    let chunks: Vec<Result<Bytes, std::io::Error>> = content
        .chunks(CHUNK)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .chain([Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "the client went away",
        ))])
        .collect();
    stream::iter(chunks).boxed()
}

async fn failed_bodies(store: &dyn BlobStore, root: &BlobKey, ids: &UniqueIds) {
    for len in [10, LARGE] {
        let key = fresh(root, ids, "failed-body");
        let err = store
            .put(
                BlobPut::new(key.clone(), "text/plain"),
                failing_body(pattern(len, 7)),
            )
            .await
            .err();
        assert!(
            matches!(&err, Some(BlobError::Body { source }) if source.kind() == std::io::ErrorKind::ConnectionReset),
            "a body that fails after {len} bytes: {err:?}"
        );
        assert_absent(store, &key, "a write whose body failed").await;
    }
}

async fn damaged_content(
    store: &dyn BlobStore,
    backdoor: &dyn BlobBackdoor,
    root: &BlobKey,
    ids: &UniqueIds,
) {
    let content = b"hello world".to_vec();
    for (what, damaged) in [
        ("a changed byte", b"hello wOrld".to_vec()),
        ("a shorter content", b"hello".to_vec()),
        ("a longer content", b"hello world!".to_vec()),
    ] {
        let key = fresh(root, ids, "damaged");
        let blob = put(store, &key, "text/plain", body_of(&content, 4)).await;
        backdoor.overwrite(&key, damaged).await;
        let (out, err) = drain(store.get(&blob).await.expect("the object is there")).await;
        assert!(
            matches!(&err, Some(BlobError::ChecksumMismatch { key: k, expected, .. }) if k == key.as_str() && *expected == blob.sha256),
            "{what} is detected: {err:?}"
        );
        assert!(
            out.len() < content.len(),
            "{what}: the whole is never passed on"
        );
        assert!(matches!(
            read_to_bytes(store, &blob, 1 << 20).await,
            Err(BlobError::ChecksumMismatch { .. })
        ));
    }
}

async fn listing(store: &dyn BlobStore, root: &BlobKey, ids: &UniqueIds) {
    let dir = fresh(root, ids, "sweep");
    // A sibling whose name extends the directory's is not under it.
    let sibling = BlobKey::new(format!("{dir}x/other")).expect("valid");
    let before = Utc::now() - chrono::Duration::seconds(2);
    let mut written = Vec::new();
    for (i, len) in [0usize, 5, 2000].into_iter().enumerate() {
        let key = dir.join(&format!("blob-{i}")).expect("valid");
        put(
            store,
            &key,
            "application/octet-stream",
            body_of(&pattern(len, 8), 512),
        )
        .await;
        written.push((key, len as u64));
    }
    put(store, &sibling, "text/plain", body_of(b"x", 1)).await;
    let after = Utc::now() + chrono::Duration::seconds(2);
    let entries = listed(store, &dir).await;
    let got: Vec<(BlobKey, u64)> = entries.iter().map(|e| (e.key.clone(), e.size)).collect();
    assert_eq!(
        got, written,
        "the listing has every blob under the prefix, with its size, and nothing else"
    );
    for entry in &entries {
        assert!(
            entry.last_modified >= before && entry.last_modified <= after,
            "`{}` was written at {}, between {before} and {after}",
            entry.key,
            entry.last_modified
        );
        assert!(entry.age(Utc::now()) < Duration::from_secs(300));
    }
    // Everything, unprefixed, includes them.
    let everything: Vec<BlobKey> = store
        .list(None)
        .filter_map(|e| async move { e.ok().map(|e| e.key) })
        .filter(|k| futures::future::ready(k.starts_with(root)))
        .collect()
        .await;
    for (key, _) in &written {
        assert!(
            everything.contains(key),
            "listing everything includes `{key}`"
        );
    }
    assert!(everything.contains(&sibling));
    // A prefix with nothing under it lists nothing.
    assert!(
        listed(store, &fresh(root, ids, "nothing-here"))
            .await
            .is_empty()
    );
    // The sweep's step: delete the old ones, the listing follows.
    for (key, _) in &written {
        store.delete(key).await.expect("delete");
    }
    assert!(
        listed(store, &dir).await.is_empty(),
        "deleted blobs are no longer listed"
    );
}
