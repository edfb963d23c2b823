//! The recipes' metrics: their names, and the hooks that record them through the
//! [`metrics`](https://docs.rs/metrics) facade. The table of what each one counts is in the
//! crate docs.
//!
//! Without the cargo feature `metrics` every hook is an empty inline function (or hands back
//! the future it was given) and the types below hold nothing: the crate then has no `metrics`
//! dependency and no code to run.
//!
//! Labels stay few and bounded: the recipe kind and a reason. Never a lock path.
#![cfg_attr(not(feature = "metrics"), allow(dead_code, unused_variables))]

#[cfg(feature = "metrics")]
use ::metrics::{counter, histogram};
#[cfg(feature = "metrics")]
use tokio::time::Instant;

/// Seconds from an acquire call to its grant, by `recipe`.
pub const LOCK_WAIT: &str = "zookeeper_lock_wait_seconds";
/// Seconds from a grant to the release, or to the loss, by `recipe`.
pub const LOCK_HOLD: &str = "zookeeper_lock_hold_seconds";
/// Acquire calls that were granted, by `recipe`.
pub const LOCK_ACQUISITIONS: &str = "zookeeper_lock_acquisitions_total";
/// Acquire calls that gave up at their deadline (or at once, for a `try_`), by `recipe`.
pub const LOCK_TIMEOUTS: &str = "zookeeper_lock_timeouts_total";
/// Grants lost before their release, by `recipe` and `reason`.
pub const LOCK_LOSSES: &str = "zookeeper_lock_losses_total";
/// Times a leader latch became the leader.
pub const LEADERSHIP_GAINED: &str = "zookeeper_leadership_gained_total";
/// Times a leader latch stopped being the leader, by `reason`.
pub const LEADERSHIP_LOST: &str = "zookeeper_leadership_lost_total";
/// Contender nodes created with a sequence number past the warning threshold, or wrapped.
pub const SEQUENCE_NEAR_WRAP: &str = "zookeeper_sequence_near_wrap_total";

/// Gives every metric of this crate, and of the client (`zookeeper_tokio::metrics::describe`),
/// its description and unit in the installed recorder. Call it once the recorder is
/// installed; recording works without it.
#[cfg(feature = "metrics")]
pub fn describe() {
    use ::metrics::{describe_counter, describe_histogram, Unit};
    zookeeper_tokio::metrics::describe();
    describe_histogram!(
        LOCK_WAIT,
        Unit::Seconds,
        "Time from an acquire call to its grant, by recipe"
    );
    describe_histogram!(
        LOCK_HOLD,
        Unit::Seconds,
        "Time from a grant to its release or loss, by recipe"
    );
    describe_counter!(LOCK_ACQUISITIONS, "Acquire calls granted, by recipe");
    describe_counter!(
        LOCK_TIMEOUTS,
        "Acquire calls that gave up at their deadline, by recipe"
    );
    describe_counter!(
        LOCK_LOSSES,
        "Grants lost before release, by recipe and reason"
    );
    describe_counter!(LEADERSHIP_GAINED, "Times a leader latch became leader");
    describe_counter!(
        LEADERSHIP_LOST,
        "Times a leader latch stopped leading, by reason"
    );
    describe_counter!(
        SEQUENCE_NEAR_WRAP,
        "Contender nodes created with a sequence past 2^31 - 2^24 (or wrapped): recycle the parent"
    );
}

/// What was acquired: the `recipe` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recipe {
    Mutex,
    ReadLock,
    WriteLock,
    Semaphore,
    /// The mutex a semaphore takes around its leases, apart from the application's mutexes.
    SemaphoreGate,
    /// The mutex a `LeaderSelector` queues on: its wait is the time to leadership, its hold a
    /// term.
    LeaderSelector,
    /// The lock a `DistributedAtomicLong` takes when its optimistic tries lose (the promoted
    /// lock), apart from the application's mutexes.
    AtomicLongLock,
}

impl Recipe {
    /// The `recipe` label, and the span field `zookeeper.recipe`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Recipe::Mutex => "mutex",
            Recipe::ReadLock => "read_lock",
            Recipe::WriteLock => "write_lock",
            Recipe::Semaphore => "semaphore",
            Recipe::SemaphoreGate => "semaphore_gate",
            Recipe::LeaderSelector => "leader_selector",
            Recipe::AtomicLongLock => "atomic_long_lock",
        }
    }
}

/// Runs one acquire call of `recipe`: a grant records its wait, a `None` a timeout when
/// `times_out` (false for a call that was stopped: a close, not a timeout).
#[cfg(feature = "metrics")]
pub(crate) async fn acquisition<T, E>(
    recipe: Recipe,
    times_out: bool,
    acquisition: impl std::future::Future<Output = Result<Option<T>, E>>,
) -> Result<Option<T>, E> {
    let started = Instant::now();
    let outcome = acquisition.await;
    match &outcome {
        Ok(Some(_)) => {
            histogram!(LOCK_WAIT, "recipe" => recipe.label())
                .record(started.elapsed().as_secs_f64());
            counter!(LOCK_ACQUISITIONS, "recipe" => recipe.label()).increment(1);
        }
        Ok(None) if !times_out => {}
        Ok(None) => counter!(LOCK_TIMEOUTS, "recipe" => recipe.label()).increment(1),
        Err(_) => {}
    }
    outcome
}

/// See the recording version: without the feature, the acquisition itself.
#[cfg(not(feature = "metrics"))]
#[inline]
pub(crate) fn acquisition<F>(recipe: Recipe, times_out: bool, acquisition: F) -> F {
    acquisition
}

/// One grant, from the moment it was granted.
pub(crate) struct Hold {
    #[cfg(feature = "metrics")]
    recipe: Recipe,
    #[cfg(feature = "metrics")]
    granted: Instant,
}

impl Hold {
    #[inline]
    pub(crate) fn granted(recipe: Recipe) -> Hold {
        Hold {
            #[cfg(feature = "metrics")]
            recipe,
            #[cfg(feature = "metrics")]
            granted: Instant::now(),
        }
    }

    /// The grant ended (call it once): released when `loss` is `None`, else lost, `loss`
    /// being the `reason` label.
    #[inline]
    pub(crate) fn ended(&self, loss: Option<&'static str>) {
        #[cfg(feature = "metrics")]
        {
            let recipe = self.recipe.label();
            histogram!(LOCK_HOLD, "recipe" => recipe).record(self.granted.elapsed().as_secs_f64());
            if let Some(reason) = loss {
                counter!(LOCK_LOSSES, "recipe" => recipe, "reason" => reason).increment(1);
            }
        }
    }
}

/// A leader latch became the leader.
#[inline]
pub(crate) fn leadership_gained() {
    #[cfg(feature = "metrics")]
    counter!(LEADERSHIP_GAINED).increment(1);
}

/// A leader latch stopped leading, for `reason` (the `reason` label).
#[inline]
pub(crate) fn leadership_lost(reason: &'static str) {
    #[cfg(feature = "metrics")]
    counter!(LEADERSHIP_LOST, "reason" => reason).increment(1);
}

/// A contender node was created with a sequence number past the warning threshold.
#[inline]
pub(crate) fn sequence_near_wrap() {
    #[cfg(feature = "metrics")]
    counter!(SEQUENCE_NEAR_WRAP).increment(1);
}
