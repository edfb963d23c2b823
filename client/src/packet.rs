//! A request on its way from a `Client` handle to the server, and what comes back.

use std::time::Instant;

use bytes::Bytes;
#[cfg(any(test, feature = "fuzzing"))]
use bytes::BytesMut;
use tokio::sync::oneshot;
use zookeeper_jute::{Encode, OpCode, Request, WatcherType};

use crate::error::{Error, ErrorKind, Result};
use crate::event_queue::EventSender;
use crate::secret::Secret;
use crate::span::SentSpan;
use crate::watched_event::WatchedEvent;

/// The body of a successful reply (`err == 0`), still encoded: the caller decodes it in its own
/// task, so the session loop only routes bytes.
#[derive(Debug)]
pub(crate) struct RawReply {
    /// The reply header's zxid.
    #[allow(dead_code)]
    pub zxid: i64,
    /// The response record, a slice of the session's read buffer: bytes of it that outlive the
    /// decoding go through [`detach`].
    pub body: Bytes,
}

/// Node data up to this size is copied out of a reply; larger data stays a slice of it.
const DETACH_MAX: usize = 4096;

/// Bytes of a reply that the caller keeps (node data, a session password). A reply is a slice
/// of the session's read buffer, which a kept slice would hold whole (64 KiB for a few bytes),
/// so small ones get their own copy. Large ones take most of the buffer they were read into.
pub(crate) fn detach(bytes: Bytes) -> Bytes {
    if bytes.len() <= DETACH_MAX {
        Bytes::copy_from_slice(&bytes)
    } else {
        bytes
    }
}

pub(crate) type ReplyTx = oneshot::Sender<Result<RawReply>>;
pub(crate) type ReplyRx = oneshot::Receiver<Result<RawReply>>;

/// A watch to set on the client side when the reply says the server set it.
#[derive(Debug)]
pub(crate) enum WatchRegistration {
    /// `getData`: a data watch, set on success.
    Data(String, oneshot::Sender<WatchedEvent>),
    /// `exists`: a data watch on success, an exist watch on `NONODE`.
    Exists(String, oneshot::Sender<WatchedEvent>),
    /// `getChildren`: a child watch, set on success.
    Child(String, oneshot::Sender<WatchedEvent>),
    /// `addWatch`: a persistent or persistent-recursive watch, set on success.
    Persistent {
        path: String,
        recursive: bool,
        tx: EventSender,
    },
    /// `removeWatches`: on success, drop the client-side watchers of that type.
    Remove(String, WatcherType),
}

impl WatchRegistration {
    /// The server path of a watch the session sets again after a reconnect.
    pub fn restored_path(&self) -> Option<&str> {
        match self {
            WatchRegistration::Data(path, _)
            | WatchRegistration::Exists(path, _)
            | WatchRegistration::Child(path, _)
            | WatchRegistration::Persistent { path, .. } => Some(path),
            WatchRegistration::Remove(..) => None,
        }
    }
}

/// The xid after `xid`: user requests count up from 1 and wrap back to 1, clear of the
/// negative xids the protocol reserves.
pub(crate) fn xid_after(xid: i32) -> i32 {
    if xid == i32::MAX {
        1
    } else {
        xid + 1
    }
}

/// Numbers an encoded request frame (its length prefix first, then the xid): frames are
/// encoded before they are given their xid, which they get as they go on the wire, whoever
/// writes them (the session task, or a caller under a lend).
pub(crate) fn set_xid(frame: &mut [u8], xid: i32) {
    frame[4..8].copy_from_slice(&xid.to_be_bytes());
}

/// Whether a request changes the tree (or the ensemble): failed without its reply, such a
/// request may have been applied ([`Error::is_outcome_unknown`]).
pub(crate) fn is_write(opcode: OpCode) -> bool {
    matches!(
        opcode,
        OpCode::Create
            | OpCode::Create2
            | OpCode::CreateContainer
            | OpCode::CreateTtl
            | OpCode::Delete
            | OpCode::SetData
            | OpCode::SetAcl
            | OpCode::Multi
            | OpCode::Reconfig
    )
}

/// What the session must do besides routing the reply.
#[derive(Debug)]
pub(crate) enum PacketKind {
    /// An ordinary request, answered in order.
    Request,
    /// An `auth` packet (xid −4, answered out of order); on success the identity is replayed
    /// after every reconnect.
    Auth { scheme: String, auth: Secret },
}

/// What travels with a request from its call to its reply, whichever way it goes to the
/// server (staged, queued with its own frame, or written by its caller under a lend): moved
/// whole from one form to the next. `Debug` leaves out the reply sender.
pub(crate) struct Envelope {
    pub opcode: OpCode,
    pub watch: Option<WatchRegistration>,
    pub reply: ReplyTx,
    /// When the caller stops waiting: the session answers `Timeout` then (see `deadlines`).
    /// `None` when the caller keeps its own deadline, or waits as long as the session lives.
    pub deadline: Option<Instant>,
    /// Where the request's span (if any) learns how it was sent.
    pub span: SentSpan,
    /// The caller runs on the session task's threads: the answer wakes a task there, which
    /// the task's next turn may let run first (see `driver`).
    pub caller_here: bool,
}

impl std::fmt::Debug for Envelope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Envelope")
            .field("opcode", &self.opcode)
            .field("watch", &self.watch)
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl Envelope {
    /// A request with no watch, no deadline kept by the session and no span.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn new(opcode: OpCode, reply: ReplyTx) -> Envelope {
        Envelope {
            opcode,
            watch: None,
            reply,
            deadline: None,
            span: SentSpan::default(),
            caller_here: false,
        }
    }

    /// Fails the request.
    pub fn fail(self, err: Error) {
        let _ = self.reply.send(Err(err));
    }
}

/// An encoded request and what travels with it. `Debug` shows the frame's length only: an
/// `auth` frame holds the credential.
pub(crate) struct Packet {
    /// The whole frame, length prefix included; the xid at bytes 4..8 is set when it is sent.
    pub frame: Bytes,
    pub kind: PacketKind,
    pub envelope: Envelope,
}

impl std::fmt::Debug for Packet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packet")
            .field("frame_len", &self.frame.len())
            .field("kind", &self.kind)
            .field("envelope", &self.envelope)
            .finish()
    }
}

impl Packet {
    /// Encodes a request with a placeholder `xid` (ordinary requests get theirs when sent;
    /// `auth` keeps −4). Fails with `DataTooLarge` when the frame payload would exceed
    /// `max_frame`, so that an oversized request never reaches the server (which would drop the
    /// connection without a reply).
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn encode(request: &Request, xid: i32, max_frame: usize) -> Result<(BytesMut, OpCode)> {
        let opcode = request.opcode();
        let payload = 8 + request.encoded_len();
        if payload > max_frame {
            return Err(ErrorKind::DataTooLarge {
                size: payload,
                max: max_frame,
            }
            .into());
        }
        let mut buf = BytesMut::with_capacity(4 + payload);
        zookeeper_jute::encode_request_frame(&mut buf, xid, request);
        Ok((buf, opcode))
    }

    /// The frame length of a request, length prefix included; `DataTooLarge` past `max_frame`.
    pub fn frame_len(request: &Request, max_frame: usize) -> Result<usize> {
        let payload = 8 + request.encoded_len();
        if payload > max_frame {
            return Err(ErrorKind::DataTooLarge {
                size: payload,
                max: max_frame,
            }
            .into());
        }
        Ok(4 + payload)
    }

    /// Fails the request.
    pub fn fail(self, err: Error) {
        self.envelope.fail(err);
    }
}

/// A request a caller wrote to the connection itself, while the driver lent it (see `queue`):
/// what the session must know to match its reply. Only ordinary requests go under a lend, so
/// it has no [`PacketKind`].
pub(crate) struct Written {
    /// The xid the lend gave it (the lend's own, or one after it for a later request of the
    /// same write).
    pub xid: i32,
    /// When the first byte was written: the lease runs from here.
    pub sent: Instant,
    /// What the socket did not take at once of this frame and the ones written with it, on
    /// the first of them it cut; the session writes it before anything else.
    pub rest: Bytes,
    pub envelope: Envelope,
}

impl std::fmt::Debug for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Written")
            .field("xid", &self.xid)
            .field("rest_len", &self.rest.len())
            .field("envelope", &self.envelope)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's `Debug` names what it is, never the bytes it carries (an `auth` frame holds
    /// a credential) nor the caller's reply sender.
    #[test]
    fn debug_shows_neither_the_frame_nor_the_reply_sender() {
        let (reply, _rx) = oneshot::channel();
        let packet = Packet {
            frame: Bytes::from_static(b"\0\0\0\x0cframe-bytes!"),
            kind: PacketKind::Request,
            envelope: Envelope::new(OpCode::GetData, reply),
        };
        let (reply, _rx) = oneshot::channel();
        let written = Written {
            xid: 7,
            sent: Instant::now(),
            rest: Bytes::from_static(b"rest-bytes"),
            envelope: Envelope::new(OpCode::SetData, reply),
        };
        for printed in [format!("{packet:?}"), format!("{written:?}")] {
            assert!(!printed.contains("bytes"), "{printed}");
            assert!(!printed.contains("Sender"), "{printed}");
            assert!(printed.contains("Data"), "{printed}");
        }
    }
}
