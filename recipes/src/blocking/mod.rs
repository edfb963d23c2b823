//! The recipes for plain threads (cargo feature `blocking`): [`Mutex`], [`ReadWriteLock`],
//! [`Semaphore`], [`LeaderLatch`] and [`LeaderSelector`], on a
//! [`zookeeper_tokio::blocking::Client`].
//!
//! Each is the async recipe of the crate root, on the blocking client's session, with its
//! layouts, fairness, fencing and guarantees; its acquisitions block the calling thread, and
//! its streams of states are blocking iterators ([`Changes`]). A guard's state is the async
//! guard's, read against the session's lease clock on every look, so a thread resuming from
//! a pause past the session timeout reads [`Holding::Lost`](crate::Holding::Lost) on its
//! first look. Guards and latches release when dropped, from any thread: the delete is
//! followed on the session's thread.
//!
//! The recipes here run on the blocking client's one session: after the session expires, a
//! guard reads lost and further acquisitions fail with the session's error; connect a new
//! client to carry on.
//!
//! ```
//! use std::time::Duration;
//! use zookeeper_recipes::blocking::Mutex;
//! use zookeeper_recipes::Holding;
//! use zookeeper_tokio::blocking::Client;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let servers = "127.0.0.1:2181";
//! # let servers = &zookeeper_testkit::shared_server()
//! #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_blocking_recipes"));
//! let client = Client::connect(servers)?;
//! let mutex = Mutex::new(&client, "/locks/orders")?;
//!
//! let guard = mutex.acquire()?;
//! for batch in 0..10 {
//!     // Look before each step: a pause past the session timeout reads lost here.
//!     if guard.state() != Holding::Held {
//!         break;
//!     }
//!     println!("batch {batch} under token {}", guard.fencing_token());
//! }
//! guard.release()?;
//!
//! // Several threads contend through one handle: they exclude each other.
//! let mutex = std::sync::Arc::new(mutex);
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let mutex = mutex.clone();
//!         std::thread::spawn(move || {
//!             if let Ok(Some(guard)) = mutex.acquire_timeout(Duration::from_secs(5)) {
//!                 drop(guard); // released from this thread
//!             }
//!         })
//!     })
//!     .collect();
//! for worker in workers {
//!     worker.join().unwrap();
//! }
//! # Ok(())
//! # }
//! ```

mod changes;
mod guard;
mod latch;
mod locks;
mod selector;

pub use changes::Changes;
pub use guard::LockGuard;
pub use latch::LeaderLatch;
pub use locks::{Lease, Mutex, ReadWriteLock, Semaphore};
pub use selector::{LeaderContext, LeaderSelector, LeaderSelectorBuilder};

#[cfg(test)]
mod contract {
    //! The shapes threads rely on, checked at compile time.

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn recipes_and_guards_are_shared_between_threads() {
        send_sync::<super::Mutex>();
        send_sync::<super::ReadWriteLock>();
        send_sync::<super::Semaphore>();
        send_sync::<super::LockGuard>();
        send_sync::<super::LeaderLatch>();
        send_sync::<super::LeaderSelector>();
        send_sync::<super::LeaderContext>();
    }
}
