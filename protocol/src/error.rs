//! The one error type of the crate: what was wrong with the input, and where.

/// Why bytes could not be decoded. Every variant names the record field (`what`, written
/// `Record.field`) or the frame part that was being read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before the field was complete.
    #[error("unexpected end of input in {what}: needed {needed} bytes, {remaining} remaining")]
    UnexpectedEof {
        /// Field being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A length or count prefix was negative and not the null marker −1.
    #[error("invalid length {len} in {what}")]
    InvalidLength {
        /// Field being read.
        what: &'static str,
        /// The length read from the wire.
        len: i64,
    },
    /// A vector claims more elements than the remaining bytes could possibly hold.
    #[error("{what} claims {len} elements but the remaining input holds at most {max}")]
    LengthTooLarge {
        /// Field being read.
        what: &'static str,
        /// The count read from the wire.
        len: usize,
        /// The largest count the remaining bytes could hold.
        max: usize,
    },
    /// A string was not valid UTF-8 (nor the surrogate-pair form Java writes).
    #[error("invalid UTF-8 in {what}")]
    InvalidUtf8 {
        /// Field being read.
        what: &'static str,
    },
    /// A frame's length prefix exceeds the configured maximum frame size.
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes")]
    FrameTooLarge {
        /// The length read from the frame prefix.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The opcode has no record of the kind being decoded (for example a request opcode the
    /// server side does not accept from clients, or a reply to an opcode without a reply).
    #[error("opcode {opcode} has no {what}")]
    UnexpectedOpCode {
        /// What was being decoded ("request" or "response").
        what: &'static str,
        /// The raw opcode.
        opcode: i32,
    },
    /// An operation inside a multi request or response had a type that may not appear there.
    #[error("operation type {opcode} is not allowed in {what}")]
    InvalidMultiOp {
        /// What was being decoded.
        what: &'static str,
        /// The raw type from the `MultiHeader`.
        opcode: i32,
    },
}

/// Result of decoding.
pub type Result<T> = std::result::Result<T, DecodeError>;
