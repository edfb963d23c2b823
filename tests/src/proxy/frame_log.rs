//! The ordered record of frames the proxy passed on, for structural assertions ("this request
//! reached the server before that reply reached the client") instead of timed ones.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

use super::frames::Kind;

/// One frame the proxy passed on, as recorded by [`Proxy::record_frames`](super::Proxy::record_frames).
///
/// `conn` numbers the proxy's connections in the order they were accepted, from 1 (the same
/// count as [`Proxy::accepted`](super::Proxy::accepted)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameEvent {
    /// The client's handshake (ConnectRequest) was forwarded to the server.
    ConnectRequest {
        /// The connection.
        conn: u64,
    },
    /// The server's handshake answer (ConnectResponse) was delivered to the client.
    ConnectResponse {
        /// The connection.
        conn: u64,
    },
    /// A request was forwarded to the server.
    ClientToServer {
        /// The connection.
        conn: u64,
        /// The request's xid (`-2` for pings, `-8` for setWatches, ...).
        xid: i32,
        /// The request's opcode (e.g. 15 create2, 12 getChildren2, 11 ping).
        opcode: i32,
    },
    /// A reply (or a notification, xid `-1`) was delivered to the client.
    ServerToClient {
        /// The connection.
        conn: u64,
        /// The xid of the request it answers.
        xid: i32,
    },
}

impl FrameEvent {
    /// The event for the start of a frame seen on `conn`; `None` for the rest of a frame.
    pub(crate) fn of(conn: u64, to_server: bool, kind: Kind) -> Option<FrameEvent> {
        Some(match (kind, to_server) {
            (Kind::Continuation, _) => return None,
            (Kind::Handshake, true) => FrameEvent::ConnectRequest { conn },
            (Kind::Handshake, false) => FrameEvent::ConnectResponse { conn },
            (Kind::Message { xid, opcode }, true) => {
                FrameEvent::ClientToServer { conn, xid, opcode }
            }
            // What sits where a request's opcode would be is part of a reply's zxid.
            (Kind::Message { xid, .. }, false) => FrameEvent::ServerToClient { conn, xid },
        })
    }
}

/// The log itself: off until enabled, shared by every connection of a proxy.
#[derive(Debug)]
pub(crate) struct FrameLog {
    on: AtomicBool,
    events: watch::Sender<Vec<FrameEvent>>,
}

impl Default for FrameLog {
    fn default() -> Self {
        FrameLog {
            on: AtomicBool::new(false),
            events: watch::Sender::new(Vec::new()),
        }
    }
}

impl FrameLog {
    pub(crate) fn set_recording(&self, on: bool) {
        self.on.store(on, Ordering::SeqCst);
    }

    /// Appends `event` if recording is on. Called just before the frame's first byte is
    /// written on, so that whatever the frame causes (the server's reply, the client's next
    /// request) is logged after it.
    pub(crate) fn record(&self, event: FrameEvent) {
        if self.on.load(Ordering::SeqCst) {
            self.events.send_modify(|log| log.push(event));
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<FrameEvent> {
        self.events.borrow().clone()
    }

    pub(crate) fn take(&self) -> Vec<FrameEvent> {
        let mut taken = Vec::new();
        self.events.send_if_modified(|log| {
            taken = std::mem::take(log);
            false
        });
        taken
    }

    pub(crate) async fn wait_for(&self, mut pred: impl FnMut(&[FrameEvent]) -> bool) {
        let mut rx = self.events.subscribe();
        // The sender lives as long as the proxy, which outlives this borrow.
        let _ = rx.wait_for(|log| pred(log)).await;
    }
}
