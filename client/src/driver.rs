//! The tokio task around the session machine: sockets, the clock and the request queue.
//!
//! It owns no protocol logic. Each turn it carries out the machine's connection actions, writes
//! what the machine produced, and waits for the first of: bytes from the server, room to write,
//! a finished connection attempt, new requests, or the machine's next deadline.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Buf, BytesMut};
use tracing::{debug, Instrument};

use crate::connect_string::HostPort;
use crate::home;
use crate::metrics;
use crate::orphan;
use crate::queue::{self, Item, Lend, RequestQueue};
use crate::session::{Action, Session};
use crate::transport::{ConnectError, Connector, Reader, Stream, Writer};

type ConnectFuture = Pin<Box<dyn Future<Output = Result<Stream, ConnectError>> + Send>>;
type ProbeFuture = Pin<Box<dyn Future<Output = (HostPort, bool)> + Send>>;

/// How long a read-write probe may take.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

const READ_CHUNK: usize = 64 * 1024;

/// Spawns the task; it ends once the session is terminated.
pub(crate) fn spawn(session: Session, queue: Arc<RequestQueue>, connector: Connector) {
    // The machine records the id here when a server grants one; a resumed session has it now.
    let span = tracing::info_span!("zk_session", session_id = tracing::field::Empty);
    if session.session_id() != 0 {
        span.record(
            "session_id",
            tracing::field::display(crate::state::SessionId(session.session_id())),
        );
    }
    tokio::spawn(run(session, queue, connector).instrument(span));
}

enum Wake {
    Read(io::Result<usize>),
    Wrote(io::Result<usize>),
    Connected(Result<Stream, ConnectError>),
    Probed((HostPort, bool)),
    Queue,
    Timer,
}

/// The session as the task holds it. When the task ends, and also when it is dropped
/// unfinished (its runtime shut down), the session ends with it: handles then read `Closed`
/// rather than the state it last had, watchers get their terminal event, and queued requests
/// and later calls fail with the session's terminal error, instead of waiting for a task that
/// is gone.
struct Held {
    session: Session,
    queue: Arc<RequestQueue>,
}

impl std::ops::Deref for Held {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

impl std::ops::DerefMut for Held {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Nothing will run the session again.
        self.session.abandon();
        // Whatever is still queued fails with the session's terminal error.
        self.queue.close(self.session.terminal_error());
        self.queue.release(self.session.take_completed());
    }
}

async fn run(session: Session, queue: Arc<RequestQueue>, connector: Connector) {
    let mut session = Held {
        session,
        queue: queue.clone(),
    };
    // The thread of the last turn: the session's home learns each new one (see `home`).
    let mut thread = 0;
    let mut reader: Option<Reader> = None;
    let mut writer: Option<Writer> = None;
    let mut connecting: Option<ConnectFuture> = None;
    let mut probing: Option<ProbeFuture> = None;
    let orphans = orphan::Orphans::default();
    let mut read_buf = BytesMut::with_capacity(READ_CHUNK);
    let mut items = Vec::new();
    // One timer for the whole session: registering a fresh timer on every turn would cost
    // more than the turn itself under load.
    let timer = tokio::time::sleep(std::time::Duration::ZERO);
    tokio::pin!(timer);
    let mut armed: Option<Instant> = None;
    // The connection is lent to callers until this turn ends (see `session::lend`).
    let mut lent = false;
    // Requests taken from the queue in the last turn.
    let mut taken = 0;
    // The most output held at once since the output buffer was last given back.
    let mut output_peak = 0;

    loop {
        let here = home::thread_token();
        if here != thread {
            queue.home.record_thread(here);
            thread = here;
        }
        while let Some(action) = session.poll_action() {
            match action {
                Action::Probe(host) => probing = Some(Box::pin(probe_read_write(&connector, host))),
                Action::Orphan { wait } => {
                    if let (Some(r), Some(w)) = (reader.take(), writer.take()) {
                        orphans.keep(r, w, std::mem::take(&mut read_buf), wait);
                    }
                }
                Action::Connect(_) | Action::Disconnect => {
                    reader = None;
                    writer = None;
                    connecting = None;
                    read_buf.clear();
                    if let Action::Connect(host) = action {
                        connecting = Some(Box::pin(connector.connect(host)));
                    }
                }
            }
        }
        let completed = session.take_completed();
        let answered_here = session.take_completed_here();
        queue.release(completed);
        if session.is_terminated() {
            break;
        }

        // Re-armed only when the machine's deadline comes sooner than the timer, or the timer
        // has fired. The ping's and the read timeout's deadlines move later with every
        // request and reply; following each move would cost a timer-wheel update per turn.
        // A timer left earlier fires once for nothing due (`on_timeout` acts only on what
        // is), and is then armed for the deadline of that moment.
        match (session.next_deadline(), armed) {
            (Some(d), Some(a)) if d >= a => {}
            (Some(d), _) => {
                timer.as_mut().reset(d.into());
                armed = Some(d);
            }
            (None, _) => armed = None,
        }
        if let (Some(xid), Some(wire)) = (
            session.lendable_xid(),
            writer.as_ref().and_then(Writer::wire),
        ) {
            // Callers on this task's threads that make several requests at a time (a turn
            // took or answered more than one), or while replies are awaited, are better
            // served by the next turn writing them together than by writing one each; a
            // caller elsewhere would have to wake this task across threads (see
            // `queue::lend`).
            let idle = completed <= 1 && taken <= 1 && !session.awaits_replies();
            lent = queue.lend(Lend {
                wire: wire.clone(),
                xid,
                wakes_by: armed,
                idle,
            });
        }
        if answered_here > 1 && writer.is_some() {
            // The callers this turn answered run before the next one, so that what they ask
            // next is written in one go. Without this, on a multi-thread runtime the first of
            // them to ask wakes this task into the worker's next slot, ahead of the others,
            // and every request costs a write of its own. Only for callers on this task's
            // threads: others (the body of `main`, a blocking call) write their own under the
            // lend, and on a multi-thread runtime the yield would wake a parked worker to
            // steal this task, and park it again, for nothing.
            BehindTheWoken::default().await;
        }
        let has_output = writer
            .as_ref()
            .is_some_and(|w| !session.output().is_empty() || w.has_unflushed());
        if read_buf.capacity() - read_buf.len() < READ_CHUNK / 4 {
            read_buf.reserve(READ_CHUNK);
        }
        let wake = {
            let out = session.output();
            // Biased, so that a run under simulation is a function of its seed (an unbiased
            // `select!` draws its first branch from an unseeded source). The order keeps
            // every branch served: a connect and a probe end once; the timer fires once per
            // deadline, which moves on; the output to write is bounded by
            // `max_outstanding` and pings, and so are the queue's wakes (callers wait for
            // replies once it is full). Only reading can stay ready for as long as a server
            // sends, so it comes last: a flood cannot hold back pings, requests or timeouts.
            tokio::select! {
                biased;
                r = finish_connect(connecting.as_mut()) => Wake::Connected(r),
                r = finish_probe(probing.as_mut()) => Wake::Probed(r),
                _ = &mut timer, if armed.is_some() => Wake::Timer,
                r = write_some(writer.as_mut(), out), if has_output => Wake::Wrote(r),
                _ = std::future::poll_fn(|cx| queue.poll_told(cx)) => Wake::Queue,
                r = read_some(reader.as_mut(), &mut read_buf) => Wake::Read(r),
            }
        };
        queue.turn_begins();
        let now = tokio::time::Instant::now().into_std();
        if lent {
            // Before anything else, and above all before a reply that may answer it.
            lent = false;
            taken = take_requests(&queue, &mut session, &mut items, now);
        } else {
            taken = 0;
        }
        match wake {
            Wake::Read(Ok(0)) => {
                reader = None;
                writer = None;
                session.on_disconnected(now, "connection closed by the server");
            }
            Wake::Read(Ok(_)) => session.on_bytes(&mut read_buf, now),
            Wake::Read(Err(e)) => {
                let tls_failure = reader.as_ref().and_then(|r| r.tls_failure(&e));
                reader = None;
                writer = None;
                match tls_failure {
                    Some(failure) => session.on_tls_failure(now, failure),
                    None => session.on_disconnected(now, &e.to_string()),
                }
            }
            Wake::Wrote(Err(e)) => {
                reader = None;
                writer = None;
                session.on_disconnected(now, &e.to_string());
            }
            Wake::Wrote(Ok(_)) => {}
            Wake::Connected(Ok(stream)) => {
                connecting = None;
                let (r, w) = stream.split();
                reader = Some(r);
                writer = Some(w);
                session.on_connected(now);
            }
            Wake::Connected(Err(ConnectError::Io(e))) => {
                connecting = None;
                session.on_disconnected(now, &e.to_string());
            }
            #[cfg(feature = "tls")]
            Wake::Connected(Err(ConnectError::Tls(failure))) => {
                connecting = None;
                session.on_tls_failure(now, failure);
            }
            Wake::Probed((host, read_write)) => {
                probing = None;
                session.on_probe_result(host, read_write, now);
            }
            Wake::Queue => {}
            Wake::Timer => {
                armed = None;
                session.on_timeout(now);
            }
        }
        // Take new requests every turn, not only when notified: under load the queue refills
        // while frames are being handled, and batching them into one write is what keeps
        // pipelining cheap.
        taken += take_requests(&queue, &mut session, &mut items, now);
        let out = session.output();
        output_peak = output_peak.max(out.len());
        if out.is_empty() && queue::give_back(out, output_peak) {
            output_peak = 0;
        }
        // Write what is ready now rather than on the next turn: one wake-up less per batch.
        if let Some(w) = writer.as_mut() {
            let out = session.output();
            while !out.is_empty() {
                match w.try_write(out).inspect(|&n| metrics::bytes_sent(n)) {
                    Ok(n) => out.advance(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        reader = None;
                        writer = None;
                        session.on_disconnected(now, &e.to_string());
                        break;
                    }
                }
            }
        }
    }
    debug!("session task ends");
}

/// Pending once: it wakes its own task, which the runtime queues behind the tasks already
/// woken. (`tokio::task::yield_now` defers that wake until the worker has polled its I/O
/// driver, a system call per turn.)
#[derive(Default)]
struct BehindTheWoken(bool);

impl Future for BehindTheWoken {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Takes the connection back if it was lent, and hands every queued request to the session;
/// returns how many there were.
fn take_requests(
    queue: &RequestQueue,
    session: &mut Session,
    items: &mut Vec<Item>,
    now: Instant,
) -> usize {
    let staged = queue.take_all(items);
    let taken = items.len();
    let mut offset = 0;
    for item in items.drain(..) {
        match item {
            Item::Packet(p) => session.submit(p, now),
            Item::Staged(s) => {
                let frame = staged.slice(offset..offset + s.len);
                offset += s.len;
                session.submit(s.into_packet(frame), now);
            }
            Item::Written(w) => session.submit_written(w),
            Item::Close(done) => session.close(done, now),
            Item::ServerList(hosts) => session.update_hosts(hosts, now),
        }
    }
    taken
}

async fn read_some(reader: Option<&mut Reader>, buf: &mut BytesMut) -> io::Result<usize> {
    match reader {
        Some(r) => r
            .read_buf(buf)
            .await
            .inspect(|&n| metrics::bytes_received(n)),
        None => std::future::pending().await,
    }
}

async fn write_some(writer: Option<&mut Writer>, out: &mut BytesMut) -> io::Result<usize> {
    match writer {
        Some(w) => w.write_buf(out).await.inspect(|&n| metrics::bytes_sent(n)),
        None => std::future::pending().await,
    }
}

async fn finish_connect(connecting: Option<&mut ConnectFuture>) -> Result<Stream, ConnectError> {
    match connecting {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

async fn finish_probe(probing: Option<&mut ProbeFuture>) -> (HostPort, bool) {
    match probing {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

/// Asks a server with the `isro` four-letter word whether it serves writes (`rw`), over the
/// same transport as the session (TLS included).
fn probe_read_write(
    connector: &Connector,
    host: HostPort,
) -> impl Future<Output = (HostPort, bool)> + Send + 'static {
    let ask = connector.four_letter(host.clone(), b"isro");
    async move {
        let answer = tokio::time::timeout(PROBE_TIMEOUT, ask).await;
        let read_write = matches!(answer, Ok(Ok(a)) if a.starts_with(b"rw"));
        (host, read_write)
    }
}
