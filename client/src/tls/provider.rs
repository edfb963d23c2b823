//! The cryptography every TLS connection of the client uses.

use std::sync::{Arc, OnceLock};

use rustls::crypto::CryptoProvider;

/// `ring`, the one provider compiled in.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}
