//! `Debug` for the records that carry credentials: every field but the secret one, so that a
//! record logged or printed in a panic never shows a password, a session password or a SASL
//! token.

use std::fmt;

/// Stands for a secret field in `Debug` output.
pub(crate) struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `Some(Redacted)` for a token that is present, so that its presence still shows.
pub(crate) fn redacted_option<T>(value: &Option<T>) -> Option<Redacted> {
    value.as_ref().map(|_| Redacted)
}
