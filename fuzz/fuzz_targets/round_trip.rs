//! Arbitrary bytes decoded as a record, request or client frame (picked by the first byte):
//! whatever decodes must survive encode → decode unchanged.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zk_protocol_fuzz::checks::round_trip(data));
