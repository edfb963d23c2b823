//! One proxied connection: two pumps (client→server, server→client) and the faults.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::frame_log::FrameEvent;
use super::frames::{FrameTracker, Kind};
use super::Shared;

/// Frames read but not yet written, per direction (backpressure beyond that).
const QUEUE: usize = 64;

/// Closes `stream` with a reset (SO_LINGER 0), as a refusing host would.
pub(super) fn reset(stream: TcpStream) {
    if let Ok(std) = stream.into_std() {
        let sock = socket_fd(&std);
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: setsockopt on a socket we own, with a correctly sized linger struct.
        unsafe {
            libc::setsockopt(
                sock,
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &linger as *const libc::linger as *const libc::c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
        }
    }
}

fn socket_fd(stream: &std::net::TcpStream) -> libc::c_int {
    use std::os::unix::io::AsRawFd;
    stream.as_raw_fd()
}

/// The request whose reply is to be withheld on this connection.
#[derive(Debug, Default)]
struct PendingCut {
    xid: Option<i32>,
    done: Option<oneshot::Sender<i32>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    ToServer,
    ToClient,
}

struct OpenGuard(Arc<Shared>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Serves connection number `conn` (in accept order, from 1).
pub(super) async fn serve(
    client: TcpStream,
    conn: u64,
    shared: Arc<Shared>,
    cancel: CancellationToken,
) {
    shared.open.send_modify(|n| *n += 1);
    let _open = OpenGuard(shared.clone());

    // Even in a black hole the upstream connection is made: it carries no bytes until the
    // hole ends, and the server cannot tell it from a silent client.
    let upstream = tokio::select! {
        _ = cancel.cancelled() => return,
        upstream = shared.connect_upstream() => upstream,
    };
    let Some(upstream) = upstream else {
        reset(client);
        return;
    };

    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = upstream.into_split();
    let pending = Arc::new(Mutex::new(PendingCut::default()));
    let end = CancellationToken::new();

    let to_server = pump(
        client_read,
        server_write,
        Direction::ToServer,
        conn,
        shared.clone(),
        pending.clone(),
        end.clone(),
    );
    let to_client = pump(
        server_read,
        client_write,
        Direction::ToClient,
        conn,
        shared.clone(),
        pending,
        end.clone(),
    );
    // Either side ending (including at a cut), a client leaving a black hole, or drop_all
    // ends the whole connection; dropping the halves closes both sockets.
    tokio::select! {
        _ = to_server => {}
        _ = to_client => {}
        _ = end.cancelled() => {}
        _ = cancel.cancelled() => {}
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    direction: Direction,
    conn: u64,
    shared: Arc<Shared>,
    pending: Arc<Mutex<PendingCut>>,
    end: CancellationToken,
) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Bytes, Option<FrameEvent>)>(QUEUE);

    let reader = {
        let shared = shared.clone();
        let mut black_hole = shared.black_hole.subscribe();
        async move {
            let mut tracker = FrameTracker::default();
            let mut buf = BytesMut::with_capacity(64 * 1024);
            loop {
                // Reading goes on in a black hole (the writer holds the bytes back), so that
                // the end of the stream is seen at once.
                buf.reserve(64 * 1024);
                let ended = !matches!(from.read_buf(&mut buf).await, Ok(n) if n > 0);
                if ended {
                    // A client that gives up on a connection in a black hole takes its unsent
                    // bytes with it: replaying a stale handshake to the server later would
                    // kick the session's live connection. A server's close, in turn, reaches
                    // the client only when the hole ends (the writer drains first).
                    if direction == Direction::ToServer && *black_hole.borrow_and_update() {
                        end.cancel();
                    }
                    return;
                }
                for (piece, kind) in tracker.split(buf.split().freeze()) {
                    if direction == Direction::ToClient && is_withheld_reply(kind, &pending) {
                        // Stop here: what came before the reply is still written, then the
                        // pump ends and with it the connection.
                        return;
                    }
                    if direction == Direction::ToServer {
                        arm_cut_for_request(kind, &shared, &pending);
                    }
                    let latency: Duration = *shared.latency.borrow();
                    let event = FrameEvent::of(conn, direction == Direction::ToServer, kind);
                    if tx
                        .send((Instant::now() + latency, piece, event))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    };

    let writer = async move {
        let mut black_hole = shared.black_hole.subscribe();
        let mut hold = shared.hold_replies.subscribe();
        let held = direction == Direction::ToClient;
        while let Some((due, frame, event)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if black_hole.wait_for(|on| !*on).await.is_err() {
                return;
            }
            if held && hold.wait_for(|on| !*on).await.is_err() {
                return;
            }
            if let Some(event) = event {
                shared.frames.record(event);
            }
            if to.write_all(&frame).await.is_err() {
                return;
            }
        }
        // The end of the stream is news too: it does not cross a black hole (or a hold on
        // the server's side) either.
        let _ = black_hole.wait_for(|on| !*on).await;
        if held {
            let _ = hold.wait_for(|on| !*on).await;
        }
    };

    // The writer ends after the reader (its queue closes), having written what was read.
    tokio::join!(reader, writer);
}

/// On the client→server side: if a cut is armed for this request's opcode, this connection
/// takes it and remembers the xid whose reply must not reach the client.
fn arm_cut_for_request(kind: Kind, shared: &Shared, pending: &Mutex<PendingCut>) {
    let Kind::Message { xid, opcode } = kind else {
        return;
    };
    if let Some(done) = shared.take_cut(opcode) {
        let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.xid = Some(xid);
        pending.done = Some(done);
    }
}

/// On the server→client side: is this the reply the armed cut withholds?
fn is_withheld_reply(kind: Kind, pending: &Mutex<PendingCut>) -> bool {
    let Kind::Message { xid, .. } = kind else {
        return false;
    };
    let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
    if pending.xid != Some(xid) {
        return false;
    }
    pending.xid = None;
    if let Some(done) = pending.done.take() {
        let _ = done.send(xid);
    }
    true
}
