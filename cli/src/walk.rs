//! A pre-order walk of a subtree, children in name order, for `ls -R`, `tree`, `find`,
//! `ephemerals` and `setacl -R`.
//!
//! One `getChildren2` per node gives both its children and its stat. Up to a window of siblings
//! is requested ahead, so the walk costs about one round trip per level and window rather than
//! per node; memory holds the pending siblings along one path, not the tree. Nodes deleted
//! while the walk runs are skipped.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use zookeeper_tokio::{Client, ErrorKind, Result, Stat};

/// Sibling listings requested ahead.
const WINDOW: usize = 64;

type Listing = Pin<Box<dyn Future<Output = Result<(Vec<String>, Stat)>> + Send>>;

/// A node reached by the walk.
pub struct Visit {
    pub path: String,
    /// 0 for the root of the walk.
    pub depth: usize,
    pub stat: Stat,
    /// No sibling follows it.
    pub last: bool,
}

pub struct Walk {
    client: Client,
    levels: Vec<Level>,
    max_depth: Option<usize>,
}

struct Level {
    depth: usize,
    pending: VecDeque<String>,
    requested: VecDeque<(String, Listing)>,
}

impl Walk {
    /// A walk from `root`, down to `max_depth` levels below it (all when `None`).
    pub fn new(client: &Client, root: &str, max_depth: Option<usize>) -> Walk {
        Walk {
            client: client.clone(),
            levels: vec![Level {
                depth: 0,
                pending: VecDeque::from([root.to_owned()]),
                requested: VecDeque::new(),
            }],
            max_depth,
        }
    }

    /// The next node; `None` when the walk is done. The root missing is an error.
    pub async fn next(&mut self) -> Result<Option<Visit>> {
        loop {
            let Some(level) = self.levels.last_mut() else {
                return Ok(None);
            };
            while level.requested.len() < WINDOW {
                let Some(path) = level.pending.pop_front() else {
                    break;
                };
                let listing = Box::pin(self.client.get_children(&path));
                level.requested.push_back((path, listing));
            }
            let Some((path, listing)) = level.requested.pop_front() else {
                self.levels.pop();
                continue;
            };
            let depth = level.depth;
            let last = level.requested.is_empty() && level.pending.is_empty();
            let (mut children, stat) = match listing.await {
                Ok(listed) => listed,
                // Deleted since its parent was listed.
                Err(e) if e == ErrorKind::NoNode && depth > 0 => continue,
                Err(e) => return Err(e),
            };
            if !children.is_empty() && self.max_depth.map_or(true, |max| depth < max) {
                children.sort_unstable();
                self.levels.push(Level {
                    depth: depth + 1,
                    pending: children.iter().map(|c| join(&path, c)).collect(),
                    requested: VecDeque::new(),
                });
            }
            return Ok(Some(Visit {
                path,
                depth,
                stat,
                last,
            }));
        }
    }
}

/// `parent/child`, without doubling the root's slash.
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// The last segment of a path (`/` for the root).
pub fn name(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) if path.len() > 1 => &path[i + 1..],
        _ => path,
    }
}
