//! What counting events tells of a node's state: each data change raises its version by one,
//! a creation starts a new node at version 0 (with a czxid not known until read), a deletion
//! leaves it absent. A read is placed among the node's events where it fits these counts.

use crate::cache::view::NodeState;

/// A watch event, as the cache keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Created,
    Changed,
    Deleted,
    /// Something happened to the node; what is not known (events folded when too many were
    /// pending).
    Touched,
    /// The node's children changed in ways not said: a client past its recursive watch's
    /// memory reports a deletion below its root so, as a child change of the parent. Taken
    /// as a `Touched` of every node known below it; never queued itself.
    Children,
}

/// A node's state after some of its events, as far as counting tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    Unknown,
    Absent,
    Present {
        czxid: Option<i64>,
        version: Option<i32>,
    },
}

impl Expect {
    pub fn of(state: &NodeState) -> Expect {
        match state {
            NodeState::Absent => Expect::Absent,
            NodeState::Present(node) => Expect::Present {
                czxid: Some(node.stat.czxid),
                version: Some(node.stat.version),
            },
        }
    }

    /// After an event of `kind`. `ordered`: the event came live, in the server's order, one
    /// per change; otherwise it may stand for several changes. `None` when such an event
    /// cannot follow this state: events were lost or came out of order.
    pub fn after(self, kind: Kind, ordered: bool) -> Option<Expect> {
        if kind == Kind::Deleted {
            return match (self, ordered) {
                (Expect::Absent, true) => None,
                _ => Some(Expect::Absent),
            };
        }
        if !ordered || matches!(kind, Kind::Touched | Kind::Children) {
            return Some(Expect::Unknown);
        }
        match (kind, self) {
            (Kind::Created, Expect::Present { .. }) => None,
            (Kind::Created, _) => Some(Expect::Present {
                czxid: None,
                version: Some(0),
            }),
            (Kind::Changed, Expect::Absent) => None,
            (Kind::Changed, Expect::Unknown) => Some(Expect::Present {
                czxid: None,
                version: None,
            }),
            (Kind::Changed, Expect::Present { czxid, version }) => Some(Expect::Present {
                czxid,
                version: version.map(|v| v.wrapping_add(1)),
            }),
            (Kind::Deleted | Kind::Touched | Kind::Children, _) => unreachable!("handled above"),
        }
    }

    /// Whether a read returning `read` fits.
    pub fn admits(self, read: &NodeState) -> bool {
        match (self, read) {
            (Expect::Unknown, _) => true,
            (Expect::Absent, NodeState::Absent) => true,
            (Expect::Present { czxid, version }, NodeState::Present(node)) => {
                czxid.map_or(true, |c| c == node.stat.czxid)
                    && version.map_or(true, |v| v == node.stat.version)
            }
            _ => false,
        }
    }
}

/// Whether two reads saw the same state of a node.
pub(crate) fn same_state(a: &NodeState, b: &NodeState) -> bool {
    match (a, b) {
        (NodeState::Absent, NodeState::Absent) => true,
        (NodeState::Present(a), NodeState::Present(b)) => {
            a.stat.czxid == b.stat.czxid
                && a.stat.version == b.stat.version
                && a.stat.mzxid == b.stat.mzxid
        }
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cache::view::CachedNode;
    use zookeeper_tokio::Stat;

    pub fn node(czxid: i64, version: i32, mzxid: i64) -> NodeState {
        NodeState::Present(CachedNode {
            data: Some(bytes::Bytes::from(format!("v{version}"))),
            stat: Stat {
                czxid,
                mzxid,
                version,
                ..Stat::default()
            },
        })
    }

    #[test]
    fn counting_follows_versions_and_creations() {
        let base = Expect::of(&node(5, 2, 9));
        let after = base.after(Kind::Changed, true).unwrap();
        assert!(after.admits(&node(5, 3, 12)));
        assert!(!after.admits(&node(5, 4, 13)), "two changes, one event");
        assert!(!after.admits(&node(6, 3, 13)), "another node");
        let deleted = after.after(Kind::Deleted, true).unwrap();
        assert!(deleted.admits(&NodeState::Absent));
        let created = deleted.after(Kind::Created, true).unwrap();
        assert!(created.admits(&node(20, 0, 20)));
        assert!(!created.admits(&node(20, 1, 21)));
        assert!(!created.admits(&NodeState::Absent));
    }

    #[test]
    fn impossible_sequences_are_anomalies() {
        assert_eq!(Expect::Absent.after(Kind::Changed, true), None);
        assert_eq!(Expect::Absent.after(Kind::Deleted, true), None);
        assert_eq!(Expect::of(&node(1, 0, 1)).after(Kind::Created, true), None);
        // Out of order, anything goes.
        assert_eq!(
            Expect::Absent.after(Kind::Changed, false),
            Some(Expect::Unknown)
        );
        assert_eq!(
            Expect::Unknown.after(Kind::Deleted, false),
            Some(Expect::Absent)
        );
    }

    #[test]
    fn versions_wrap_as_the_server_wraps_them() {
        let e = Expect::of(&node(1, i32::MAX, 1)).after(Kind::Changed, true);
        assert!(e.unwrap().admits(&node(1, i32::MIN, 2)));
    }
}
