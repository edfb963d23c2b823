//! Path validation and the chroot prefix, applied on the client before anything is sent.

use std::sync::Arc;

use crate::error::{ErrorKind, Result};

/// Checks a client path the way servers do (`PathUtils.validatePath`), so that a bad path gets a
/// typed error naming the problem instead of a round trip and `BADARGUMENTS`.
pub fn validate_path(path: &str) -> Result<()> {
    match path_problem(path.as_bytes(), path) {
        None => Ok(()),
        Some(reason) => Err(invalid(path, reason)),
    }
}

/// Checks the path of a create: as [`validate_path`], except that the path of a sequential node
/// is checked with its sequence number appended, as the server does. So `/queue/` is valid for
/// a sequential create (the server makes `/queue/0000000007`), and so is `/` (`/0000000007`).
pub fn validate_create_path(path: &str, sequential: bool) -> Result<()> {
    if !sequential {
        return validate_path(path);
    }
    // Any digit stands for the suffix: only its being a non-empty, ordinary name matters.
    let mut with_suffix = Vec::with_capacity(path.len() + 1);
    with_suffix.extend_from_slice(path.as_bytes());
    with_suffix.push(b'0');
    match path_problem(&with_suffix, path) {
        None => Ok(()),
        Some(reason) => Err(invalid(path, reason)),
    }
}

fn invalid(path: &str, reason: &'static str) -> crate::error::Error {
    ErrorKind::InvalidPath {
        path: path.to_owned(),
        reason,
    }
    .into()
}

/// What is wrong with `bytes` as a path, if anything. `text` is the same path as a string, up
/// to a suffix of ASCII digits (checked only for characters beyond ASCII).
fn path_problem(bytes: &[u8], text: &str) -> Option<&'static str> {
    if bytes.is_empty() {
        return Some("path is empty");
    }
    if bytes[0] != b'/' {
        return Some("path must start with '/'");
    }
    if bytes.len() == 1 {
        return None;
    }
    if bytes[bytes.len() - 1] == b'/' {
        return Some("path must not end with '/'");
    }
    // Paths are checked on every request. Most are printable ASCII with no '.' and no "//":
    // nothing in them can be wrong, and these simple scans vectorise.
    if bytes.iter().all(|&b| (0x20..0x7f).contains(&b))
        && !bytes.contains(&b'.')
        && !bytes.windows(2).any(|w| w == b"//")
    {
        return None;
    }
    // One pass over the bytes: segments, then ASCII controls; characters beyond ASCII are
    // checked one by one only if there are any.
    let mut segment_start = 1;
    let mut non_ascii = false;
    for i in 1..=bytes.len() {
        let b = bytes.get(i).copied();
        if b.is_none() || b == Some(b'/') {
            match &bytes[segment_start..i] {
                b"" => return Some("path has an empty segment"),
                b"." | b".." => return Some("relative segments '.' and '..' are not allowed"),
                _ => {}
            }
            segment_start = i + 1;
            continue;
        }
        match b {
            Some(0) => return Some("path contains NUL"),
            Some(c) if c < 0x20 || c == 0x7f => {
                return Some("path contains a character ZooKeeper does not allow")
            }
            Some(c) if c >= 0x80 => non_ascii = true,
            _ => {}
        }
    }
    if non_ascii && text.chars().any(is_forbidden_char) {
        return Some("path contains a character ZooKeeper does not allow");
    }
    None
}

/// The characters servers reject in paths: controls, the surrogate/private-use range, the
/// specials block and (since the server counts UTF-16 units) anything outside the BMP.
fn is_forbidden_char(c: char) -> bool {
    let c = c as u32;
    (0x01..=0x1f).contains(&c)
        || (0x7f..=0x9f).contains(&c)
        || (0xd800..=0xf8ff).contains(&c)
        || (0xfff0..=0xffff).contains(&c)
        || c > 0xffff
}

/// The chroot of a client: prefixed to every outgoing path, stripped from every incoming one.
#[derive(Clone, Debug, Default)]
pub struct Chroot(Option<Arc<str>>);

impl Chroot {
    /// A chroot from a validated path; `None` or `/` mean no chroot.
    pub fn new(root: Option<&str>) -> Chroot {
        match root {
            None | Some("/") => Chroot(None),
            Some(r) => Chroot(Some(Arc::from(r))),
        }
    }

    /// The chroot path, if any.
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// Validates a client path and turns it into the server path.
    pub fn to_server(&self, path: &str) -> Result<String> {
        validate_path(path)?;
        Ok(self.prefix(path))
    }

    /// Validates the path of a create ([`validate_create_path`]) and turns it into the server
    /// path. A sequential create of `/` under a chroot goes to the chroot's `/`, so that the
    /// node is made inside it (`/app/0000000007`, not `/app0000000007`).
    pub fn to_server_create(&self, path: &str, sequential: bool) -> Result<String> {
        validate_create_path(path, sequential)?;
        Ok(match &self.0 {
            Some(root) if sequential && path == "/" => format!("{root}/"),
            _ => self.prefix(path),
        })
    }

    /// Turns an already valid client path into the server path.
    pub fn prefix(&self, path: &str) -> String {
        match &self.0 {
            None => path.to_owned(),
            Some(root) if path == "/" => root.to_string(),
            Some(root) => {
                let mut s = String::with_capacity(root.len() + path.len());
                s.push_str(root);
                s.push_str(path);
                s
            }
        }
    }

    /// Turns a server path into the client path. Paths outside the chroot pass unchanged.
    pub fn strip(&self, server_path: &str) -> String {
        match self.strip_ref(server_path) {
            Some(p) => p.to_owned(),
            None => server_path.to_owned(),
        }
    }

    /// Like [`Chroot::strip`] without allocating; `None` means "outside the chroot".
    pub fn strip_ref<'a>(&self, server_path: &'a str) -> Option<&'a str> {
        match &self.0 {
            None => Some(server_path),
            Some(root) => {
                let rest = server_path.strip_prefix(&**root)?;
                if rest.is_empty() {
                    Some("/")
                } else if rest.starts_with('/') {
                    Some(rest)
                } else {
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(path: &str) -> &'static str {
        match validate_path(path).map_err(|e| e.kind().clone()) {
            Err(ErrorKind::InvalidPath { reason, .. }) => reason,
            other => panic!("{path:?}: {other:?}"),
        }
    }

    #[test]
    fn valid_paths() {
        for p in ["/", "/a", "/a/b", "/a.b/..c/x.", "/é/ü", "/zookeeper"] {
            validate_path(p).unwrap();
        }
    }

    #[test]
    fn invalid_paths_say_why() {
        assert_eq!(reason(""), "path is empty");
        assert_eq!(reason("a"), "path must start with '/'");
        assert_eq!(reason("/a/"), "path must not end with '/'");
        assert_eq!(reason("/a//b"), "path has an empty segment");
        assert_eq!(
            reason("/a/./b"),
            "relative segments '.' and '..' are not allowed"
        );
        assert_eq!(
            reason("/a/.."),
            "relative segments '.' and '..' are not allowed"
        );
        assert_eq!(reason("/a\0b"), "path contains NUL");
        assert_eq!(
            reason("/a\u{1}"),
            "path contains a character ZooKeeper does not allow"
        );
        assert_eq!(
            reason("/\u{1F600}"),
            "path contains a character ZooKeeper does not allow"
        );
        assert_eq!(
            reason("/\u{e000}"),
            "path contains a character ZooKeeper does not allow"
        );
    }

    #[test]
    fn a_sequential_create_validates_the_path_with_its_suffix() {
        for p in ["/seq/", "/", "/a/.", "/a/..", "/a/b"] {
            validate_create_path(p, true).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        }
        for p in ["/seq/", "/a/.", "/a/.."] {
            assert!(validate_create_path(p, false).is_err(), "{p:?}");
        }
        for (p, why) in [
            ("", "path must start with '/'"),
            ("seq", "path must start with '/'"),
            ("/a//", "path has an empty segment"),
            ("/./x", "relative segments '.' and '..' are not allowed"),
            ("/a\0/", "path contains NUL"),
            (
                "/\u{fffe}/",
                "path contains a character ZooKeeper does not allow",
            ),
        ] {
            match validate_create_path(p, true).map_err(|e| e.kind().clone()) {
                Err(ErrorKind::InvalidPath { path, reason }) => {
                    assert_eq!((path.as_str(), reason), (p, why));
                }
                other => panic!("{p:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_sequential_create_of_the_root_stays_inside_the_chroot() {
        let c = Chroot::new(Some("/app"));
        assert_eq!(c.to_server_create("/", true).unwrap(), "/app/");
        assert_eq!(c.to_server_create("/q/", true).unwrap(), "/app/q/");
        assert_eq!(c.to_server_create("/q/n-", true).unwrap(), "/app/q/n-");
        assert_eq!(c.to_server_create("/", false).unwrap(), "/app");
        assert_eq!(Chroot::new(None).to_server_create("/", true).unwrap(), "/");
    }

    #[test]
    fn chroot_prefix_and_strip() {
        let c = Chroot::new(Some("/app"));
        assert_eq!(c.prefix("/"), "/app");
        assert_eq!(c.prefix("/x/y"), "/app/x/y");
        assert_eq!(c.strip("/app"), "/");
        assert_eq!(c.strip("/app/x"), "/x");
        assert_eq!(c.strip("/apple"), "/apple");
        assert_eq!(c.strip("/other"), "/other");
        let none = Chroot::new(None);
        assert_eq!(none.prefix("/x"), "/x");
        assert_eq!(none.strip("/x"), "/x");
        assert!(Chroot::new(Some("/")).as_str().is_none());
    }
}
