//! Replays every input kept under `tests/fuzz-inputs/<target>/` through the property its fuzz
//! target checks: the seeds (built from the reference vectors) and every input a fuzzer ever
//! crashed on (`crash-*`), so a fixed crash stays fixed.

mod common;

use std::fs;
use std::path::Path;

use common::fuzz_checks;

fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-inputs")
        .join(target);
    let mut count = 0;
    for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let data = fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{target} failed on {}", path.display());
        count += 1;
    }
    count
}

#[test]
fn reply_body_inputs() {
    assert!(replay("reply_body", fuzz_checks::reply_body) > 0);
}

#[test]
fn frame_stream_inputs() {
    assert!(replay("frame_stream", fuzz_checks::frame_stream) > 0);
}

#[test]
fn round_trip_inputs() {
    assert!(replay("round_trip", fuzz_checks::round_trip) > 0);
}

/// Every prefix of every kept input must also pass: prefixes are the cheapest way to reach
/// the truncated-input paths the fuzzers explore.
#[test]
fn prefixes_of_inputs() {
    for (target, check) in [
        ("reply_body", fuzz_checks::reply_body as fn(&[u8])),
        ("frame_stream", fuzz_checks::frame_stream),
        ("round_trip", fuzz_checks::round_trip),
    ] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fuzz-inputs")
            .join(target);
        for entry in fs::read_dir(dir).unwrap() {
            let data = fs::read(entry.unwrap().path()).unwrap();
            for cut in 0..data.len() {
                check(&data[..cut]);
            }
        }
    }
}
