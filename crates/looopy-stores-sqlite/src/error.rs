//! Errors: [`OpenError`] for opening a database, and how SQLite's errors
//! become [`StoreError`]s, each with what to do about it.

use std::path::PathBuf;

use looopy_core::StoreError;

/// Why the stores could not open their database.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The database's directory is missing and could not be created.
    #[error(
        "cannot create the directory `{}` of the SQLite database: {source}; create it, or set `[store] path` to a writable place",
        dir.display()
    )]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// Why it could not be created.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be opened or set up (permissions, a read-only
    /// file or file system, a file that is not a database, a corrupt one).
    #[error("cannot open the SQLite database `{}`: {hint}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// What it means and what to do.
        hint: String,
        /// SQLite's error.
        #[source]
        source: sqlx::Error,
    },
    /// The database was written by a newer Looopy: its schema is one this
    /// build does not know, so it is not read (nor changed).
    #[error(
        "the SQLite database `{}` has schema version {found}, newer than version {supported} that this Looopy knows; run a Looopy at least as new as the one that wrote it, or point `[store] path` at another file",
        path.display()
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The schema version found in the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A migration failed; it was rolled back, the file is as it was.
    #[error("cannot upgrade the SQLite database `{}` to schema version {version}: {source}", path.display())]
    Migration {
        /// The file.
        path: PathBuf,
        /// The migration that failed.
        version: i64,
        /// SQLite's error.
        #[source]
        source: sqlx::Error,
    },
}

impl From<OpenError> for StoreError {
    fn from(error: OpenError) -> Self {
        let message = error.to_string();
        match &error {
            OpenError::Open { source, .. } if kind(source) == Kind::Busy => {
                StoreError::Unavailable { message }
            }
            _ => StoreError::Backend { message },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Busy,
    ReadOnly,
    Corrupt,
    Full,
    CantOpen,
    Other,
}

/// SQLite's primary result code of an error, when it has one.
pub(crate) fn kind(error: &sqlx::Error) -> Kind {
    match error {
        sqlx::Error::Database(db) => {
            let code: i64 = db.code().and_then(|c| c.parse().ok()).unwrap_or(0);
            match code & 0xff {
                5 | 6 => Kind::Busy,
                8 => Kind::ReadOnly,
                11 | 26 => Kind::Corrupt,
                13 => Kind::Full,
                14 => Kind::CantOpen,
                _ => Kind::Other,
            }
        }
        sqlx::Error::PoolTimedOut => Kind::Busy,
        _ => Kind::Other,
    }
}

/// What an error of SQLite means for the operator.
pub(crate) fn hint(error: &sqlx::Error) -> String {
    let what = match kind(error) {
        Kind::Busy => {
            "the database is locked by another writer for longer than `busy_timeout_ms`; try again, or raise `busy_timeout_ms`"
        }
        Kind::ReadOnly => {
            "the database file (or its directory, which holds the -wal and -shm files) is read-only; make both writable by this process"
        }
        Kind::Corrupt => {
            "the file is not a SQLite database or is corrupt; restore it from a backup, or move it away to start a new one"
        }
        Kind::Full => "the disk is full; free space and try again (nothing was written)",
        Kind::CantOpen => {
            "the file cannot be opened; check that its directory exists and is writable"
        }
        Kind::Other => "",
    };
    if what.is_empty() {
        error.to_string()
    } else {
        format!("{error} ({what})")
    }
}

/// A failed database operation as a [`StoreError`]: `what` names the
/// operation.
pub(crate) fn db(what: &str, error: sqlx::Error) -> StoreError {
    let message = format!("sqlite {what}: {}", hint(&error));
    match kind(&error) {
        Kind::Busy | Kind::Full | Kind::CantOpen => StoreError::Unavailable { message },
        _ => match error {
            sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::WorkerCrashed => {
                StoreError::Unavailable { message }
            }
            _ => StoreError::Backend { message },
        },
    }
}

/// An extension to map sqlx results with the name of the operation.
pub(crate) trait Db<T> {
    /// The result with its error as a [`StoreError`].
    fn db(self, what: &str) -> Result<T, StoreError>;
}

impl<T> Db<T> for Result<T, sqlx::Error> {
    fn db(self, what: &str) -> Result<T, StoreError> {
        self.map_err(|e| db(what, e))
    }
}
