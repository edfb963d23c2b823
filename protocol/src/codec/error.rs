//! The error of the tokio-util codecs.

use crate::error::DecodeError;

/// Why a codec failed: the transport failed, or the peer sent bytes that are not a valid frame.
/// Either way the connection cannot be used any further.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// Reading or writing the transport failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The peer sent an invalid or oversized frame.
    #[error("invalid frame: {0}")]
    Decode(#[from] DecodeError),
}
