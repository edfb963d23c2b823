//! The ZooKeeper client wire protocol ("jute"), as spoken by servers 3.4 through 3.9.
//!
//! This crate holds no I/O: it turns records into bytes and bytes into records.
//!
//! * [`jute`] has the primitive encodings and the [`Encode`]/[`Decode`] traits.
//! * [`records`] has one module per group of records of `zookeeper.jute`; every record is
//!   re-exported at the crate root under its jute name (`ConnectRequest`, `Stat`, ...).
//! * [`consts`] has opcodes, error codes, event types, keeper states, create modes, watch modes,
//!   permission bits, special xids and well-known ids. Numbers this crate does not know decode to
//!   an explicit `Unknown(i32)` variant.
//! * [`Request`] and [`Response`] tie request and response records to opcodes.
//! * [`codec`] frames messages (`[len: i32][payload]`) for tokio-util in both directions.
//!
//! Decoding never panics on untrusted input and never allocates more than the remaining input
//! could hold: every failure is a [`DecodeError`] naming the record field that was wrong.
//!
//! ```
//! use bytes::BytesMut;
//! use zookeeper_jute::{encode_request_frame, GetDataRequest, Request};
//!
//! let mut buf = BytesMut::new();
//! let request = Request::GetData(GetDataRequest { path: "/foo".into(), watch: true });
//! encode_request_frame(&mut buf, 1, &request);
//! assert_eq!(&buf[..], b"\0\0\0\x11\0\0\0\x01\0\0\0\x04\0\0\0\x04/foo\x01");
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod codec;
pub mod consts;
mod error;
pub mod jute;
pub mod records;
mod request;
mod response;

pub use codec::{
    encode_reply_frame, encode_request_frame, ClientCodec, ClientFrame, CodecError, FrameDecoder,
    ServerCodec, ServerFrame, DEFAULT_MAX_FRAME,
};
pub use consts::{
    perms, xid, AddWatchMode, CreateMode, ErrorCode, EventType, KeeperState, OpCode, WatcherType,
};
pub use error::{DecodeError, Result};
pub use jute::{Decode, Encode};
pub use records::*;
pub use request::Request;
pub use response::Response;

// The README's examples, compiled and run with this crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
