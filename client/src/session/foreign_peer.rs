//! Naming the peer that answered a handshake with something other than ZooKeeper's protocol:
//! its first four bytes, read as a frame length, are far over the limit, and as bytes they
//! often say what it is.

/// Why a frame whose first four bytes are `first` (read as a length far over the limit) means
/// the peer is not a ZooKeeper server, saying what it looks like; `None` when the bytes look
/// like nothing known.
pub(super) fn describe(first: [u8; 4]) -> Option<String> {
    let looks_like = match first {
        [b'H', b'T', b'T', b'P'] => "an HTTP server".to_owned(),
        [b'S', b'S', b'H', b'-'] => "an SSH server".to_owned(),
        // A TLS record (0x16 handshake, 0x15 alert) of TLS 1.x: a TLS port dialled in plain TCP.
        [kind @ (0x15 | 0x16), 0x03, minor @ 0..=4, _] => format!(
            "a TLS server (a TLS record header {kind:#04x} 0x03 {minor:#04x}): connect to it with TLS"
        ),
        _ if first.iter().all(|b| b.is_ascii_graphic() || *b == b' ') => format!(
            "a server of some text protocol (it began with {:?})",
            String::from_utf8_lossy(&first)
        ),
        _ => return None,
    };
    let len = u32::from_be_bytes(first);
    Some(format!(
        "the peer is not a ZooKeeper server: it looks like {looks_like}; its first bytes, read \
         as a frame length, give {len}"
    ))
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn known_peers_are_named() {
        let http = describe(*b"HTTP").unwrap();
        assert!(http.contains("an HTTP server"), "{http}");
        assert!(http.contains("1213486160"), "{http}");
        let tls = describe([0x16, 0x03, 0x03, 0x00]).unwrap();
        assert!(tls.contains("TLS record header 0x16 0x03"), "{tls}");
        assert!(describe([0x15, 0x03, 0x01, 0x00]).unwrap().contains("TLS"));
        assert!(describe(*b"SSH-").unwrap().contains("SSH"));
        assert!(describe(*b"+OK ").unwrap().contains("\"+OK \""));
        assert_eq!(describe([0x7f, 0, 0, 0]), None);
    }
}
