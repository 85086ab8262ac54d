//! [`TurnReader`]: how a turn running in this process knows that the
//! readers following it have read its final event, so that it may compact
//! its streamed chunks (`compact.rs`).

use std::sync::Arc;

use tokio::sync::oneshot;

/// Held by each reader that follows a turn running in this process until
/// it has read the turn's final event (or was dropped): until every copy
/// is gone, the turn's chunks stay as they came.
#[derive(Debug, Clone)]
pub(crate) struct TurnReader {
    _reading: Arc<oneshot::Sender<()>>,
}

/// What the turn waits on before it compacts its chunks: every
/// [`TurnReader`]'s end.
pub(super) type ReadersGone = oneshot::Receiver<()>;

/// A [`TurnReader`] and what tells the turn that every copy is gone.
pub(super) fn turn_reader() -> (TurnReader, ReadersGone) {
    let (reading, gone) = oneshot::channel();
    (
        TurnReader {
            _reading: Arc::new(reading),
        },
        gone,
    )
}
