//! When a lock or leadership stops being trustworthy enough to keep the command running: one
//! rule for locks, leases and leadership alike.

use std::future::Future;
use std::time::Duration;

use zookeeper_recipes::{Leadership, LeadershipChanges, LockState, LockStateChanges};

/// What one reported state means for the command.
pub enum Trust {
    /// Held: carry on.
    Held,
    /// The connection is down: it may come back.
    Suspended,
    /// Gone, for this reason.
    Gone(String),
}

/// A stream of a recipe's states, read as [`Trust`].
pub trait States {
    fn next_trust(&mut self) -> impl Future<Output = Trust>;
}

impl States for LockStateChanges {
    async fn next_trust(&mut self) -> Trust {
        match self.next().await {
            Some(LockState::Held) => Trust::Held,
            Some(LockState::Suspended) => Trust::Suspended,
            Some(LockState::Lost(reason)) => Trust::Gone(reason.to_string()),
            None => Trust::Gone("it was released".to_owned()),
        }
    }
}

impl States for LeadershipChanges {
    async fn next_trust(&mut self) -> Trust {
        match self.next().await {
            Some(Leadership::Leader | Leadership::Starting) => Trust::Held,
            Some(Leadership::Suspended) => Trust::Suspended,
            Some(Leadership::Follower) => Trust::Gone("another participant leads".to_owned()),
            Some(Leadership::Lost(reason)) => Trust::Gone(reason.to_string()),
            Some(Leadership::Closed) | None => Trust::Gone("the election was left".to_owned()),
        }
    }
}

/// Resolves, with the reason, once `states` reports the lock gone, or suspended for longer
/// than `limit` without coming back.
pub async fn until_untrusted(mut states: impl States, limit: Duration) -> String {
    loop {
        match states.next_trust().await {
            Trust::Held => {}
            Trust::Gone(reason) => return reason,
            Trust::Suspended => {
                let back = tokio::time::timeout(limit, async {
                    loop {
                        match states.next_trust().await {
                            Trust::Held => return None,
                            Trust::Suspended => {}
                            Trust::Gone(reason) => return Some(reason),
                        }
                    }
                })
                .await;
                match back {
                    Ok(None) => {}
                    Ok(Some(reason)) => return reason,
                    Err(_) => {
                        return format!(
                            "the connection was down for longer than --suspend-limit ({})",
                            humantime::format_duration(limit)
                        )
                    }
                }
            }
        }
    }
}
