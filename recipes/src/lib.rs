//! Herd-free, fenced ZooKeeper recipes that share their paths with Apache Curator and kazoo:
//! a [`Mutex`], a [`ReadWriteLock`], a [`LeaderLatch`] and a [`Semaphore`]; and, in Curator's
//! layouts, caches ([`NodeCache`], [`TreeCache`]) whose view is always a state the server held,
//! counters ([`SharedCount`], [`DistributedAtomicLong`]), barriers ([`DistributedBarrier`],
//! [`DistributedDoubleBarrier`]) and group membership ([`PersistentNode`], [`GroupMember`]).
//! Long-lived recipes carry on in a new session after expiry when given renewing
//! [`Sessions`].
//!
//! Every recipe queues ephemeral-sequential nodes under its path, and every waiter watches
//! exactly one node, so a release wakes one waiter whatever the queue length. Every grant
//! carries a [`FencingToken`] (the node's czxid) and a lost signal
//! ([`LockGuard::lost`]) that fires when the lock can no longer be trusted: the session
//! expired or was closed, the connection stayed down longer than the session timeout, or
//! someone deleted our node. A disconnect is reported earlier as
//! [`LockState::Suspended`].
//!
//! Node layouts: Curator's by default (`InterProcessMutex`, `InterProcessReadWriteLock`,
//! `LeaderLatch`, `InterProcessSemaphoreV2`); the mutex can also use kazoo's `Lock` layout
//! ([`Layout::Kazoo`]). The two layouts do not see each other: pick the one your peers use.
//!
//! Acquisitions are cancel-safe: dropping an acquiring future at any await point deletes the
//! node it created (even if the create's reply has not arrived yet), and so do timeouts and
//! failed `try_` calls. A create whose reply is lost with the connection is found again by
//! the GUID in its name and adopted only if our session owns it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use zookeeper_recipes::Mutex;
//!
//! let servers = "127.0.0.1:2181";
//! # let servers = &zookeeper_testkit::shared_server()
//! #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_recipes"));
//! let client = zookeeper_tokio::Client::connect(servers).await?;
//! let mutex = Mutex::new(&client, "/locks/orders")?;
//! let guard = mutex.acquire().await?;
//! println!("holding {} with token {}", guard.path(), guard.fencing_token());
//! guard.release().await?;
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

mod barrier;
pub mod cache;
mod contend;
mod counter;
mod double_barrier;
mod ensure_path;
mod error;
mod group;
mod guard;
mod leader;
mod lost;
mod mutex;
mod naming;
mod persistent_node;
mod protection;
mod release;
mod retry;
mod rwlock;
mod semaphore;
mod session;
mod sessions;
mod transitions;

pub use barrier::DistributedBarrier;
pub use cache::{
    CacheEvent, CacheEvents, CachedNode, NodeCache, NodeCacheBuilder, Snapshot, TreeCache,
    TreeCacheBuilder,
};
pub use counter::{
    AtomicStats, AtomicValue, CountChanges, DistributedAtomicLong, PromotedToLock, SharedCount,
    VersionedCount,
};
pub use double_barrier::DistributedDoubleBarrier;
pub use error::{Error, Result};
pub use group::GroupMember;
pub use guard::{FencingToken, LockGuard};
pub use leader::{
    participants as leader_participants, LeaderLatch, Leadership, LeadershipChanges, Participant,
};
pub use lost::{LockState, LockStateChanges, LossReason};
pub use mutex::Mutex;
pub use naming::Layout;
pub use persistent_node::{PersistentNode, PersistentNodeState};
pub use retry::RetryPolicy;
pub use rwlock::ReadWriteLock;
pub use semaphore::{Lease, Semaphore};
pub use sessions::Sessions;

// The workspace README's examples, compiled and run with this crate's doctests (it can reach
// every crate they use).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
