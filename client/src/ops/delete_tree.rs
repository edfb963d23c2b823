//! Recursive delete: a subtree, deepest first, in batches.

use std::future::Future;

use crate::client::Client;
use crate::error::{ErrorKind, Result};
use crate::path::validate_path;

/// Children deleted per round trip. Also bounds the paths held per level beyond the level's
/// own listing.
const BATCH: usize = 1000;

/// How often a node that keeps getting new children is listed again before giving up with
/// [`ErrorKind::NotEmpty`].
const RELISTS: u32 = 100;

/// One node on the walk's path from the root of the subtree down.
struct Level {
    path: String,
    /// Children not yet handled; `None` until listed.
    pending: Option<Vec<String>>,
    relists: u32,
}

impl Level {
    fn new(path: String) -> Level {
        Level {
            path,
            pending: None,
            relists: 0,
        }
    }
}

impl Client {
    /// Deletes `path` and every node under it, deepest first, and returns how many nodes this
    /// call deleted (0 when `path` does not exist).
    ///
    /// Children are deleted a batch at a time (up to 1,000 deletes queued back to back, one
    /// round trip), as if they were leaves; those that answer [`ErrorKind::NotEmpty`] are
    /// walked into. Memory stays bounded by the listings along one path from `path` down, not
    /// by the size of the tree. The walk tolerates concurrent changes: a node deleted by someone
    /// else is skipped, and a node that gained children meanwhile is listed again (up to 100
    /// times, then [`ErrorKind::NotEmpty`]). Plain deletes rather than a `multi`, which would
    /// fail whole on the first such race.
    ///
    /// Not atomic: on an error (the error names the operation and node that failed, for
    /// example `delete /a/b: not authorised by the node's ACL`) part of the tree may be gone,
    /// and calling again carries on. `/` without a chroot is refused. The same holds when the
    /// error [`is_outcome_unknown`](crate::Error::is_outcome_unknown): the node it names may
    /// be gone.
    pub fn delete_recursive(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<usize>> + Send + 'static {
        let checked = validate_path(path).and_then(|()| {
            if path == "/" && self.chroot().is_none() {
                Err(ErrorKind::InvalidArgument("the root node cannot be deleted".into()).into())
            } else {
                Ok(())
            }
        });
        let client = self.clone();
        let path = path.to_owned();
        async move {
            checked.map_err(|e| e.at("delete_recursive", Some(path.clone())))?;
            client.delete_tree(path).await
        }
    }

    async fn delete_tree(&self, root: String) -> Result<usize> {
        let mut deleted = 0;
        let mut walk = vec![Level::new(root)];
        while let Some(level) = walk.last_mut() {
            let pending = match &mut level.pending {
                Some(pending) => pending,
                None => match self.get_children(&level.path).await {
                    Ok((children, _)) => level.pending.insert(children),
                    Err(e) if e == ErrorKind::NoNode => {
                        walk.pop();
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            if pending.is_empty() {
                match self.delete(&level.path, None).await {
                    Ok(()) => deleted += 1,
                    Err(e) if e == ErrorKind::NoNode => {}
                    Err(e) if e == ErrorKind::NotEmpty && level.relists < RELISTS => {
                        // Someone added a child since the listing: list again.
                        level.relists += 1;
                        level.pending = None;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
                walk.pop();
                continue;
            }
            let batch = pending.split_off(pending.len().saturating_sub(BATCH));
            let parent = level.path.clone();
            let replies: Vec<_> = batch
                .into_iter()
                .map(|name| {
                    let child = join(&parent, &name);
                    let reply = self.delete(&child, None);
                    (child, reply)
                })
                .collect();
            for (child, reply) in replies {
                match reply.await {
                    Ok(()) => deleted += 1,
                    Err(e) if e == ErrorKind::NoNode => {}
                    Err(e) if e == ErrorKind::NotEmpty => walk.push(Level::new(child)),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(deleted)
    }
}

fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}
