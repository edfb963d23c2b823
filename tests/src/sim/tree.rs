//! The model's data tree: znodes with their full `Stat`, and the write operations as the
//! server applies them (the checks in the order the server makes them, sequence numbers from
//! the parent's count of child creates). No I/O and no clock: the caller passes the zxid and
//! the time.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use zookeeper_jute::{perms, Acl, CreateMode, ErrorCode, EventType, Id, Stat};

use super::acl;

/// What a node is, beyond its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Persistent,
    /// Owned by a session: removed when it ends.
    Ephemeral(i64),
    /// Removed by the cleaner once its last child has gone.
    Container,
    /// Removed by the cleaner once childless and unchanged for this many ms.
    Ttl(i64),
}

#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub data: Bytes,
    pub acl: Vec<Acl>,
    pub stat: Stat,
    pub kind: Kind,
    pub children: BTreeSet<String>,
    /// The next sequential child's number: the children created so far. The real server's
    /// `cversion` also counts deletes, its sequence numbers do not (the conformance suite
    /// found the difference).
    pub next_sequence: i32,
}

/// A change that fires watches: `(path, event)` in the order the server fires them.
pub(crate) type Trigger = (String, EventType);

/// One write, as the server receives it (alone or inside a multi).
#[derive(Clone, Debug)]
pub(crate) enum Write {
    Create {
        path: String,
        data: Bytes,
        acl: Vec<Acl>,
        mode: CreateMode,
        ttl: i64,
    },
    Delete {
        path: String,
        version: i32,
    },
    SetData {
        path: String,
        data: Bytes,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
}

/// What a successful write returns.
#[derive(Clone, Debug)]
pub(crate) enum Applied {
    Created { path: String, stat: Stat },
    Deleted,
    Set { stat: Stat },
    Checked,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Tree {
    pub nodes: BTreeMap<String, Node>,
}

pub(crate) fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

fn name_of(path: &str) -> &str {
    &path[path.rfind('/').map_or(0, |i| i + 1)..]
}

/// The server's path rules (`PathUtils.validatePath`), as far as the model needs them.
pub(crate) fn valid_path(path: &str) -> bool {
    if !path.starts_with('/') {
        return false;
    }
    if path == "/" {
        return true;
    }
    !path.ends_with('/')
        && path[1..]
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'))
}

/// The `ephemeralOwner` a client sees: containers and TTL nodes show 0.
fn visible_owner(kind: Kind) -> i64 {
    match kind {
        Kind::Ephemeral(owner) => owner,
        _ => 0,
    }
}

impl Tree {
    /// The tree a fresh server has: `/`, `/zookeeper`, `/zookeeper/quota`,
    /// `/zookeeper/config`.
    pub(crate) fn new() -> Tree {
        let mut tree = Tree::default();
        let root = Node {
            data: Bytes::new(),
            acl: vec![world_all()],
            stat: Stat::default(),
            kind: Kind::Persistent,
            children: BTreeSet::new(),
            next_sequence: 0,
        };
        tree.nodes.insert("/".into(), root.clone());
        for path in ["/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
            tree.nodes.insert(path.into(), root.clone());
            let parent = tree.nodes.get_mut(parent_of(path)).unwrap();
            parent.children.insert(name_of(path).into());
            parent.stat.num_children += 1;
            parent.next_sequence += 1;
        }
        tree
    }

    pub(crate) fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// Applies one write of a connection holding `ids` at `zxid` and time `now_ms`, appending
    /// the watch triggers it fires. The checks come in the server's order, its ACL checks
    /// among them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn apply(
        &mut self,
        write: &Write,
        session: i64,
        ids: &[Id],
        zxid: i64,
        now_ms: i64,
        triggers: &mut Vec<Trigger>,
    ) -> Result<Applied, ErrorCode> {
        match write {
            Write::Create {
                path,
                data,
                acl,
                mode,
                ttl,
            } => {
                if !valid_path(path) || path == "/" {
                    return Err(ErrorCode::BadArguments);
                }
                if mode.is_ttl() && (*ttl <= 0 || *ttl > MAX_TTL) {
                    return Err(ErrorCode::BadArguments);
                }
                let parent_path = parent_of(path).to_owned();
                let acl = acl::fixup(acl, ids)?;
                let parent = self.nodes.get(&parent_path).ok_or(ErrorCode::NoNode)?;
                acl::check(&parent.acl, perms::CREATE, ids)?;
                let path = if mode.is_sequential() {
                    format!("{path}{:010}", parent.next_sequence)
                } else {
                    path.clone()
                };
                if self.nodes.contains_key(&path) {
                    return Err(ErrorCode::NodeExists);
                }
                if matches!(parent.kind, Kind::Ephemeral(_)) {
                    return Err(ErrorCode::NoChildrenForEphemerals);
                }
                let kind = if mode.is_ephemeral() {
                    Kind::Ephemeral(session)
                } else if mode.is_container() {
                    Kind::Container
                } else if mode.is_ttl() {
                    Kind::Ttl(*ttl)
                } else {
                    Kind::Persistent
                };
                let stat = Stat {
                    czxid: zxid,
                    mzxid: zxid,
                    ctime: now_ms,
                    mtime: now_ms,
                    version: 0,
                    cversion: 0,
                    aversion: 0,
                    ephemeral_owner: visible_owner(kind),
                    data_length: data.len() as i32,
                    num_children: 0,
                    pzxid: zxid,
                };
                let parent = self.nodes.get_mut(&parent_path).unwrap();
                parent.children.insert(name_of(&path).to_owned());
                parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
                parent.next_sequence = parent.next_sequence.wrapping_add(1);
                parent.stat.num_children += 1;
                parent.stat.pzxid = zxid;
                self.nodes.insert(
                    path.clone(),
                    Node {
                        data: data.clone(),
                        acl,
                        stat,
                        kind,
                        children: BTreeSet::new(),
                        next_sequence: 0,
                    },
                );
                triggers.push((path.clone(), EventType::NodeCreated));
                triggers.push((parent_path, EventType::NodeChildrenChanged));
                Ok(Applied::Created { path, stat })
            }
            Write::Delete { path, version } => {
                if !valid_path(path) || path == "/" {
                    return Err(ErrorCode::BadArguments);
                }
                let parent = self.nodes.get(parent_of(path)).ok_or(ErrorCode::NoNode)?;
                acl::check(&parent.acl, perms::DELETE, ids)?;
                let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
                if *version != -1 && node.stat.version != *version {
                    return Err(ErrorCode::BadVersion);
                }
                if !node.children.is_empty() {
                    return Err(ErrorCode::NotEmpty);
                }
                self.remove(path, zxid, triggers);
                Ok(Applied::Deleted)
            }
            Write::SetData {
                path,
                data,
                version,
            } => {
                if !valid_path(path) {
                    return Err(ErrorCode::BadArguments);
                }
                let node = self.nodes.get_mut(path).ok_or(ErrorCode::NoNode)?;
                acl::check(&node.acl, perms::WRITE, ids)?;
                if *version != -1 && node.stat.version != *version {
                    return Err(ErrorCode::BadVersion);
                }
                node.data = data.clone();
                node.stat.version = node.stat.version.wrapping_add(1);
                node.stat.mzxid = zxid;
                node.stat.mtime = now_ms;
                node.stat.data_length = data.len() as i32;
                let stat = node.stat;
                triggers.push((path.clone(), EventType::NodeDataChanged));
                Ok(Applied::Set { stat })
            }
            Write::Check { path, version } => {
                if !valid_path(path) {
                    return Err(ErrorCode::BadArguments);
                }
                let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
                acl::check(&node.acl, perms::READ, ids)?;
                if *version != -1 && node.stat.version != *version {
                    return Err(ErrorCode::BadVersion);
                }
                Ok(Applied::Checked)
            }
        }
    }

    /// Removes a childless node (a delete, an ephemeral's end, a container or TTL cleanup).
    pub(crate) fn remove(&mut self, path: &str, zxid: i64, triggers: &mut Vec<Trigger>) {
        if self.nodes.remove(path).is_none() {
            return;
        }
        let parent_path = parent_of(path).to_owned();
        if let Some(parent) = self.nodes.get_mut(&parent_path) {
            parent.children.remove(name_of(path));
            parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
            parent.stat.num_children -= 1;
            parent.stat.pzxid = zxid;
        }
        triggers.push((path.to_owned(), EventType::NodeDeleted));
        triggers.push((parent_path, EventType::NodeChildrenChanged));
    }

    /// The ephemeral nodes of `session`, in path order.
    pub(crate) fn ephemerals_of(&self, session: i64) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.kind == Kind::Ephemeral(session))
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Containers without children that once had some, and TTL nodes without children whose
    /// time ran out: what the server's container manager deletes.
    pub(crate) fn expired_containers(&self, now_ms: i64) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| {
                n.children.is_empty()
                    && match n.kind {
                        Kind::Container => n.stat.cversion > 0,
                        Kind::Ttl(ttl) => now_ms > n.stat.mtime.saturating_add(ttl),
                        _ => false,
                    }
            })
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Every node under `path` (itself included), for `getAllChildrenNumber`.
    pub(crate) fn descendants(&self, path: &str) -> usize {
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        self.nodes
            .keys()
            .filter(|p| p.starts_with(&prefix) && p.as_str() != "/")
            .count()
    }
}

/// The largest TTL the server takes (`EphemeralType.TTL.maxValue()`).
pub(crate) const MAX_TTL: i64 = (1 << 40) - 1;

pub(crate) fn world_all() -> Acl {
    Acl {
        perms: zookeeper_jute::perms::ALL,
        id: zookeeper_jute::Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(path: &str, mode: CreateMode) -> Write {
        Write::Create {
            path: path.into(),
            data: Bytes::from_static(b"x"),
            acl: vec![world_all()],
            mode,
            ttl: 0,
        }
    }

    #[test]
    fn sequence_numbers_count_the_parents_creates_and_wrap() {
        let mut t = Tree::new();
        let mut tr = Vec::new();
        t.apply(&create("/a", CreateMode::Persistent), 1, &[], 1, 0, &mut tr)
            .unwrap();
        t.apply(&create("/b", CreateMode::Persistent), 1, &[], 2, 0, &mut tr)
            .unwrap();
        t.nodes.get_mut("/a").unwrap().next_sequence = i32::MAX;
        let Applied::Created { path, .. } = t
            .apply(
                &create("/a/s-", CreateMode::PersistentSequential),
                1,
                &[],
                3,
                0,
                &mut tr,
            )
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(path, "/a/s-2147483647");
        let Applied::Created { path, .. } = t
            .apply(
                &create("/a/s-", CreateMode::PersistentSequential),
                1,
                &[],
                4,
                0,
                &mut tr,
            )
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(path, "/a/s--2147483648");
        // A delete moves cversion, not the sequence.
        t.apply(
            &Write::Delete {
                path: "/a/s-2147483647".into(),
                version: -1,
            },
            1,
            &[],
            5,
            0,
            &mut tr,
        )
        .unwrap();
        let Applied::Created { path, .. } = t
            .apply(
                &create("/a/s-", CreateMode::PersistentSequential),
                1,
                &[],
                6,
                0,
                &mut tr,
            )
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(path, "/a/s--2147483647");
        // Another parent counts on its own.
        let Applied::Created { path, .. } = t
            .apply(
                &create("/b/s-", CreateMode::PersistentSequential),
                1,
                &[],
                5,
                0,
                &mut tr,
            )
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(path, "/b/s-0000000000");
    }

    #[test]
    fn checks_come_in_the_servers_order() {
        let mut t = Tree::new();
        let mut tr = Vec::new();
        t.apply(&create("/e", CreateMode::Ephemeral), 7, &[], 1, 0, &mut tr)
            .unwrap();
        // NodeExists before NoChildrenForEphemerals.
        assert_eq!(
            t.apply(&create("/e", CreateMode::Persistent), 7, &[], 2, 0, &mut tr)
                .unwrap_err(),
            ErrorCode::NodeExists
        );
        assert_eq!(
            t.apply(
                &create("/e/c", CreateMode::Persistent),
                7,
                &[],
                3,
                0,
                &mut tr
            )
            .unwrap_err(),
            ErrorCode::NoChildrenForEphemerals
        );
        assert_eq!(
            t.apply(
                &create("/x/c", CreateMode::Persistent),
                7,
                &[],
                3,
                0,
                &mut tr
            )
            .unwrap_err(),
            ErrorCode::NoNode
        );
        assert_eq!(t.ephemerals_of(7), vec!["/e".to_string()]);
    }
}
