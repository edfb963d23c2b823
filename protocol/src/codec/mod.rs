//! Framing for tokio-util: every message is `[len: i32][payload]`.
//!
//! * [`FrameDecoder`] yields raw payloads.
//! * [`ClientCodec`] writes [`ClientFrame`]s and reads [`ServerFrame`]s (the first being the
//!   `ConnectResponse`); [`ServerCodec`] does the reverse, for test servers.
//!
//! A partial frame is `Ok(None)` ("need more bytes"). A negative length or one above the
//! configured maximum ([`DEFAULT_MAX_FRAME`] by default) is an error: the peer and this side no
//! longer agree on frame boundaries, so the connection must be dropped.

mod client;
mod error;
mod frame;
mod server;

pub use client::{ClientCodec, ClientFrame, ServerFrame};
pub use error::CodecError;
pub use frame::{
    decode_frame, encode_notification_frame, encode_raw_reply_frame, encode_record_frame,
    encode_reply_frame, encode_request_frame, FrameDecoder, DEFAULT_MAX_FRAME,
};
pub use server::ServerCodec;
