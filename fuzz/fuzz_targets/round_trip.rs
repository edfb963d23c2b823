//! Arbitrary bytes decoded as a record, request or client frame (picked by the first byte):
//! whatever decodes must survive encode → decode unchanged.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zookeeper_jute_fuzz::checks::round_trip(data));
