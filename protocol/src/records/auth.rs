//! `auth` (100) and `whoAmI` (107).

use bytes::Bytes;

use super::redact::Redacted;
use super::ClientInfo;
use crate::jute::record;

record! {
    /// Request of `auth`, sent with xid −4. The reply (no body) is produced out of order and
    /// can overtake earlier replies; err AUTHFAILED closes the connection. `Debug` leaves the
    /// credentials out.
    #[derive(Clone, PartialEq, Eq, Default)]
    pub struct AuthPacket {
        /// Always 0.
        pub auth_type: i32,
        /// Auth scheme, for example `digest`.
        pub scheme: String,
        /// Credentials; for `digest`, the UTF-8 bytes of `user:password`.
        pub auth: Bytes,
    }
}

impl std::fmt::Debug for AuthPacket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthPacket")
            .field("auth_type", &self.auth_type)
            .field("scheme", &self.scheme)
            .field("auth", &Redacted)
            .finish()
    }
}

record! {
    /// Reply of `whoAmI` (3.7+; the request has no body).
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct WhoAmIResponse {
        /// Every identity of the session, always including its `ip` identity.
        pub client_info: Vec<ClientInfo>,
    }
}
