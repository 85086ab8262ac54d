//! The `[artifacts]` shapes of `looopy.toml` open the stores they name.

use looopy_blobs::{BlobBackend, ObjectBlobStore, S3Config};
use looopy_core::{BlobError, BlobStore};

#[test]
fn both_backends_parse_from_toml() {
    let fs: BlobBackend = toml::from_str("backend = \"filesystem\"\npath = \"data/blobs\"\n")
        .expect("a filesystem backend");
    assert_eq!(
        fs,
        BlobBackend::Filesystem {
            path: "data/blobs".into()
        }
    );
    let s3: BlobBackend = toml::from_str(
        r#"
        backend = "s3"
        bucket = "files"
        prefix = "looopy/blobs"
        endpoint = "http://127.0.0.1:9000"
        region = "eu-west-1"
        allow_http = true
        max_retries = 1
        "#,
    )
    .expect("an S3 backend");
    let BlobBackend::S3(config) = s3 else {
        panic!("not S3: {s3:?}");
    };
    assert_eq!(
        config,
        S3Config {
            bucket: "files".into(),
            prefix: Some("looopy/blobs".into()),
            endpoint: Some("http://127.0.0.1:9000".into()),
            region: Some("eu-west-1".into()),
            allow_http: true,
            max_retries: Some(1),
            ..S3Config::default()
        }
    );
}

#[test]
fn unknown_backends_and_fields_are_refused() {
    let unknown = toml::from_str::<BlobBackend>("backend = \"ftp\"\npath = \"x\"\n");
    assert!(unknown.is_err());
    let typo = toml::from_str::<BlobBackend>("backend = \"s3\"\nbucket = \"b\"\nbukcet = \"b\"\n");
    let err = typo.expect_err("a misspelt field is refused").to_string();
    assert!(err.contains("bukcet"), "{err}");
    let typo =
        toml::from_str::<BlobBackend>("backend = \"filesystem\"\npath = \"x\"\npaht = \"y\"\n");
    let err = typo
        .expect_err("a misspelt filesystem field is refused")
        .to_string();
    assert!(err.contains("paht"), "{err}");
}

#[tokio::test]
async fn open_builds_the_configured_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("new/blobs");
    let store = ObjectBlobStore::open("files", &BlobBackend::Filesystem { path: root.clone() })
        .expect("a filesystem store");
    assert_eq!(store.name(), "files");
    assert!(root.is_dir(), "the root is created when missing");

    // A root that is a file cannot hold blobs.
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").expect("write");
    let err = ObjectBlobStore::filesystem("files", &file).expect_err("a file is no root");
    assert!(matches!(err, BlobError::Config { .. }), "{err}");

    // An invalid prefix is refused when the store is made.
    #[cfg(feature = "s3")]
    {
        let mut config = S3Config::new("bucket");
        config.endpoint = Some("http://127.0.0.1:1".into());
        config.allow_http = true;
        config.prefix = Some("../up".into());
        let err = ObjectBlobStore::open("s3", &BlobBackend::S3(config)).expect_err("refused");
        assert!(matches!(err, BlobError::InvalidKey { .. }), "{err}");
    }
}
