//! Bounds on a test's waits: a wait that hangs fails the test, naming what it waited for,
//! instead of blocking the suite until the CI job is killed.

use std::future::Future;
use std::time::Duration;

/// The bound [`bounded`] puts on a wait: far past anything one step of a test takes, even
/// on a loaded two-core machine, so that only a hang reaches it. A test's verdict must never
/// depend on it.
pub const HANG_BOUND: Duration = Duration::from_secs(120);

/// Awaits `future`, panicking with a message naming `what` if it has not ended within
/// [`HANG_BOUND`].
///
/// ```no_run
/// # async fn demo() {
/// let answer = zookeeper_testkit::bounded("the answer", async { 42 }).await;
/// assert_eq!(answer, 42);
/// # }
/// ```
pub async fn bounded<F: Future>(what: &str, future: F) -> F::Output {
    bounded_by(HANG_BOUND, what, future).await
}

/// [`bounded`] with a bound of the caller's own, for a suite whose hang bound is shorter or
/// longer than [`HANG_BOUND`].
pub async fn bounded_by<F: Future>(bound: Duration, what: &str, future: F) -> F::Output {
    match ended_within(bound, future).await {
        Some(output) => output,
        None => panic!("{what}: no end within {bound:?}"),
    }
}

/// `future`'s output, or `None` if it has not ended within `bound`: for a test that reports
/// a hang as one of its findings rather than failing at once.
pub async fn ended_within<F: Future>(bound: Duration, future: F) -> Option<F::Output> {
    tokio::time::timeout(bound, future).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The clock is paused: a pending future reaches the bound at once, whatever the machine.

    #[tokio::test(start_paused = true)]
    async fn a_future_that_ends_gives_its_output() {
        assert_eq!(bounded("ready", async { 7 }).await, 7);
        assert_eq!(ended_within(HANG_BOUND, async { 7 }).await, Some(7));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hang_is_none_within_the_bound() {
        let hung = ended_within(Duration::from_secs(1), std::future::pending::<()>()).await;
        assert_eq!(hung, None);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "the reply: no end within 120s")]
    async fn a_hang_fails_naming_what_hung() {
        bounded("the reply", std::future::pending::<()>()).await;
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "the lock: no end within 3s")]
    async fn a_bound_of_its_own_is_named_in_the_failure() {
        bounded_by(
            Duration::from_secs(3),
            "the lock",
            std::future::pending::<()>(),
        )
        .await;
    }
}
