//! Project tasks; see `cargo xtask help`.
fn main() {}
