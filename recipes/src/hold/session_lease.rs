//! Reading the session's lease: whether what our ephemeral nodes stand for can still be
//! trusted, decided on the spot from the monotonic clock.
//!
//! The client publishes the instant before which no server can have expired the session
//! ([`Client::lease_deadline`]). Until then our nodes exist; after it, another contender may
//! hold what they guarded. Reading it needs no round trip and no background task, so a
//! process resuming from a pause (`SIGSTOP`, a long GC, a stalled VM) sees the loss on its
//! first look.

use std::time::Duration;

use zookeeper_tokio::{Client, SessionState};

use super::loss_reason::LossReason;

/// How long before the deadline the lease counts as over: a timer fires up to a millisecond
/// late and the task it wakes needs a turn of its runtime, so signals start this much early
/// to arrive before the deadline, not after it.
pub(crate) const EARLY: Duration = Duration::from_millis(5);

/// Why the session can no longer be trusted, or `None` while its lease runs.
pub(crate) fn loss(client: &Client) -> Option<LossReason> {
    match client.lease_deadline() {
        // The client's deadlines are on tokio's clock (simulated under turmoil), not the
        // system's.
        Some(deadline) if tokio::time::Instant::now().into_std() + EARLY < deadline => None,
        Some(_) => Some(LossReason::LeaseExpired),
        // No lease: the session ended (the state says how), or nothing vouches for it.
        None => Some(match client.state() {
            SessionState::Expired => LossReason::SessionExpired,
            SessionState::Closed | SessionState::AuthFailed => LossReason::SessionClosed,
            _ => LossReason::LeaseExpired,
        }),
    }
}

/// Resolves once the lease is over, following every extension the client makes meanwhile.
pub(crate) async fn until_over(client: &Client) -> LossReason {
    loop {
        if let Some(reason) = loss(client) {
            return reason;
        }
        if let Some(deadline) = client.lease_deadline() {
            let at = deadline.checked_sub(EARLY).unwrap_or(deadline);
            tokio::time::sleep_until(at.into()).await;
        }
    }
}
