//! `object_store`'s errors mapped onto [`BlobError`], keeping each as the
//! cause.

use std::error::Error as StdError;

use looopy_core::BlobError;

/// What the failed operation was doing, for the variants whose meaning
/// depends on it (a missing object on a write means a missing bucket or
/// root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Write,
    Read,
    Delete,
    List,
    #[cfg_attr(not(feature = "s3"), allow(dead_code))]
    Sign,
}

/// Maps `error`, raised by `op` on `key`, onto a [`BlobError`].
pub(crate) fn map(op: Op, key: &str, error: object_store::Error) -> BlobError {
    use object_store::Error as E;
    match error {
        E::NotFound { .. } if op == Op::Write || op == Op::List => BlobError::Config {
            message: format!("the bucket or root directory of blob `{key}` does not exist"),
            source: Some(Box::new(error)),
        },
        E::NotFound { .. } => BlobError::NotFound {
            key: key.to_owned(),
        },
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => BlobError::Denied {
            source: Box::new(error),
        },
        E::InvalidPath { .. } => BlobError::InvalidKey {
            key: key.to_owned(),
            reason: "the backend refused the path",
        },
        E::UnknownConfigurationKey { .. } => BlobError::Config {
            message: error.to_string(),
            source: Some(Box::new(error)),
        },
        other => classify(other),
    }
}

/// A generic error, told apart by what its chain of causes holds: a
/// transport failure (unreachable), an I/O error of a full disk or a
/// permission, or an S3 answer saying the storage is full.
fn classify(error: object_store::Error) -> BlobError {
    let mut cause: Option<&(dyn StdError + 'static)> = Some(&error);
    let mut kind = None;
    while let Some(e) = cause {
        #[cfg(feature = "s3")]
        if let Some(http) = e.downcast_ref::<object_store::client::HttpError>() {
            use object_store::client::HttpErrorKind as K;
            if matches!(
                http.kind(),
                K::Connect | K::Timeout | K::Request | K::Interrupted
            ) {
                kind = Some(Kind::Unavailable);
                break;
            }
        }
        // A listing's or a multipart request's failure keeps the HTTP
        // status only in its (private) retry error's message.
        match http_status(&e.to_string()) {
            Some(401 | 403) => {
                kind = Some(Kind::Denied);
                break;
            }
            Some(502..=504) => {
                kind = Some(Kind::Unavailable);
                break;
            }
            Some(507) => {
                kind = Some(Kind::Full);
                break;
            }
            _ => {}
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                    kind = Some(Kind::Full);
                    break;
                }
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                    kind = Some(Kind::Denied);
                    break;
                }
                _ => {}
            }
        }
        cause = e.source();
    }
    let text = error.to_string();
    if kind.is_none()
        && ["StorageFull", "Insufficient Storage", "QuotaExceeded"]
            .iter()
            .any(|marker| text.contains(marker))
    {
        kind = Some(Kind::Full);
    }
    let source = Box::new(error);
    match kind {
        Some(Kind::Unavailable) => BlobError::Unavailable { source },
        Some(Kind::Full) => BlobError::StorageFull { source },
        Some(Kind::Denied) => BlobError::Denied { source },
        None => BlobError::Backend { source },
    }
}

/// The status in `object_store`'s message of a failed request
/// (`Server returned non-2xx status code: 403 Forbidden: ...`).
fn http_status(message: &str) -> Option<u16> {
    const MARK: &str = "status code: ";
    let at = message.find(MARK)? + MARK.len();
    message.get(at..at + 3)?.parse().ok()
}

enum Kind {
    Unavailable,
    Full,
    Denied,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generic(source: impl StdError + Send + Sync + 'static) -> object_store::Error {
        object_store::Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(source),
        }
    }

    #[test]
    fn a_full_disk_and_a_permission_are_told_apart_from_other_io_errors() {
        let full = map(
            Op::Write,
            "k",
            generic(std::io::Error::from(std::io::ErrorKind::StorageFull)),
        );
        assert!(matches!(full, BlobError::StorageFull { .. }), "{full}");
        let denied = map(
            Op::Write,
            "k",
            generic(std::io::Error::from(std::io::ErrorKind::PermissionDenied)),
        );
        assert!(matches!(denied, BlobError::Denied { .. }), "{denied}");
        let other = map(
            Op::Read,
            "k",
            generic(std::io::Error::from(std::io::ErrorKind::InvalidData)),
        );
        assert!(matches!(other, BlobError::Backend { .. }), "{other}");
        // The cause is kept.
        assert!(StdError::source(&full).is_some());
    }

    #[test]
    fn statuses_in_messages_are_read() {
        assert_eq!(
            http_status(
                "Error performing GET in 4ms - Server returned non-2xx status code: 403 Forbidden: <Error/>"
            ),
            Some(403)
        );
        assert_eq!(http_status("status code: 50"), None);
        assert_eq!(http_status("no status"), None);
        let denied = map(
            Op::List,
            "k",
            generic(std::io::Error::other(
                "Server returned non-2xx status code: 403 Forbidden: InvalidAccessKeyId",
            )),
        );
        assert!(matches!(denied, BlobError::Denied { .. }), "{denied}");
    }

    #[test]
    fn a_missing_object_is_not_found_on_read_and_a_config_error_on_write() {
        let missing = || object_store::Error::NotFound {
            path: "k".into(),
            source: "gone".into(),
        };
        assert!(matches!(map(Op::Read, "k", missing()), BlobError::NotFound { key } if key == "k"));
        assert!(matches!(
            map(Op::Delete, "k", missing()),
            BlobError::NotFound { .. }
        ));
        assert!(matches!(
            map(Op::Write, "k", missing()),
            BlobError::Config { .. }
        ));
    }
}
