//! The filesystem store passes the blob conformance suite, lays keys out as
//! files under its root, and leaves no file behind a failed write.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use looopy_blobs::ObjectBlobStore;
use looopy_core::blob::BlobPut;
use looopy_core::{BlobError, BlobKey, BlobStore};
use looopy_testkit::conformance::blobs::{body_of, drain, pattern};
use looopy_testkit::conformance::{BlobBackdoor, UniqueIds, blob_store};

/// Rewrites a blob's file under the root.
struct Disk(PathBuf);

#[async_trait]
impl BlobBackdoor for Disk {
    async fn overwrite(&self, key: &BlobKey, content: Vec<u8>) {
        std::fs::write(self.0.join(key.as_str()), content).expect("overwrite the blob's file");
    }
}

/// Every file under `dir`, relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                let relative = path.strip_prefix(root).expect("under the root");
                out.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_filesystem_store_passes_the_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = ObjectBlobStore::filesystem("files", dir.path()).expect("store");
    blob_store(&store, &Disk(dir.path().to_path_buf()), &UniqueIds::new()).await;
    // The suite deleted some of what it wrote and failed some writes: no
    // staging file is left of them.
    let files = files_under(dir.path());
    assert!(!files.is_empty());
    assert!(
        files.iter().all(|f| !f.contains('#')),
        "no staged upload left behind: {files:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_filesystem_store_passes_on_a_single_thread() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = ObjectBlobStore::filesystem("files", dir.path()).expect("store");
    blob_store(&store, &Disk(dir.path().to_path_buf()), &UniqueIds::new()).await;
}

#[tokio::test]
async fn keys_are_files_under_the_root_and_deletes_remove_empty_directories() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = ObjectBlobStore::filesystem("files", dir.path()).expect("store");
    let key = BlobKey::new("ctx-1/artifact-2/report.pdf").expect("valid");
    let blob = store
        .put(
            BlobPut::new(key.clone(), "application/pdf"),
            body_of(b"%PDF", 2),
        )
        .await
        .expect("put");
    assert_eq!(files_under(dir.path()), vec!["ctx-1/artifact-2/report.pdf"]);
    assert_eq!(
        std::fs::read(dir.path().join("ctx-1/artifact-2/report.pdf")).expect("the file"),
        b"%PDF"
    );
    assert_eq!(blob.media_type, "application/pdf", "kept in the reference");
    store.delete(&key).await.expect("delete");
    assert!(
        !dir.path().join("ctx-1").exists(),
        "directories left empty are removed"
    );
    assert!(dir.path().is_dir(), "the root stays");
}

#[tokio::test]
async fn the_stores_own_limit_refuses_large_bodies_and_leaves_no_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let limit = 6 * 1024 * 1024;
    let store = ObjectBlobStore::filesystem("files", dir.path())
        .expect("store")
        .with_max_size(limit)
        .with_part_size(5 * 1024 * 1024);
    let key = BlobKey::new("big/one").expect("valid");
    // Past the store's limit after the first part went out.
    let err = store
        .put(
            BlobPut::new(key.clone(), "application/octet-stream"),
            body_of(&pattern(7 * 1024 * 1024, 1), 64 * 1024),
        )
        .await
        .expect_err("too large");
    assert!(
        matches!(err, BlobError::TooLarge { limit: l } if l == limit),
        "{err}"
    );
    assert_eq!(
        files_under(dir.path()),
        Vec::<String>::new(),
        "nothing left, staged or not"
    );
    // A write's own limit below the store's wins; above it, the store's.
    let err = store
        .put(
            BlobPut::new(key.clone(), "text/plain").with_max_size(10),
            body_of(&[0; 11], 4),
        )
        .await
        .expect_err("too large");
    assert!(matches!(err, BlobError::TooLarge { limit: 10 }), "{err}");
    let err = store
        .put(
            BlobPut::new(key.clone(), "text/plain").with_max_size(u64::MAX),
            body_of(&pattern(limit as usize + 1, 2), 1 << 20),
        )
        .await
        .expect_err("too large");
    assert!(
        matches!(err, BlobError::TooLarge { limit: l } if l == limit),
        "{err}"
    );
    // Within it, in several parts: written whole.
    let content = pattern(limit as usize, 3);
    let blob = store
        .put(
            BlobPut::new(key.clone(), "text/plain"),
            body_of(&content, 100_000),
        )
        .await
        .expect("at the limit");
    let (out, err) = drain(store.get(&blob).await.expect("get")).await;
    assert!(err.is_none() && out == content);
    assert_eq!(files_under(dir.path()), vec!["big/one"]);
}

#[tokio::test]
async fn a_blob_whose_file_was_removed_is_not_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = ObjectBlobStore::filesystem("files", dir.path()).expect("store");
    let key = BlobKey::new("gone/soon").expect("valid");
    let blob = store
        .put(BlobPut::new(key.clone(), "text/plain"), body_of(b"abc", 3))
        .await
        .expect("put");
    std::fs::remove_file(dir.path().join("gone/soon")).expect("remove");
    let err = store.get(&blob).await.err();
    assert!(
        matches!(&err, Some(BlobError::NotFound { key: k }) if k == "gone/soon"),
        "{err:?}"
    );
    assert_eq!(
        store
            .presigned_get(&blob, std::time::Duration::from_secs(60))
            .await
            .expect("no error"),
        None,
        "the filesystem signs no URL: the server's route serves it"
    );
}

/// A 1 MiB tmpfs mounted on a temp dir, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// Mounts it (the project's machines run the tests as root). `None`,
    /// with a loud line, only when mounting is not allowed and
    /// `LOOOPY_SKIP_EXTERNAL=1`.
    fn mount() -> Option<SmallDisk> {
        let dir = tempfile::tempdir().expect("temp dir");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|status| status.success());
        if mounted {
            return Some(SmallDisk { dir });
        }
        if std::env::var("LOOOPY_SKIP_EXTERNAL").as_deref() == Ok("1") {
            eprintln!("\n!!!!! SKIPPED: cannot mount a tmpfs (LOOOPY_SKIP_EXTERNAL=1) !!!!!\n");
            return None;
        }
        panic!(
            "cannot mount a tmpfs for the full-disk test: run the tests as root (or LOOOPY_SKIP_EXTERNAL=1 to skip)"
        );
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[tokio::test]
async fn a_full_disk_is_storage_full_and_leaves_nothing() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let store = ObjectBlobStore::filesystem("files", disk.dir.path())
        .expect("store")
        .with_part_size(5 * 1024 * 1024);
    let kept = store
        .put(
            BlobPut::new(BlobKey::new("kept/one").expect("valid"), "text/plain"),
            body_of(&pattern(100_000, 1), 10_000),
        )
        .await
        .expect("a blob that fits");
    // One request, then a multipart upload whose first part does not fit.
    for len in [3 * 1024 * 1024, 12 * 1024 * 1024] {
        let key = BlobKey::new(format!("full/{len}")).expect("valid");
        let err = store
            .put(
                BlobPut::new(key.clone(), "application/octet-stream"),
                body_of(&pattern(len, 2), 64 * 1024),
            )
            .await
            .expect_err("the disk is full");
        assert!(
            matches!(err, BlobError::StorageFull { .. }),
            "{len} bytes: {err}"
        );
        assert!(
            std::error::Error::source(&err).is_some(),
            "the cause is kept"
        );
    }
    assert_eq!(
        files_under(disk.dir.path()),
        vec!["kept/one"],
        "nothing of the failed writes is left"
    );
    let (out, err) = drain(store.get(&kept).await.expect("get")).await;
    assert!(
        err.is_none() && out == pattern(100_000, 1),
        "the earlier blob is intact"
    );
}

#[tokio::test]
async fn the_sweep_deletes_old_orphans_only() {
    use std::collections::HashSet;
    use std::time::Duration;

    use looopy_core::blob::sweep_orphans;

    let dir = tempfile::tempdir().expect("temp dir");
    let store = ObjectBlobStore::filesystem("files", dir.path()).expect("store");
    let mut keys = Vec::new();
    for name in [
        "ctx/referenced",
        "ctx/orphan",
        "ctx/sub/orphan",
        "other/orphan",
    ] {
        let key = BlobKey::new(name).expect("valid");
        store
            .put(
                BlobPut::new(key.clone(), "text/plain"),
                body_of(name.as_bytes(), 4),
            )
            .await
            .expect("put");
        keys.push(key);
    }
    let referenced: HashSet<BlobKey> = [keys[0].clone()].into();
    let is_referenced = |key: &BlobKey| {
        let found = referenced.contains(key);
        async move { found }
    };
    let prefix = BlobKey::new("ctx").expect("valid");
    // Just written: everything is too young to be swept.
    let now = chrono::Utc::now();
    let report = sweep_orphans(
        &store,
        Some(&prefix),
        Duration::from_secs(3600),
        now,
        is_referenced,
    )
    .await
    .expect("sweep");
    assert_eq!(
        (report.listed, report.young, report.deleted.len()),
        (3, 3, 0)
    );
    // An hour on: the orphans below the prefix go, the referenced one and
    // those outside the prefix stay.
    let later = now + chrono::Duration::hours(2);
    let report = sweep_orphans(
        &store,
        Some(&prefix),
        Duration::from_secs(3600),
        later,
        is_referenced,
    )
    .await
    .expect("sweep");
    let mut deleted: Vec<&str> = report.deleted.iter().map(BlobKey::as_str).collect();
    deleted.sort();
    assert_eq!(deleted, vec!["ctx/orphan", "ctx/sub/orphan"]);
    assert_eq!((report.listed, report.referenced, report.young), (3, 1, 0));
    assert_eq!(
        files_under(dir.path()),
        vec!["ctx/referenced", "other/orphan"]
    );
}
