//! The session machine itself, after a valid handshake: arbitrary server bytes interleaved with
//! arbitrary calls, disconnects and clock advances. Never a panic, every request completes
//! exactly once, memory within the configured bounds (see `zookeeper_tokio::fuzzing`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zookeeper_tokio::fuzzing::check_session(data));
