//! [`MessageStore`] rules.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use looopy_core::store::MessageStore;
use looopy_core::{Message, StoreError};
use tokio::sync::Barrier;

use super::fixtures::{full_message, tag_of, tagged_message};
use super::{UniqueIds, join, ok};

const WRITERS: usize = 12;
const BATCHES: usize = 6;
const BATCH_SIZE: usize = 4;

/// A `replace_range` step: the range (given the current length) and how many
/// messages replace it.
type Step = (fn(usize) -> Range<usize>, usize);

/// Checks a [`MessageStore`]: missing contexts, round trips, order, ranges,
/// `replace_range` and its conflicts, `clear`, isolation between contexts,
/// and atomic batches under concurrent appenders and readers.
pub async fn message_store(store: Arc<dyn MessageStore>, ids: &UniqueIds) {
    missing(&*store, ids).await;
    append_and_ranges(&*store, ids).await;
    replace_range(&*store, ids).await;
    clear(&*store, ids).await;
    concurrent_batches(store, ids).await;
}

async fn missing(store: &dyn MessageStore, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    assert!(ok(store.load(&ctx).await, "load of a missing context").is_empty());
    assert!(
        ok(
            store.load_range(&ctx, 0..10).await,
            "load_range of a missing context"
        )
        .is_empty()
    );
    assert_eq!(ok(store.count(&ctx).await, "count of a missing context"), 0);
    ok(store.clear(&ctx).await, "clear of a missing context");
}

async fn append_and_ranges(store: &dyn MessageStore, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let all: Vec<Message> = (0..5).map(|n| full_message(&ctx, n)).collect();
    ok(store.append(&ctx, &all[..3]).await, "append");
    ok(
        store.append(&ctx, &all[3..4]).await,
        "append of one message",
    );
    ok(store.append(&ctx, &[]).await, "append of an empty batch");
    ok(store.append(&ctx, &all[4..]).await, "append");
    assert_eq!(
        ok(store.load(&ctx).await, "load"),
        all,
        "load must return every appended message, in order, every field intact"
    );
    assert_eq!(ok(store.count(&ctx).await, "count"), 5);

    let cases: [(Range<usize>, Range<usize>); 7] = [
        (0..5, 0..5),
        (1..3, 1..3),
        (3..100, 3..5),
        (0..usize::MAX, 0..5),
        (2..2, 2..2),
        (5..6, 5..5),
        (10..20, 5..5),
    ];
    for (asked, expected) in cases {
        assert_eq!(
            ok(store.load_range(&ctx, asked.clone()).await, "load_range"),
            all[expected].to_vec(),
            "load_range({asked:?}) on 5 messages (ranges clamp to what exists)"
        );
    }
    ok(store.clear(&ctx).await, "cleanup clear");
}

async fn replace_range(store: &dyn MessageStore, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let mut model: Vec<Message> = (0..6).map(|n| full_message(&ctx, n)).collect();
    ok(store.append(&ctx, &model).await, "append");
    let mut fresh = 100;
    let mut make = |k: usize| -> Vec<Message> {
        let batch = (0..k)
            .map(|i| full_message("replacement", fresh + i))
            .collect();
        fresh += k;
        batch
    };

    // (range, how many replacement messages): in the middle, insert at the
    // start, insert at the end, delete, replace everything.
    let steps: [Step; 6] = [
        (|_| 1..4, 1),
        (|_| 0..0, 2),
        (|len| len..len, 1),
        (|_| 1..3, 0),
        (|_| 2..3, 3),
        (|len| 0..len, 2),
    ];
    for (range_of, k) in steps {
        let range = range_of(model.len());
        let replacement = make(k);
        ok(
            store.replace_range(&ctx, range.clone(), &replacement).await,
            "replace_range within bounds",
        );
        model.splice(range.clone(), replacement);
        assert_eq!(
            ok(store.load(&ctx).await, "load after replace_range"),
            model,
            "replace_range({range:?}) must splice the replacement in place"
        );
        assert_eq!(ok(store.count(&ctx).await, "count"), model.len());
    }

    // Out of bounds: Conflict, and nothing changes.
    let len = model.len();
    #[allow(clippy::reversed_empty_ranges)] // a reversed range is one of the cases
    let bad = [1..len + 1, len + 1..len + 2, 2..1];
    for range in bad {
        let result = store.replace_range(&ctx, range.clone(), &make(1)).await;
        assert!(
            matches!(result, Err(StoreError::Conflict { .. })),
            "replace_range({range:?}) on {len} messages must fail with Conflict, got {result:?}"
        );
        assert_eq!(
            ok(store.load(&ctx).await, "load after a failed replace_range"),
            model,
            "a failed replace_range must change nothing"
        );
    }

    // On a missing context only the empty range is in bounds.
    let missing = ids.next("ctx");
    let result = store.replace_range(&missing, 0..1, &make(1)).await;
    assert!(
        matches!(result, Err(StoreError::Conflict { .. })),
        "replace_range(0..1) on a missing context must fail with Conflict, got {result:?}"
    );
    assert_eq!(ok(store.count(&missing).await, "count"), 0);
    let inserted = make(2);
    ok(
        store.replace_range(&missing, 0..0, &inserted).await,
        "replace_range(0..0) on a missing context",
    );
    assert_eq!(ok(store.load(&missing).await, "load"), inserted);

    ok(store.clear(&ctx).await, "cleanup clear");
    ok(store.clear(&missing).await, "cleanup clear");
}

async fn clear(store: &dyn MessageStore, ids: &UniqueIds) {
    let a = ids.next("ctx");
    let b = ids.next("ctx");
    let in_a: Vec<Message> = (0..3).map(|n| full_message(&a, n)).collect();
    let in_b: Vec<Message> = (0..2).map(|n| full_message(&b, n)).collect();
    ok(store.append(&a, &in_a).await, "append");
    ok(store.append(&b, &in_b).await, "append");
    assert_eq!(
        ok(store.load(&b).await, "load"),
        in_b,
        "contexts must not share messages"
    );

    ok(store.clear(&a).await, "clear");
    assert!(
        ok(store.load(&a).await, "load after clear").is_empty(),
        "clear must delete all"
    );
    assert_eq!(ok(store.count(&a).await, "count after clear"), 0);
    assert_eq!(
        ok(store.load(&b).await, "load"),
        in_b,
        "clear must not touch other contexts"
    );

    let again = vec![full_message(&a, 7)];
    ok(store.append(&a, &again).await, "append after clear");
    assert_eq!(
        ok(store.load(&a).await, "load"),
        again,
        "a cleared context starts afresh"
    );
    ok(store.clear(&a).await, "cleanup clear");
    ok(store.clear(&b).await, "cleanup clear");
}

/// Checks that `messages` is a sequence of whole batches, each in order.
fn assert_whole_batches(messages: &[Message], when: &str) {
    assert_eq!(
        messages.len() % BATCH_SIZE,
        0,
        "{when}: {} messages is not a whole number of {BATCH_SIZE}-message batches",
        messages.len()
    );
    for (n, chunk) in messages.chunks(BATCH_SIZE).enumerate() {
        let (writer, batch, _) = tag_of(&chunk[0]);
        for (index, m) in chunk.iter().enumerate() {
            assert_eq!(
                tag_of(m),
                (writer, batch, index as u64),
                "{when}: batch {n} is interleaved with another or out of order"
            );
        }
    }
}

async fn concurrent_batches(store: Arc<dyn MessageStore>, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let stop = Arc::new(AtomicBool::new(false));

    let reader = {
        let (store, ctx, stop) = (Arc::clone(&store), ctx.clone(), Arc::clone(&stop));
        tokio::spawn(async move {
            while !stop.load(Ordering::Acquire) {
                let seen = ok(store.load(&ctx).await, "concurrent load");
                assert_whole_batches(&seen, "a load during concurrent appends");
                tokio::task::yield_now().await;
            }
        })
    };
    let start = Arc::new(Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (store, ctx) = (Arc::clone(&store), ctx.clone());
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                for batch in 0..BATCHES {
                    let messages: Vec<Message> = (0..BATCH_SIZE)
                        .map(|index| tagged_message(writer, batch, index))
                        .collect();
                    ok(store.append(&ctx, &messages).await, "concurrent append");
                }
            })
        })
        .collect();
    for writer in writers {
        join(writer).await;
    }
    stop.store(true, Ordering::Release);
    join(reader).await;

    let all = ok(store.load(&ctx).await, "load after concurrent appends");
    assert_eq!(
        all.len(),
        WRITERS * BATCHES * BATCH_SIZE,
        "concurrent appends must lose nothing"
    );
    assert_whole_batches(&all, "after concurrent appends");
    let mut seen = HashSet::new();
    let mut last_batch = [None; WRITERS];
    for chunk in all.chunks(BATCH_SIZE) {
        let (writer, batch, _) = tag_of(&chunk[0]);
        assert!(
            seen.insert((writer, batch)),
            "batch {writer}/{batch} stored twice"
        );
        let previous = &mut last_batch[writer as usize];
        assert!(
            previous.is_none_or(|p| p < batch),
            "writer {writer}'s batches must stay in the order it appended them"
        );
        *previous = Some(batch);
    }
    ok(store.clear(&ctx).await, "cleanup clear");
}
