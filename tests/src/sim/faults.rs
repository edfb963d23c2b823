//! The faults the model server injects itself, each drawn from the server's seed. Network
//! faults (partitions, held and dropped links) are turmoil's; client pauses are the
//! workload's (see `docs/simulation.md`).

use std::time::Duration;

/// Server-side faults. Replies on one connection are never reordered, whatever is injected:
/// the real server never does that, and the client is entitled to rely on it.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Probability that the reply to a write is lost after the write was applied: the
    /// connection closes instead of answering (the lost-create case protected node names
    /// exist for).
    pub lose_reply_after_apply: f64,
    /// Probability that a reply is slow: it, and everything behind it on its connection, is
    /// held for up to `slow_reply_max`.
    pub slow_reply: f64,
    /// The longest hold of a slow reply.
    pub slow_reply_max: Duration,
}
