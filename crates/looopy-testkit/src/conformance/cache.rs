//! [`CacheStore`] rules.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::CacheStore;
use serde_json::json;

use super::{UniqueIds, ok};

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_millis(300);
/// Comfortably longer than [`SHORT`].
const PAST_SHORT: Duration = Duration::from_millis(900);

/// Checks a [`CacheStore`]: a missing key reads `None`; a value reads back
/// as it was put (any JSON); a put replaces the value; keys are
/// independent; a value is gone once its time-to-live passed. Sleeps about
/// one second.
pub async fn cache_store(store: Arc<dyn CacheStore>, ids: &UniqueIds) {
    let key = ids.next("cache");
    assert_eq!(ok(store.get(&key).await, "get missing"), None);

    let value = json!({"message": {"text": "héllo"}, "n": [1, 2.5, null, true]});
    ok(store.put(&key, &value, LONG).await, "put");
    assert_eq!(ok(store.get(&key).await, "get"), Some(value));

    let other = ids.next("cache");
    ok(store.put(&other, &json!("other"), LONG).await, "put other");
    ok(store.put(&key, &json!(2), LONG).await, "replace");
    assert_eq!(ok(store.get(&key).await, "get replaced"), Some(json!(2)));
    assert_eq!(
        ok(store.get(&other).await, "get other"),
        Some(json!("other"))
    );

    let short = ids.next("cache");
    ok(
        store.put(&short, &json!("soon gone"), SHORT).await,
        "put short",
    );
    assert_eq!(
        ok(store.get(&short).await, "get before expiry"),
        Some(json!("soon gone"))
    );
    tokio::time::sleep(PAST_SHORT).await;
    assert_eq!(ok(store.get(&short).await, "get after expiry"), None);
    assert_eq!(ok(store.get(&key).await, "get long"), Some(json!(2)));
}
