//! The caller's path, kept by an operation's future for the error that may name it.
//!
//! The future outlives the caller's borrow, so the path is copied when the call is made; but
//! it is read only if the call fails. A short path (most are) is copied inline, so that a call
//! allocates nothing for a context it rarely needs: the allocation and its release cost a
//! sequential call about 1.5% of its instructions.

/// Paths up to this many bytes are kept inline: with the length and the tag, as large as the
/// `String` it replaces, so that no future grows.
const INLINE: usize = 22;

/// A copy of a path, inline when short.
pub(crate) enum KeptPath {
    /// The path's bytes, the first `len` of `bytes`.
    Short { len: u8, bytes: [u8; INLINE] },
    /// A path longer than [`INLINE`].
    Long(Box<str>),
}

impl KeptPath {
    pub(crate) fn new(path: &str) -> KeptPath {
        if path.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..path.len()].copy_from_slice(path.as_bytes());
            KeptPath::Short {
                len: path.len() as u8,
                bytes,
            }
        } else {
            KeptPath::Long(path.into())
        }
    }

    pub(crate) fn into_string(self) -> String {
        match self {
            // The bytes are a whole `str`'s, so nothing is ever replaced.
            KeptPath::Short { len, bytes } => {
                String::from_utf8_lossy(&bytes[..usize::from(len)]).into_owned()
            }
            KeptPath::Long(path) => path.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_comes_back_as_it_was_given_whatever_its_length() {
        let long = format!("/{}", "é".repeat(20));
        for path in [
            "",
            "/",
            "/a",
            &"/x".repeat(11),
            &"/x".repeat(12),
            "/ñode/é",
            &long,
        ] {
            assert_eq!(KeptPath::new(path).into_string(), path);
        }
        assert!(matches!(
            KeptPath::new(&"/x".repeat(11)),
            KeptPath::Short { .. }
        ));
        assert!(matches!(KeptPath::new(&"/x".repeat(12)), KeptPath::Long(_)));
        assert_eq!(
            std::mem::size_of::<Option<KeptPath>>(),
            std::mem::size_of::<Option<String>>()
        );
    }
}
