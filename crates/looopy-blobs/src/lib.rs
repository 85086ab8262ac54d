#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod checked;
mod config;
mod errors;
mod store;

pub use config::{BlobBackend, S3Config, S3Credentials};
pub use store::{DEFAULT_PART_SIZE, ObjectBlobStore};
