//! Herd-free, fenced ZooKeeper recipes that share their paths with Apache Curator and kazoo:
//! a [`Mutex`], a [`ReadWriteLock`], a [`LeaderLatch`] and a [`Semaphore`]; and, in Curator's
//! layouts, caches ([`NodeCache`], [`TreeCache`]) whose view is always a state the server held,
//! counters ([`SharedCount`], [`DistributedAtomicLong`]), barriers ([`DistributedBarrier`],
//! [`DistributedDoubleBarrier`]) and group membership ([`PersistentNode`], [`GroupMember`]).
//! Long-lived recipes carry on in a new session after expiry when given renewing
//! [`Sessions`].
//!
//! Every recipe queues ephemeral-sequential nodes under its path, and a waiter watches at most
//! the two contenders nearest ahead of it in its way, so a release wakes at most two waiters
//! (the next, and the one after it) whatever the queue length. Every grant
//! carries a [`FencingToken`] (the node's czxid) and a lost signal
//! ([`LockGuard::lost`]) that fires when the lock can no longer be trusted: the session's
//! lease ran out ([`zookeeper_tokio::Client::lease_deadline`]: no server answered a request
//! sent within the last session timeout), the session expired or was closed, or someone
//! deleted our node. The lease ends no later than the server can expire the session, so the
//! signal comes before anyone else can be granted the lock, and [`LockGuard::state`] checks
//! it against the clock on every call (a process resuming from a pause reads `Lost` on its
//! first look). A disconnect is reported earlier as [`Holding::Suspended`]: pause the
//! protected work there, and stop it when in doubt.
//!
//! Writes to state kept in ZooKeeper can be made conditional on still holding the lock
//! ([`LockGuard::guarded_multi`]): the server refuses a stale holder's writes.
//!
//! Node layouts: Curator's by default (`InterProcessMutex`, `InterProcessReadWriteLock`,
//! `LeaderLatch`, `InterProcessSemaphoreV2`); the mutex and the read-write lock can also use
//! kazoo's (`Lock`, `ReadLock`, `WriteLock`: [`Layout::Kazoo`]). Each layout orders
//! contenders exactly as its peer does, and refuses to grant once the path's sequence numbers
//! wrapped past 2^31 ([`Error::SequenceWrapped`]), where the peers' order breaks. The two
//! layouts do not see each other: pick the one your peers use.
//!
//! A [`Semaphore`] may take its number of leases from a [`SharedCount`]
//! ([`Semaphore::with_shared_count`], Curator's `InterProcessSemaphoreV2` with a
//! `SharedCountReader`): a raised count admits waiters at once, a lowered one takes no lease
//! back but holds new ones until enough are returned.
//!
//! Leadership beyond a latch: a [`LeaderSelector`] (Curator's `LeaderSelector`) runs a future
//! for each term it leads, cancelled when leadership is suspended or lost ([`CancelOn`]), and
//! queues again if asked. A [`SemaphoreMutex`] is Curator's `InterProcessSemaphoreMutex`: the
//! semaphore with one lease, not reentrant.
//!
//! Any process can follow who leads an election without taking part: a [`LeaderObserver`]
//! (etcd's `Observe`) reports the leader of a latch's, a selector's or kazoo's election, with
//! its data, now and at each change; a leader publishes new data while it leads with
//! [`LeaderLatch::proclaim`] or [`LeaderContext::proclaim`]. Parents whose sequence counter
//! nears its wrap are reported ahead of time (see [`SEQUENCE_WARNING_THRESHOLD`]) and can be
//! recycled while idle ([`recycle_idle_parent`]). The repository's `docs/elections.md` shows
//! these together.
//!
//! Locks, read-write locks, semaphores and latches share one queue algorithm, to which each
//! hands its rule. A rule that judges by the contenders ahead of it only may take a watched
//! node's deletion as its grant without listing the queue again (one round trip saved per
//! handoff); one that judges by more (a semaphore's count) cannot, by construction. Such a
//! waiter also watches the contender it would wait for next, whose deletion comes first: the
//! listing it may then need happens while the one ahead of it still holds, off the handoff
//! path, so however many are queued a grant is, as a rule, a deletion and its notification.
//! Each rule is checked against a model of the peers over random queues.
//!
//! With the cargo feature `blocking`, the module `blocking` has the mutex, read-write lock,
//! semaphore, leader latch and leader selector for plain threads, on the client's blocking
//! API.
//!
//! Acquisitions are cancel-safe: dropping an acquiring future at any await point deletes the
//! node it created (even if the create's reply has not arrived yet), and so do timeouts and
//! failed `try_` calls. Calls with a timeout return within it whatever the connection does.
//! A create whose reply is lost with the connection is found again by the GUID in its name and
//! adopted only if our session owns it.
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
//!
//! # Tracing spans
//!
//! With the cargo feature `tracing-spans` (which turns on the client's span per request) each
//! recipe operation is a `tracing` span, the parent of the requests it makes: `acquire` (a
//! lock, a read or write lock, a semaphore's lease, a leader selector's wait), `release`, a
//! leader latch's `join` and `elect`, and a leader selector's `lead` (its term, the leader's
//! work included). Each has the fields `zookeeper.recipe` and `zookeeper.path`.
//!
//! # Metrics
//!
//! With the cargo feature `metrics` (off by default; without it the crate has no `metrics`
//! dependency and records nothing) the recipes record these through the
//! [`metrics`](https://docs.rs/metrics) facade, into whatever recorder the application
//! installed, beside the client's own metrics (the feature turns on `zookeeper-tokio/metrics`;
//! see that crate's docs for its table). `zookeeper_recipes::metrics::describe()` gives each
//! metric, the client's included, its description and unit in the recorder. Histograms are in
//! seconds; labels never carry a lock path.
//!
//! | Metric | Kind | Labels | What it counts |
//! |---|---|---|---|
//! | `zookeeper_lock_wait_seconds` | histogram | `recipe` | time from an acquire call to its grant |
//! | `zookeeper_lock_hold_seconds` | histogram | `recipe` | time from a grant to its release, or to its loss |
//! | `zookeeper_lock_acquisitions_total` | counter | `recipe` | acquire calls granted (reads sharing a handle's read node included) |
//! | `zookeeper_lock_timeouts_total` | counter | `recipe` | acquire calls that gave up at their deadline (`acquire_timeout`), or at once (`try_acquire`, `try_read`...) |
//! | `zookeeper_lock_losses_total` | counter | `recipe`, `reason` | grants lost before their release: `session_expired`, `session_closed`, `lease_expired`, `node_deleted` |
//! | `zookeeper_leadership_gained_total` | counter | | times a [`LeaderLatch`] became the leader |
//! | `zookeeper_leadership_lost_total` | counter | `reason` | times a latch stopped leading: `suspended` (it may lead again), `resigned`, or a loss reason as above (`sequence_wrapped` too); gained minus lost is the number of latches leading |
//! | `zookeeper_sequence_near_wrap_total` | counter | | contender nodes created with a sequence number at or past [`SEQUENCE_WARNING_THRESHOLD`] (2^31 - 2^24), or wrapped: any increase means a parent needs [`recycle_idle_parent`] |
//!
//! `recipe` is `mutex`, `read_lock`, `write_lock`, `semaphore` (a lease, a [`SemaphoreMutex`]'s
//! included), `semaphore_gate` (the mutex a [`Semaphore`] takes around its leases, apart from
//! the application's), `leader_selector` (the mutex a [`LeaderSelector`] queues on: its wait
//! is the time to lead, its hold a term; a selector closed while queued is no timeout), or
//! `atomic_long_lock` (the lock a [`DistributedAtomicLong`] takes when its optimistic tries
//! lose).
#![warn(missing_docs)]

#[cfg(feature = "blocking")]
pub mod blocking;
pub mod cache;
mod contend;
mod coordination;
mod counter;
mod election;
mod error;
mod hold;
mod lock;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(not(feature = "metrics"))]
mod metrics;
mod node;
#[cfg(test)]
mod peer_model;
mod retry;
mod semaphore;
mod session;
mod spans;

pub use cache::{
    CacheEvent, CacheEvents, CachedNode, NodeCache, NodeCacheBuilder, Snapshot, TreeCache,
    TreeCacheBuilder,
};
pub use coordination::{
    DistributedBarrier, DistributedDoubleBarrier, GroupMember, PersistentNode, PersistentNodeState,
};
pub use counter::{
    AtomicStats, AtomicValue, CountChanges, DistributedAtomicLong, PromotedToLock, SharedCount,
    VersionedCount,
};
pub use election::{
    participants as leader_participants, CancelOn, ElectionLayout, Leader, LeaderChanges,
    LeaderContext, LeaderLatch, LeaderObserver, LeaderSelector, LeaderSelectorBuilder, Participant,
};
pub use error::{Error, Result};
pub use hold::{FencingToken, Holding, HoldingChanges, LossReason, StateWatcher};
pub use lock::{LockGuard, Mutex, ReadWriteLock};
pub use node::{
    next_sequence, recycle_idle_parent, Layout, ParentKind, Recycled, SEQUENCE_WARNING_THRESHOLD,
};
pub use retry::RetryPolicy;
pub use semaphore::{Lease, Semaphore, SemaphoreMutex};
pub use session::Sessions;
// The client types a recipe user needs, so that a lock takes one dependency. A plain comment:
// rustdoc prepends a doc comment on a `pub use` to the docs of every item it re-exports.
pub use zookeeper_tokio::{
    Client, ClientBuilder, CreateOptions, Error as ClientError, ErrorKind, MultiOp, SessionId,
    SessionState, StateChanges,
};

// The README's examples, compiled and run with this crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// The examples of the repository's guide (docs/), compiled and run with this crate's doctests,
// which reach every crate they use. The guide is outside this package: only a doctest build
// in the repository reads it, never a build of the library or of the packaged crate.
#[cfg(doctest)]
#[doc = include_str!("../../docs/services.md")]
struct GuideServices;
#[cfg(doctest)]
#[doc = include_str!("../../docs/client.md")]
struct GuideClient;
#[cfg(doctest)]
#[doc = include_str!("../../docs/testing.md")]
struct GuideTesting;
#[cfg(doctest)]
#[doc = include_str!("../../docs/elections.md")]
struct GuideElections;
#[cfg(all(doctest, feature = "blocking"))]
#[doc = include_str!("../../docs/blocking.md")]
struct GuideBlocking;
