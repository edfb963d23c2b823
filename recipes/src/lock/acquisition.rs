//! The one acquisition path of every lock kind (the mutex, each half of the read-write lock,
//! the semaphore's lease): what an acquire call does around its attempts, and how an attempt
//! queues and hands its grant over. Each kind gives only what differs: its recipe, path,
//! layout, node names and rule, and whatever it does before queueing (the read-write lock's
//! reentry, the semaphore's gate).

use std::future::Future;

use zookeeper_tokio::Client;

use crate::contend::{bounded, enter, Line, Patience, Rule};
use crate::error::Result;
use crate::lock::guard::{first_guard, HeldNode, HoldSlot, LockGuard};
use crate::metrics::{self, Recipe};
use crate::node::naming::{attempt_prefix, Layout};
use crate::spans::{self, Op};

/// One acquire call of a `recipe` on `path`: `attempts` bounded by `patience` (it returns
/// within it whatever the connection does; `client` says how long a `NoWait` may take),
/// recorded in the metrics and traced as an `acquire` span.
///
/// Not an `async fn`, and to be called with `attempts` as a temporary: `bounded` boxes the
/// attempts at once, so the caller's future keeps a pointer to them, not a copy (each waiter
/// keeps its acquisition for as long as it waits).
pub(crate) fn acquire_call<'a, T: 'a>(
    client: &Client,
    recipe: Recipe,
    path: &str,
    patience: &Patience,
    attempts: impl Future<Output = Result<Option<T>>> + Send + 'a,
) -> impl Future<Output = Result<Option<T>>> + 'a {
    let acquisition = bounded(client, patience, attempts);
    let acquisition = metrics::acquisition(recipe, patience.times_out(), acquisition);
    spans::traced(Op::Acquire, recipe.label(), path, acquisition)
}

/// Where and as what a lock kind queues.
pub(crate) struct Entry<'a> {
    /// What the metrics and spans call the hold.
    pub recipe: Recipe,
    /// The parent of the contenders' nodes.
    pub dir: &'a str,
    pub layout: Layout,
    /// The kinds of contender the lock tells apart (see `naming::peer_queue`).
    pub markers: &'a [&'a str],
    /// Our node's kind, one of `markers`.
    pub marker: &'a str,
    /// Written into our node.
    pub data: &'a [u8],
    /// Where the guard is kept for reentry, if the kind is reentrant.
    pub slot: Option<&'a HoldSlot>,
}

/// One attempt in `client`'s session: queues as `entry` says under `rule`, and hands the grant
/// over as a guard (`None`: `patience` ran out first, and our node is gone).
pub(crate) async fn queue_for_guard(
    client: &Client,
    entry: Entry<'_>,
    patience: Patience,
    rule: Rule<'_>,
) -> Result<Option<LockGuard>> {
    let prefix = attempt_prefix(client, entry.layout, entry.marker);
    let line = Line {
        client,
        dir: entry.dir,
        layout: entry.layout,
        markers: entry.markers,
    };
    let won = enter(line, prefix, entry.data, patience, rule).await?;
    Ok(won.map(|w| {
        let node = HeldNode::new(client, entry.recipe, w.path, w.stat, w.wakeups);
        first_guard(node, entry.slot)
    }))
}
