//! The integration tests of `looopy-stores`, linked as one binary: each
//! module is a file of `tests/` (one link instead of one per file).

#[path = "../factory.rs"]
mod factory;
#[path = "../factory_postgres.rs"]
mod factory_postgres;
