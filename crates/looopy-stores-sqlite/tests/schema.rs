//! Opening a database: the schema is created and versioned, a newer one is
//! refused, and faults (a missing directory, a corrupt or read-only file)
//! give typed errors with what to do, never a panic or a misread.

use std::time::Duration;

use looopy_core::store::TaskRecord;
use looopy_core::{Message, StoreError, TaskState, TaskStatus};
use looopy_stores_sqlite::{OpenError, SCHEMA_VERSION, SqliteBackend, SqliteConfig};

#[tokio::test]
async fn a_missing_directory_is_created_and_the_schema_is_applied_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("a/b/looopy.db");
    let backend = SqliteBackend::open(SqliteConfig::new(&path))
        .await
        .expect("open creates the directories");
    assert!(path.exists());
    assert_eq!(
        backend.schema_version().await.expect("version"),
        SCHEMA_VERSION
    );
    let stores = looopy_stores_sqlite::stores(backend.clone());
    let kept = Message::user("kept");
    stores
        .messages
        .append("c", std::slice::from_ref(&kept))
        .await
        .expect("append");
    backend.close().await;

    // Opened again (a restart): nothing migrated twice, nothing lost.
    let again = SqliteBackend::open(SqliteConfig::new(&path))
        .await
        .expect("open again");
    assert_eq!(
        again.schema_version().await.expect("version"),
        SCHEMA_VERSION
    );
    let stores = looopy_stores_sqlite::stores(again);
    assert_eq!(stores.messages.load("c").await.expect("load"), [kept]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_opening_one_new_file_at_once_do_not_race() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("looopy.db");
    let opens = (0..4).map(|_| SqliteBackend::open(SqliteConfig::new(&path)));
    for opened in futures::future::join_all(opens).await {
        let backend = opened.expect("every open succeeds");
        assert_eq!(
            backend.schema_version().await.expect("version"),
            SCHEMA_VERSION
        );
    }
}

#[tokio::test]
async fn a_database_of_a_newer_looopy_is_refused_and_left_as_it_is() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("looopy.db");
    let backend = SqliteBackend::open(SqliteConfig::new(&path))
        .await
        .expect("open");
    backend.close().await;
    // What a later Looopy would have recorded.
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("raw connect");
    sqlx::query("INSERT INTO schema_version (version, applied_at) VALUES (?, 'later')")
        .bind(SCHEMA_VERSION + 1)
        .execute(&pool)
        .await
        .expect("raw insert");
    pool.close().await;

    let error = SqliteBackend::open(SqliteConfig::new(&path))
        .await
        .expect_err("a newer schema is refused");
    assert!(
        matches!(error, OpenError::NewerSchema { found, supported, .. }
            if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("newer"), "{message}");
    assert!(message.contains("looopy.db"), "{message}");
    let store_error = StoreError::from(error);
    assert!(matches!(store_error, StoreError::Backend { .. }));
}

#[tokio::test]
async fn a_corrupt_file_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("looopy.db");
    std::fs::write(&path, vec![0x5a; 8192]).expect("write garbage");
    let error = SqliteBackend::open(SqliteConfig::new(&path))
        .await
        .expect_err("garbage is not opened");
    assert!(matches!(error, OpenError::Open { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("not a SQLite database or is corrupt"),
        "{message}"
    );
    assert!(
        std::error::Error::source(&error).is_some(),
        "SQLite's error is kept"
    );
    assert_eq!(
        std::fs::read(&path).expect("read").len(),
        8192,
        "the file is not touched"
    );
}

#[tokio::test]
async fn a_directory_that_cannot_be_created_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let error = SqliteBackend::open(SqliteConfig::new(file.join("looopy.db")))
        .await
        .expect_err("a file is no directory");
    assert!(matches!(error, OpenError::Directory { .. }), "{error:?}");
    assert!(error.to_string().contains("a-file"), "{error}");
}

/// Makes a file read-only, as far as this process goes: `chmod` for a
/// normal user, `chattr +i` for root (whom permissions do not stop).
fn make_read_only(path: &std::path::Path, read_only: bool) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let mode = if read_only { 0o444 } else { 0o644 };
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    let writable = std::fs::OpenOptions::new().append(true).open(path).is_ok();
    if writable != read_only {
        return true;
    }
    let flag = if read_only { "+i" } else { "-i" };
    std::process::Command::new("chattr")
        .arg(flag)
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test]
async fn a_read_only_file_fails_writes_with_a_message_and_loses_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("looopy.db");
    let config = SqliteConfig {
        busy_timeout_ms: 200,
        ..SqliteConfig::new(&path)
    };
    let backend = SqliteBackend::open(config.clone()).await.expect("open");
    let stores = looopy_stores_sqlite::stores(backend.clone());
    let record = TaskRecord::new("t1", "c1", None, TaskStatus::new(TaskState::Working));
    stores.task_records.put(&record).await.expect("put");
    backend.close().await;

    let files = ["looopy.db", "looopy.db-wal", "looopy.db-shm"].map(|f| dir.path().join(f));
    let existing: Vec<_> = files.iter().filter(|f| f.exists()).collect();
    for file in &existing {
        assert!(
            make_read_only(file, true),
            "cannot make {} read-only",
            file.display()
        );
    }
    let opened = SqliteBackend::open(config.clone()).await;
    let outcome = match opened {
        Err(error) => {
            let message = error.to_string();
            assert!(message.contains("read-only"), "{message}");
            "refused at open"
        }
        Ok(backend) => {
            let stores = looopy_stores_sqlite::stores(backend.clone());
            let error = stores
                .task_records
                .put(&TaskRecord::new(
                    "t2",
                    "c1",
                    None,
                    TaskStatus::new(TaskState::Working),
                ))
                .await
                .expect_err("a write to a read-only file fails");
            assert!(
                matches!(
                    error,
                    StoreError::Backend { .. } | StoreError::Unavailable { .. }
                ),
                "{error:?}"
            );
            backend.close().await;
            "refused at the write"
        }
    };
    for file in &existing {
        assert!(make_read_only(file, false));
    }
    let backend = SqliteBackend::open(config)
        .await
        .expect("open once writable");
    let stores = looopy_stores_sqlite::stores(backend);
    let kept = stores.task_records.get("t1").await.expect("get");
    assert_eq!(
        kept.map(|r| r.task_id),
        Some("t1".into()),
        "{outcome}: nothing lost"
    );
    assert_eq!(stores.task_records.get("t2").await.expect("get"), None);
    tokio::time::sleep(Duration::from_millis(1)).await;
}
