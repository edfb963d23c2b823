//! Creating the recipe's path, as Curator does: missing nodes become CONTAINER nodes, which the
//! server removes once they are empty again, so lock paths do not pile up.

use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

use crate::error::{Error, Result};
use crate::session::wait::reconnected_or_ended;

/// How many times the creates are sent again after losing the connection, before its error
/// is returned (a bound for a server that keeps dropping us; each time waits to reconnect).
const ATTEMPTS: usize = 5;

/// Creates `path` and its missing ancestors as containers. All creates are written back to
/// back, so this costs one round trip whatever the depth. Creating a container that exists
/// is a no-op, so creates whose connection was lost (applied or not) are sent again once
/// connected: a missing parent is not a reason for an acquisition to fail, and they go
/// missing whenever an idle lock's containers are reaped.
pub(crate) async fn ensure_path(client: &Client, path: &str) -> Result<()> {
    let options = CreateOptions::container();
    let mut attempt = 1;
    loop {
        let creates: Vec<_> = ancestors_and_self(path)
            .map(|p| client.create(p, &[], &options))
            .collect();
        let mut lost = None;
        for create in creates {
            match create.await {
                Ok(_) => {}
                Err(e) if e == ErrorKind::NodeExists => {}
                Err(e) if e.is_retryable() => {
                    lost.get_or_insert(e);
                }
                // After a lost ancestor, its descendants' NoNode says nothing new.
                Err(e) if lost.is_some() && e == ErrorKind::NoNode => {}
                Err(e) => return Err(Error::Client(e)),
            }
        }
        match lost {
            None => return Ok(()),
            Some(e) if attempt == ATTEMPTS => return Err(Error::Client(e)),
            Some(_) => {
                attempt += 1;
                reconnected_or_ended(client).await?;
            }
        }
    }
}

/// `/a`, `/a/b`, `/a/b/c` for `/a/b/c`.
fn ancestors_and_self(path: &str) -> impl Iterator<Item = &str> {
    path.char_indices()
        .filter(|&(i, c)| c == '/' && i > 0)
        .map(move |(i, _)| &path[..i])
        .chain(std::iter::once(path))
        .filter(|p| !p.is_empty() && *p != "/")
}

/// Checks a recipe path: absolute, not the root, no trailing slash, no empty segment.
pub(crate) fn validate(path: &str) -> Result<()> {
    let reason = if !path.starts_with('/') {
        Some("must start with '/'")
    } else if path == "/" {
        Some("must not be the root")
    } else if path.ends_with('/') {
        Some("must not end with '/'")
    } else if path.contains("//") {
        Some("must not contain an empty segment")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::InvalidPath {
            path: path.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_ancestors_top_down() {
        let v: Vec<_> = ancestors_and_self("/a/b/c").collect();
        assert_eq!(v, ["/a", "/a/b", "/a/b/c"]);
        let v: Vec<_> = ancestors_and_self("/a").collect();
        assert_eq!(v, ["/a"]);
    }

    #[test]
    fn validates_paths() {
        assert!(validate("/locks/x").is_ok());
        for bad in ["", "locks", "/", "/a/", "/a//b"] {
            assert!(validate(bad).is_err(), "{bad:?} accepted");
        }
    }
}
