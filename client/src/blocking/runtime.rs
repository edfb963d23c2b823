//! The session's own thread: a current-thread tokio runtime that runs the session task (and
//! the tasks the recipes spawn), driven by nothing else, for as long as anything needs it.
//!
//! Calls do not go through this thread: a blocking call makes its request on the calling
//! thread, which queues it on the session as an async call does (and writes it to the socket
//! itself whenever the session lends the connection, replies in flight or not: this thread is
//! not the session's, see `queue::lend`), then parks until the reply's channel wakes it. The
//! runtime is *entered* around the call, so the call's timers and any task it spawns belong
//! to this runtime; and since this thread always drives it, the session keeps the call's
//! deadline as it does for a call made on its own runtime (see `home`).
//!
//! The thread ends once every blocking handle is gone *and* the session has ended: a
//! recipe's background delete, or an async handle taken from a blocking one, keeps the
//! session, and so the thread, alive. The runtime is dropped on this thread only, never on a
//! caller's (which tokio forbids inside another runtime).

use std::future::Future;
use std::sync::Arc;

use tokio::runtime::{EnterGuard, Handle};
use tokio::sync::{oneshot, watch};

use crate::state::SessionState;

use super::park;

/// A handle on the session thread's runtime; the thread winds down once the last is dropped
/// and the session has ended.
pub(crate) struct Runtime {
    handle: Handle,
    /// Dropped with this: the thread then waits for the session to end, and stops.
    _stop: oneshot::Sender<()>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("id", &self.handle.id())
            .finish()
    }
}

/// Tells the session thread which session it serves (once connected): it stops only after
/// that session's end.
pub(crate) type SessionSender = oneshot::Sender<watch::Receiver<SessionState>>;

impl Runtime {
    /// Starts the thread. The runtime is built there, so that no other thread ever owns it
    /// (not even when building fails).
    pub fn start() -> std::io::Result<(Arc<Runtime>, SessionSender)> {
        let (built_tx, built) = std::sync::mpsc::sync_channel(1);
        let (stop, stopped) = oneshot::channel::<()>();
        let (session_tx, session_rx) = oneshot::channel::<watch::Receiver<SessionState>>();
        std::thread::Builder::new()
            .name("zookeeper-session".into())
            .spawn(move || {
                park::refuse_waits_here();
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = built_tx.send(Err(e));
                        return;
                    }
                };
                let _ = built_tx.send(Ok(runtime.handle().clone()));
                runtime.block_on(async move {
                    let _ = stopped.await;
                    // The watch's sender lives as long as a handle on the session or the
                    // session task: its closing is the session's end.
                    if let Ok(mut state) = session_rx.await {
                        while state.changed().await.is_ok() {}
                    }
                });
            })?;
        let handle = built
            .recv()
            .map_err(|_| std::io::Error::other("the session thread ended while starting"))??;
        Ok((
            Arc::new(Runtime {
                handle,
                _stop: stop,
            }),
            session_tx,
        ))
    }

    /// Runs `future` to completion on the calling thread, within this runtime.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let _entered = self.enter();
        park::wait(future, None).expect("no deadline")
    }

    /// Makes a call of the async client within this runtime, then runs it to completion on
    /// the calling thread. Made here, the call leaves its deadline to the session, whose own
    /// thread drives it whatever this one does: no timer of the call's own, and a write that
    /// times out before it was sent says so (made outside, the call could not tell).
    pub fn call<F: Future>(&self, make: impl FnOnce() -> F) -> F::Output {
        let _entered = self.enter();
        park::wait(make(), None).expect("no deadline")
    }

    /// Makes this runtime the calling thread's, until the guard drops: tasks spawned and
    /// timers made meanwhile are this runtime's.
    pub fn enter(&self) -> EnterGuard<'_> {
        self.handle.enter()
    }
}
