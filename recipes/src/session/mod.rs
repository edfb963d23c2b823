//! The session a recipe works in: waiting on it (reconnection with a bound, calls repeated
//! across reconnects, waits bounded by a deadline) and renewing it after expiry
//! ([`Sessions`]).
//!
//! Following the session on behalf of a held node, and reading its lease, are the hold
//! layer's (`hold::session_follower`, `hold::session_lease`): they speak of what a holder
//! lost, which the errors here are built on.

pub(crate) mod sessions;
pub(crate) mod wait;

pub use sessions::Sessions;
