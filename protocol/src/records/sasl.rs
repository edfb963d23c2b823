//! `sasl` (102): one round of a SASL exchange.

use bytes::Bytes;

use crate::jute::record;

record! {
    /// Request of `sasl`: the client's next token (the first may be empty).
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct GetSaslRequest {
        /// The client's token.
        pub token: Option<Bytes>,
    }
}

record! {
    /// Reply of `sasl`: the server's challenge.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct SetSaslResponse {
        /// The server's token; null when there is none.
        pub token: Option<Bytes>,
    }
}
