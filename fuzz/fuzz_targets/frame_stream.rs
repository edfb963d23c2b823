//! Arbitrary bytes as a stream of frames for the raw, client and server decoders: never a
//! panic, and the frames do not depend on how the stream is split.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zookeeper_jute_fuzz::checks::frame_stream(data));
