//! Cleanup that outlives its owner: the delete of a node whose guard, latch, acquisition or
//! keeper was dropped.
//!
//! It runs on the tokio runtime of the drop when there is one. Dropped outside every runtime
//! (on a plain thread, or after the `block_on` that made it returned), it runs on a thread of
//! its own, on a runtime of its own. Left undone, the node would stay until the session ends:
//! a lock or a leadership held for an owner that is gone, with every later acquisition on the
//! same session queued behind it for as long as the session lives.

use std::future::Future;

use tracing::warn;

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
    let spawned = std::thread::Builder::new()
        .name("zk-cleanup".into())
        .spawn(move || {
            // Time only: the session's own task, wherever it runs, does the I/O; a call made
            // from here needs a clock for its deadline.
            match tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
            {
                Ok(rt) => drop(rt.block_on(cleanup)),
                Err(e) => warn!(error = %e, "no runtime for a cleanup: the node stays until the session ends"),
            }
        });
    if let Err(e) = spawned {
        warn!(error = %e, "no thread for a cleanup: the node stays until the session ends");
    }
}
