//! Caches of one node ([`NodeCache`]) or of a subtree ([`TreeCache`]), kept up to date through a
//! persistent (recursive) watch, with a stream of what changed.
//!
//! # What the view guarantees
//!
//! The view only ever moves from one state the server held to a later one: after every event,
//! the cache equals the server's tree at that event's zxid ([`CacheEvent::zxid`]), and
//! [`TreeCache::snapshot`] returns the view with the zxid it equals. Events come in server
//! order, never twice, and nothing is missed across reconnects or session expiry (with
//! renewing [`Sessions`](crate::Sessions)); a node deleted and created again between two views
//! shows as deleted, then created. Changes that come faster than the cache can read them are
//! coalesced: the view skips intermediate states it could not read, never showing a state
//! the server did not hold at the zxid given.
//!
//! # How
//!
//! A watch event says that a node changed, not to what; the read it triggers may see a later
//! state, and other nodes may have changed in between. The cache keeps the events it has not
//! yet applied, in the order the server sent them, and places every read among them by
//! counting: each data change raises the node's version by one, each creation starts a new
//! node (a new czxid) at version 0. A read that matches exactly one place in its node's
//! events tells the node's state from that event on. The view advances to the latest event
//! at which every node's state is known, in one step, and the events between are reported
//! with that event's zxid. After a reconnect, the changes made while cut off are reported by
//! the client once per node and in no useful order; the cache applies nothing inside that
//! stretch, reads every node it touched, and advances past it once the client has reported
//! everything it missed.
//!
//! The events must come as the server sent them, one per change, for counting to hold; the
//! cache reads its stream as fast as it comes. A stream that is not (events the client had to
//! fold for a consumer that fell behind, say) is detected where counts do not add up, and what
//! is pending is then read again as after a reconnect; folding that happens to add up (single
//! changes of different nodes, reordered) is not detectable from the events alone.
//!
//! # Memory
//!
//! The view holds every node's path, stat and data: about 330 bytes per node plus the data
//! (measured over 10,101 nodes, see BENCHMARKS.md), or no data with
//! [`stats_only`](TreeCacheBuilder::stats_only); the client's record of the subtree behind the
//! recursive watch costs about 370 more per node. Events not yet applied are bounded by
//! [`max_pending`](TreeCacheBuilder::max_pending): past it they are folded into one pending
//! change per node. Each event stream queues at most
//! [`max_queued_events`](TreeCacheBuilder::max_queued_events) events for a consumer that reads
//! slowly, then folds further changes into one event per node, reported (with the latest zxid)
//! once the consumer has read the queue.

mod driver;
mod engine;
mod events;
mod expect;
mod node;
mod shared;
mod tree;
pub(crate) mod view;

pub use events::CacheEvents;
pub use node::{NodeCache, NodeCacheBuilder};
pub use shared::Snapshot;
pub use tree::{TreeCache, TreeCacheBuilder, DEFAULT_MAX_PENDING, DEFAULT_MAX_QUEUED_EVENTS};
pub use view::{CacheEvent, CachedNode};
