//! Parent spans for the recipes' operations, with the feature `tracing-spans` (which turns on
//! the client's span per request): the requests an operation makes are children of its span.
//! Without the feature the futures are returned as they are.
//!
//! Named after the operation: `acquire` (a lock, a read or write lock, a semaphore's lease, a
//! selector's wait for leadership), `release`, `join` (a leader latch entering the election),
//! `elect` (its wait in the queue, until it leads or gives up) and `lead` (a selector's term,
//! the leader's own work included). Fields: `zookeeper.recipe` and `zookeeper.path`.

use std::future::Future;

/// An operation of a recipe.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    Acquire,
    Release,
    Join,
    Elect,
    Lead,
}

/// `f` inside the span of `op` of `recipe` on `path`, a child of the current span.
#[cfg(feature = "tracing-spans")]
pub(crate) fn traced<F: Future>(
    op: Op,
    recipe: &'static str,
    path: &str,
    f: F,
) -> tracing::instrument::Instrumented<F> {
    use tracing::{info_span, Instrument};
    // One call site per name: a span's name is fixed where it is made.
    let span = match op {
        Op::Acquire => info_span!("acquire", zookeeper.recipe = recipe, zookeeper.path = path),
        Op::Release => info_span!("release", zookeeper.recipe = recipe, zookeeper.path = path),
        Op::Join => info_span!("join", zookeeper.recipe = recipe, zookeeper.path = path),
        Op::Elect => info_span!("elect", zookeeper.recipe = recipe, zookeeper.path = path),
        Op::Lead => info_span!("lead", zookeeper.recipe = recipe, zookeeper.path = path),
    };
    f.instrument(span)
}

#[cfg(not(feature = "tracing-spans"))]
#[inline(always)]
pub(crate) fn traced<F: Future>(_op: Op, _recipe: &'static str, _path: &str, f: F) -> F {
    f
}

/// `f`, to be spawned, in the current span (work a span's operation hands to a task).
#[cfg(feature = "tracing-spans")]
pub(crate) fn in_current_span<F: Future>(f: F) -> tracing::instrument::Instrumented<F> {
    tracing::Instrument::in_current_span(f)
}

#[cfg(not(feature = "tracing-spans"))]
#[inline(always)]
pub(crate) fn in_current_span<F: Future>(f: F) -> F {
    f
}
