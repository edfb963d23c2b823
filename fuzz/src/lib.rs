//! The properties checked by the fuzz targets. They live with the protocol crate's tests so
//! that `cargo test` replays every kept input (`protocol/tests/fuzz-inputs/`).

#[path = "../../protocol/tests/common/fuzz_checks.rs"]
pub mod checks;
