//! Arbitrary bytes as the reply body to each opcode (picked by the first byte) and as a whole
//! server frame payload: never a panic, and whatever decodes round-trips.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zookeeper_jute_fuzz::checks::reply_body(data));
