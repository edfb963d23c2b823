//! Framing for tokio-util: every message is `[len: i32][payload]`.
//!
//! * [`FrameDecoder`] yields raw payloads.
//! * [`FrameReader`] yields raw payloads too, and can read past a frame over the limit (its
//!   head kept, the rest dropped as it arrives): a client fails the one request such a reply
//!   answers and keeps the connection.
//! * [`ClientCodec`] writes [`ClientFrame`]s and reads [`ServerFrame`]s (the first being the
//!   `ConnectResponse`); [`ServerCodec`] does the reverse, for test servers.
//!
//! A partial frame is `Ok(None)` ("need more bytes"). A negative length is an error: the peer
//! and this side no longer agree on frame boundaries, so the connection must be dropped. So is
//! a length above the configured maximum ([`DEFAULT_MAX_FRAME`] by default), unless a
//! [`FrameReader`] is asked to skip it. Every one of them draws that limit in
//! [`decode_frame`].
//!
//! ```
//! use bytes::BytesMut;
//! use tokio_util::codec::Decoder;
//! use zookeeper_jute::{ClientCodec, ConnectResponse, EventType, KeeperState, ServerFrame, WatcherEvent};
//! use zookeeper_jute::codec::{encode_notification_frame, encode_record_frame};
//!
//! let mut codec = ClientCodec::default();
//! let mut src = BytesMut::new();
//! encode_record_frame(&mut src, &ConnectResponse { timeout: 4000, ..Default::default() });
//! // Only half of the next frame has arrived: "need more bytes".
//! let mut notification = BytesMut::new();
//! let event = WatcherEvent {
//!     event_type: EventType::NodeDeleted,
//!     state: KeeperState::SyncConnected,
//!     path: "/lock/x".into(),
//! };
//! encode_notification_frame(&mut notification, -1, &event);
//! src.extend_from_slice(&notification[..10]);
//!
//! assert!(matches!(codec.decode(&mut src)?, Some(ServerFrame::Connect(r)) if r.timeout == 4000));
//! assert!(codec.decode(&mut src)?.is_none());
//! src.extend_from_slice(&notification[10..]);
//! assert_eq!(
//!     codec.decode(&mut src)?,
//!     Some(ServerFrame::Notification { zxid: -1, event })
//! );
//! # Ok::<(), zookeeper_jute::CodecError>(())
//! ```

mod client;
mod connection;
mod error;
mod frame;
mod server;

pub use client::{ClientFrame, ServerFrame};
pub use connection::{ClientCodec, ClientSide, ConnectionCodec, ServerCodec, ServerSide, Side};
pub use error::CodecError;
pub use frame::{
    decode_frame, encode_notification_frame, encode_raw_reply_frame, encode_record_frame,
    encode_reply_frame, encode_request_frame, Frame, FrameDecoder, FrameReader, DEFAULT_MAX_FRAME,
};
