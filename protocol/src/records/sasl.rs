//! `sasl` (102): one round of a SASL exchange.

use bytes::Bytes;

use super::redact::redacted_option;
use crate::jute::record;

record! {
    /// Request of `sasl`: the client's next token (the first may be empty). `Debug` leaves the
    /// token out: some mechanisms carry the password in it.
    #[derive(Clone, PartialEq, Eq, Default)]
    pub struct GetSaslRequest {
        /// The client's token.
        pub token: Option<Bytes>,
    }
}

record! {
    /// Reply of `sasl`: the server's challenge. `Debug` leaves the token out.
    #[derive(Clone, PartialEq, Eq, Default)]
    pub struct SetSaslResponse {
        /// The server's token; null when there is none.
        pub token: Option<Bytes>,
    }
}

impl std::fmt::Debug for GetSaslRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GetSaslRequest")
            .field("token", &redacted_option(&self.token))
            .finish()
    }
}

impl std::fmt::Debug for SetSaslResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetSaslResponse")
            .field("token", &redacted_option(&self.token))
            .finish()
    }
}
