//! The S3 store against a real S3-compatible server (moto, started on a
//! free port): the blob conformance suite, prefixes, presigned URLs, and
//! the typed errors of wrong credentials, a missing bucket and an
//! unreachable or stopped server.

use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use looopy_blobs::{ObjectBlobStore, S3Config, S3Credentials};
use looopy_core::blob::{BlobPut, read_to_bytes};
use looopy_core::{BlobError, BlobKey, BlobRef, BlobStore};
use looopy_testkit::MotoServer;
use looopy_testkit::conformance::blobs::body_of;
use looopy_testkit::conformance::{BlobBackdoor, UniqueIds, blob_store};
use looopy_testkit::moto_server::{MOTO_ACCESS_KEY_ID, MOTO_SECRET_ACCESS_KEY};
use object_store::ObjectStoreExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;

/// A configuration of `bucket` on `endpoint`, signed with the test key,
/// giving up after one retry.
fn config(endpoint: &str, bucket: &str, prefix: Option<&str>) -> S3Config {
    S3Config {
        bucket: bucket.into(),
        prefix: prefix.map(str::to_owned),
        endpoint: Some(endpoint.into()),
        region: Some("us-east-1".into()),
        allow_http: true,
        credentials: Some(S3Credentials {
            access_key_id: MOTO_ACCESS_KEY_ID.into(),
            secret_access_key: MOTO_SECRET_ACCESS_KEY.into(),
            session_token: None,
        }),
        max_retries: Some(1),
        retry_timeout_secs: Some(5),
        connect_timeout_secs: Some(2),
        ..S3Config::default()
    }
}

/// The bucket itself, bypassing the store (what another writer or a
/// damaged object would do).
fn raw(endpoint: &str, bucket: &str) -> AmazonS3 {
    AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_bucket_name(bucket)
        .with_region("us-east-1")
        .with_access_key_id(MOTO_ACCESS_KEY_ID)
        .with_secret_access_key(MOTO_SECRET_ACCESS_KEY)
        .with_allow_http(true)
        .with_virtual_hosted_style_request(false)
        .build()
        .expect("a raw S3 client")
}

struct Bucket {
    s3: AmazonS3,
    prefix: String,
}

#[async_trait]
impl BlobBackdoor for Bucket {
    async fn overwrite(&self, key: &BlobKey, content: Vec<u8>) {
        let path = Path::parse(format!("{}/{key}", self.prefix)).expect("a path");
        self.s3
            .put(&path, content.into())
            .await
            .expect("overwrite the object");
    }
}

/// A moto server with bucket `bucket`, or `None` when moto is not
/// installed and `LOOOPY_SKIP_EXTERNAL=1`.
fn moto_with(bucket: &str) -> Option<MotoServer> {
    let server = MotoServer::start().expect("moto_server starts")?;
    server.create_bucket(bucket).expect("create the bucket");
    Some(server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_s3_store_passes_the_suite_against_moto() {
    let Some(moto) = moto_with("blobs") else {
        return;
    };
    let store = ObjectBlobStore::s3(
        "files",
        &config(&moto.endpoint(), "blobs", Some("looopy/blobs")),
    )
    .expect("store");
    let backdoor = Bucket {
        s3: raw(&moto.endpoint(), "blobs"),
        prefix: "looopy/blobs".into(),
    };
    blob_store(&store, &backdoor, &UniqueIds::new()).await;
}

#[tokio::test]
async fn prefixes_keep_two_stores_of_one_bucket_apart() {
    let Some(moto) = moto_with("shared") else {
        return;
    };
    let endpoint = moto.endpoint();
    let a = ObjectBlobStore::s3("a", &config(&endpoint, "shared", Some("team-a/"))).expect("a");
    let b = ObjectBlobStore::s3("b", &config(&endpoint, "shared", Some("team-b"))).expect("b");
    let key = BlobKey::new("ctx/file.txt").expect("valid");
    let blob = a
        .put(
            BlobPut::new(key.clone(), "text/plain"),
            body_of(b"only a", 3),
        )
        .await
        .expect("put");
    let in_b: Vec<_> = b.list(None).collect().await;
    assert!(in_b.is_empty(), "b sees nothing of a: {in_b:?}");
    let in_a: Vec<BlobKey> = a.list(None).map(|e| e.expect("entry").key).collect().await;
    assert_eq!(
        in_a,
        vec![key.clone()],
        "keys are listed without the prefix"
    );
    let object = raw(&endpoint, "shared")
        .get(&Path::parse("team-a/ctx/file.txt").expect("path"))
        .await
        .expect("the object lies under the prefix");
    assert_eq!(object.bytes().await.expect("bytes"), "only a");
    let wrong_store = BlobRef {
        store: "b".into(),
        ..blob
    };
    assert!(matches!(
        b.get(&wrong_store).await,
        Err(BlobError::NotFound { .. })
    ));
}

#[tokio::test]
async fn a_presigned_url_serves_the_blob_and_the_plain_url_is_refused() {
    let Some(moto) = moto_with("signed") else {
        return;
    };
    let endpoint = moto.endpoint();
    let store =
        ObjectBlobStore::s3("files", &config(&endpoint, "signed", Some("p"))).expect("store");
    let key = BlobKey::new("ctx/image.png").expect("valid");
    let content = looopy_testkit::conformance::blobs::pattern(300_000, 9);
    let blob = store
        .put(BlobPut::new(key, "image/png"), body_of(&content, 65_536))
        .await
        .expect("put");
    let url = store
        .presigned_get(&blob, Duration::from_secs(300))
        .await
        .expect("signed")
        .expect("S3 signs URLs");
    assert!(url.starts_with(&endpoint), "{url}");
    assert!(
        url.contains("X-Amz-Expires=300"),
        "the lifetime is in the URL: {url}"
    );
    let client = reqwest::Client::new();
    let answer = client.get(&url).send().await.expect("GET the signed URL");
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.headers()["content-type"],
        "image/png",
        "the media type was stored with the object"
    );
    assert!(answer.bytes().await.expect("body") == content);
    let plain = client
        .get(format!("{endpoint}/signed/p/ctx/image.png"))
        .send()
        .await
        .expect("GET the plain URL");
    assert_eq!(
        plain.status(),
        403,
        "without the signature the object is refused"
    );
}

#[tokio::test]
async fn wrong_credentials_are_denied() {
    let Some(moto) = MotoServer::start_checking_credentials().expect("moto_server starts") else {
        return;
    };
    let store =
        ObjectBlobStore::s3("files", &config(&moto.endpoint(), "any", None)).expect("store");
    let key = BlobKey::new("ctx/x").expect("valid");
    let err = store
        .put(BlobPut::new(key.clone(), "text/plain"), body_of(b"x", 1))
        .await
        .expect_err("refused");
    assert!(matches!(err, BlobError::Denied { .. }), "a write: {err}");
    assert!(
        std::error::Error::source(&err).is_some(),
        "the answer is kept"
    );
    let blob = BlobRef {
        store: "files".into(),
        key,
        size: 1,
        media_type: "text/plain".into(),
        sha256: String::new(),
    };
    let err = store.get(&blob).await.err().expect("refused");
    assert!(matches!(err, BlobError::Denied { .. }), "a read: {err}");
    let listed: Vec<_> = store.list(None).collect().await;
    assert!(
        matches!(listed.as_slice(), [Err(BlobError::Denied { .. })]),
        "a listing: {listed:?}"
    );
}

#[tokio::test]
async fn a_missing_bucket_is_a_configuration_error_on_write() {
    let Some(moto) = moto_with("exists") else {
        return;
    };
    let store =
        ObjectBlobStore::s3("files", &config(&moto.endpoint(), "missing", None)).expect("store");
    let key = BlobKey::new("ctx/x").expect("valid");
    let err = store
        .put(BlobPut::new(key, "text/plain"), body_of(b"x", 1))
        .await
        .expect_err("no bucket");
    assert!(matches!(err, BlobError::Config { .. }), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[tokio::test]
async fn an_unreachable_or_stopped_server_is_unavailable() {
    // Nothing listens on a port just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut unreachable = config(&format!("http://127.0.0.1:{port}"), "blobs", None);
    unreachable.max_retries = Some(0);
    let store = ObjectBlobStore::s3("files", &unreachable).expect("made without a request");
    let key = BlobKey::new("ctx/x").expect("valid");
    let err = store
        .put(BlobPut::new(key.clone(), "text/plain"), body_of(b"x", 1))
        .await
        .expect_err("unreachable");
    assert!(
        matches!(err, BlobError::Unavailable { .. }),
        "a write: {err}"
    );
    assert!(err.is_transient());
    let listed: Vec<_> = store.list(None).collect().await;
    assert!(
        matches!(listed.as_slice(), [Err(BlobError::Unavailable { .. })]),
        "a listing: {listed:?}"
    );

    // A server that stops between a write and a read.
    let Some(mut moto) = moto_with("blobs") else {
        return;
    };
    let mut reachable = config(&moto.endpoint(), "blobs", None);
    reachable.max_retries = Some(0);
    let store = ObjectBlobStore::s3("files", &reachable).expect("store");
    let blob = store
        .put(BlobPut::new(key, "text/plain"), body_of(b"kept", 2))
        .await
        .expect("put");
    assert_eq!(
        read_to_bytes(&store, &blob, 10).await.expect("read"),
        "kept"
    );
    moto.kill();
    let err = read_to_bytes(&store, &blob, 10).await.expect_err("stopped");
    assert!(
        matches!(err, BlobError::Unavailable { .. }),
        "a read: {err}"
    );
    let err = store.delete(&blob.key).await.expect_err("stopped");
    assert!(
        matches!(err, BlobError::Unavailable { .. }),
        "a delete: {err}"
    );
}
