//! SASL mechanisms, as the session machine drives them: a token to start with, then one
//! challenge in and one response out per round trip, until the mechanism is satisfied.
//!
//! The machine knows only [`SaslMechanism`] and [`SaslFactory`]; the mechanisms themselves
//! (DIGEST-MD5, GSSAPI) sit behind cargo features. A mechanism is made afresh for every
//! connection, since each login is a new exchange (new nonces, a new security context).

use std::fmt;

use crate::connect_string::HostPort;

#[cfg(feature = "sasl-digest")]
pub(crate) mod digest;
#[cfg(feature = "sasl-gssapi")]
pub(crate) mod gssapi;

/// What a mechanism wants after a challenge.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(
    not(any(feature = "sasl-digest", feature = "sasl-gssapi", test)),
    allow(dead_code)
)]
pub(crate) enum SaslStep {
    /// Send this token and wait for the server's next challenge.
    Respond(Vec<u8>),
    /// The exchange is complete and the server proved itself where the mechanism can tell.
    Done,
}

/// Why a login could not go on. The text names what went wrong, never a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SaslError(pub String);

impl fmt::Display for SaslError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One login on one connection.
pub(crate) trait SaslMechanism: Send {
    /// The mechanism's name, for logs.
    fn name(&self) -> &'static str;
    /// The first token sent (empty when the server speaks first, as with DIGEST-MD5).
    fn start(&mut self) -> Result<Vec<u8>, SaslError>;
    /// The server's answer to the last token (empty when it sent none).
    fn step(&mut self, challenge: &[u8]) -> Result<SaslStep, SaslError>;
}

/// Makes the mechanism for a connection to `host`. Its `Debug` shows no secret.
pub(crate) trait SaslFactory: Send + Sync + fmt::Debug {
    fn mechanism(&self, host: &HostPort) -> Result<Box<dyn SaslMechanism>, SaslError>;
}

/// Fresh unpredictable bytes for nonces: the standard library's hasher keys come from the
/// operating system's random source; a counter and the clock keep successive calls apart.
#[cfg_attr(not(feature = "sasl-digest"), allow(dead_code))]
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut out = [0u8; N];
    for chunk in out.chunks_mut(8) {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        let bytes = hasher.finish().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    out
}
