//! Counters shared through a node: [`SharedCount`] (Curator's `SharedCount`, an `i32`) and
//! [`DistributedAtomicLong`] (Curator's `DistributedAtomicLong`, an `i64`), in Curator's byte
//! layouts so that Java and Rust processes share one counter.

mod atomic_long;
mod shared;

pub use atomic_long::{AtomicStats, AtomicValue, DistributedAtomicLong, PromotedToLock};
pub use shared::{CountChanges, SharedCount, VersionedCount};

use crate::error::{Error, Result};

/// An `i32` as Curator writes it: 4 bytes, big-endian.
pub(crate) fn encode_i32(value: i32) -> [u8; 4] {
    value.to_be_bytes()
}

pub(crate) fn decode_i32(path: &str, data: &[u8]) -> Result<i32> {
    let bytes: [u8; 4] = data.try_into().map_err(|_| Error::BadValue {
        path: path.to_owned(),
        reason: "a shared count is 4 bytes (a big-endian i32)",
    })?;
    Ok(i32::from_be_bytes(bytes))
}

/// An `i64` as Curator writes it: 8 bytes, big-endian; no data is 0.
pub(crate) fn encode_i64(value: i64) -> [u8; 8] {
    value.to_be_bytes()
}

pub(crate) fn decode_i64(path: &str, data: &[u8]) -> Result<i64> {
    if data.is_empty() {
        return Ok(0);
    }
    let bytes: [u8; 8] = data.try_into().map_err(|_| Error::BadValue {
        path: path.to_owned(),
        reason: "an atomic long is 8 bytes (a big-endian i64), or empty for 0",
    })?;
    Ok(i64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_curators() {
        assert_eq!(encode_i32(258), [0, 0, 1, 2]);
        assert_eq!(decode_i32("/c", &[0xff, 0xff, 0xff, 0xfe]).unwrap(), -2);
        assert!(decode_i32("/c", b"12").is_err());
        assert_eq!(encode_i64(-1), [0xff; 8]);
        assert_eq!(decode_i64("/l", &[]).unwrap(), 0);
        assert_eq!(decode_i64("/l", &[0, 0, 0, 0, 0, 0, 1, 0]).unwrap(), 256);
        let e = decode_i64("/l", b"7").unwrap_err();
        assert!(e.to_string().contains("/l"), "{e}");
    }
}
