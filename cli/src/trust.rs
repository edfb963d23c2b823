//! When a lock or leadership stops being trustworthy enough to keep the command running: one
//! rule for locks, leases and leadership alike, read from their shared [`Holding`] states.

use std::time::Duration;

use zookeeper_recipes::{Holding, HoldingChanges};

/// What one reported state means for the command.
#[derive(Debug, PartialEq, Eq)]
enum Trust {
    /// Held: carry on.
    Held,
    /// The connection is down: it may come back.
    Suspended,
    /// Gone, for this reason.
    Gone(String),
}

/// What `state` (`None`: the stream ended) means for a command run while it is held.
fn trust(state: Option<Holding>) -> Trust {
    match state {
        Some(Holding::Held) => Trust::Held,
        Some(Holding::Suspended) => Trust::Suspended,
        Some(Holding::Lost(reason)) => Trust::Gone(reason.to_string()),
        // Back in the queue: someone else holds it, or may.
        Some(Holding::Joining | Holding::Waiting) => {
            Trust::Gone("another participant holds it now".to_owned())
        }
        Some(Holding::Idle) => Trust::Gone("it was given up".to_owned()),
        Some(Holding::Released) | None => Trust::Gone("it was released".to_owned()),
    }
}

/// Resolves, with the reason, once `states` reports the lock or leadership gone, or suspended
/// for longer than `limit` without coming back.
pub async fn until_untrusted(mut states: HoldingChanges, limit: Duration) -> String {
    loop {
        match trust(states.next().await) {
            Trust::Held => {}
            Trust::Gone(reason) => return reason,
            Trust::Suspended => {
                let back = tokio::time::timeout(limit, async {
                    loop {
                        match trust(states.next().await) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use zookeeper_recipes::LossReason;

    #[test]
    fn only_held_is_trusted_and_every_end_says_why() {
        assert_eq!(trust(Some(Holding::Held)), Trust::Held);
        assert_eq!(trust(Some(Holding::Suspended)), Trust::Suspended);
        assert_eq!(
            trust(Some(Holding::Lost(LossReason::NodeDeleted))),
            Trust::Gone("our node was deleted by someone else".to_owned())
        );
        for state in [Holding::Joining, Holding::Waiting] {
            assert_eq!(
                trust(Some(state)),
                Trust::Gone("another participant holds it now".to_owned())
            );
        }
        assert_eq!(
            trust(Some(Holding::Idle)),
            Trust::Gone("it was given up".to_owned())
        );
        for state in [Some(Holding::Released), None] {
            assert_eq!(trust(state), Trust::Gone("it was released".to_owned()));
        }
    }
}
