//! Cleanup that outlives its owner: the delete of a node whose guard, latch, acquisition or
//! keeper was dropped.
//!
//! It runs on the tokio runtime of the drop when there is one. Dropped outside every runtime
//! (on a plain thread, or after the `block_on` that made it returned), it runs on the one
//! cleanup thread of the process, started at the first such drop, where every cleanup is a
//! task of its own: a thread per drop made a program dropping thousands of guards at once
//! start thousands of threads, and once the system refused one, that node stayed. Left undone,
//! the node would stay until the session ends: a lock or a leadership held for an owner that
//! is gone, with every later acquisition on the same session queued behind it for as long as
//! the session lives.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use tokio::sync::mpsc::{self, UnboundedSender};
use tracing::warn;

type Cleanup = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The way to the cleanup thread, once it runs.
static CLEANER: Mutex<Option<UnboundedSender<Cleanup>>> = Mutex::new(None);

/// Runs `cleanup` to its end in the background, wherever this is called. Its output is
/// dropped, as that of a task nobody joins is.
pub(crate) fn run_detached<F>(cleanup: F)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(cleanup);
        return;
    }
    let cleanup: Cleanup = Box::pin(async move { drop(cleanup.await) });
    let mut cleaner = CLEANER.lock().unwrap_or_else(|e| e.into_inner());
    let cleanup = match cleaner.as_ref() {
        Some(tx) => match tx.send(cleanup) {
            Ok(()) => return,
            // The thread is gone (it could not build its runtime): start another.
            Err(mpsc::error::SendError(cleanup)) => cleanup,
        },
        None => cleanup,
    };
    match start_cleaner() {
        Ok(tx) => {
            // Queued for the thread just started: should it fail to build its runtime, it
            // says so, and the next drop finds it gone and starts another.
            let _ = tx.send(cleanup);
            *cleaner = Some(tx);
        }
        Err(e) => {
            warn!(error = %e, "no thread for a cleanup: the node stays until the session ends")
        }
    }
}

/// Starts the cleanup thread: a runtime with a clock only (the session's own task, wherever
/// it runs, does the I/O; a call made from here needs a clock for its deadline), running each
/// cleanup it is sent as a task.
fn start_cleaner() -> std::io::Result<UnboundedSender<Cleanup>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Cleanup>();
    std::thread::Builder::new()
        .name("zk-cleanup".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
            {
                Ok(rt) => rt.block_on(async move {
                    while let Some(cleanup) = rx.recv().await {
                        tokio::spawn(cleanup);
                    }
                }),
                Err(e) => {
                    warn!(error = %e, "no runtime for cleanups: their nodes stay until the session ends")
                }
            }
        })?;
    Ok(tx)
}
