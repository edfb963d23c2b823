//! The locks: the [`Mutex`], the [`ReadWriteLock`], the guard a grant hands over
//! ([`LockGuard`]) and the task that tells it when the lock is lost (`loss_monitor`), and the
//! locks that open a session of their own (`standalone`).
//!
//! Each lock queues with the contention core (`contend`) and hands it its rule; what a holder
//! knows (token, state, loss) is the hold layer's (`hold`).

pub(crate) mod acquisition;
pub(crate) mod guard;
pub(crate) mod loss_monitor;
pub(crate) mod mutex;
pub(crate) mod rwlock;
mod standalone;

pub use guard::LockGuard;
pub use mutex::Mutex;
pub use rwlock::ReadWriteLock;
