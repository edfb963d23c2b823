//! What persistent watches know, against a model of the server's tree, over many random
//! histories: while connected every change arrives as an event and nothing is reported missed;
//! after changes made while cut off, one read (a node) or walk (a subtree) reports exactly the
//! coalesced difference, in an order the server could have produced, and leaves what is known
//! equal to the tree.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use zookeeper_jute::{EventType, Stat};

use crate::session::watch_memo::{Missed, NodeState, SubtreeCache};

const ROOT: &str = "/r";

/// A node of the model: creation zxid, data and child versions, and the zxids of the last
/// data and child changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    czxid: i64,
    version: i32,
    cversion: i32,
    mzxid: i64,
    pzxid: i64,
}

impl Node {
    fn created(zxid: i64) -> Node {
        Node {
            czxid: zxid,
            version: 0,
            cversion: 0,
            mzxid: zxid,
            pzxid: zxid,
        }
    }
}

/// The server's tree under the root (root included), and its zxid counter.
#[derive(Clone, Debug)]
struct Tree {
    nodes: BTreeMap<String, Node>,
    zxid: i64,
}

/// xorshift64*: small, deterministic, good enough to pick operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn children_of(nodes: &BTreeMap<String, Node>, path: &str) -> Vec<String> {
    let prefix = format!("{path}/");
    nodes
        .keys()
        .filter(|p| p.starts_with(&prefix) && !p[prefix.len()..].contains('/'))
        .map(|p| p[prefix.len()..].to_string())
        .collect()
}

impl Tree {
    fn new() -> Tree {
        let mut nodes = BTreeMap::new();
        nodes.insert(ROOT.to_string(), Node::created(1));
        Tree { nodes, zxid: 1 }
    }

    /// Applies one random change; returns the event a recursive watch on the root gets.
    fn change(&mut self, rng: &mut Rng) -> (EventType, String) {
        self.zxid += 1;
        let paths: Vec<String> = self.nodes.keys().cloned().collect();
        loop {
            let path = &paths[rng.below(paths.len())];
            match rng.below(3) {
                // Few names, so that nodes are often deleted and created again.
                0 if path.matches('/').count() < 4 => {
                    let name = ["a", "b", "c"][rng.below(3)];
                    let child = format!("{path}/{name}");
                    if !self.nodes.contains_key(&child) {
                        self.nodes.insert(child.clone(), Node::created(self.zxid));
                        let parent = self.nodes.get_mut(path).unwrap();
                        parent.cversion += 1;
                        parent.pzxid = self.zxid;
                        return (EventType::NodeCreated, child);
                    }
                }
                1 if path != ROOT && children_of(&self.nodes, path).is_empty() => {
                    self.nodes.remove(path);
                    let parent = self
                        .nodes
                        .get_mut(&path[..path.rfind('/').unwrap()])
                        .unwrap();
                    parent.cversion += 1;
                    parent.pzxid = self.zxid;
                    return (EventType::NodeDeleted, path.clone());
                }
                2 => {
                    let node = self.nodes.get_mut(path).unwrap();
                    node.version += 1;
                    node.mzxid = self.zxid;
                    return (EventType::NodeDataChanged, path.clone());
                }
                _ => {}
            }
        }
    }

    fn stat(&self, path: &str) -> Option<Stat> {
        self.nodes.get(path).map(|n| Stat {
            czxid: n.czxid,
            version: n.version,
            cversion: n.cversion,
            mzxid: n.mzxid,
            pzxid: n.pzxid,
            ..Stat::default()
        })
    }
}

/// One walk of the cache over the tree, in the order the session sends listings.
fn walk(cache: &mut SubtreeCache, tree: &Tree) -> Vec<Missed> {
    walk_from(cache, tree, tree.zxid)
}

/// [`walk`] begun when the last zxid the session had seen was `seen_through`.
fn walk_from(cache: &mut SubtreeCache, tree: &Tree, seen_through: i64) -> Vec<Missed> {
    let mut missed = vec![];
    let mut queue = VecDeque::from([ROOT.to_string()]);
    cache.walk_started(seen_through);
    while let Some(path) = queue.pop_front() {
        let children = children_of(&tree.nodes, &path);
        let stat = tree.stat(&path);
        let (m, visit) = cache.on_listing(&path, stat.as_ref().map(|s| (&children[..], s)));
        missed.extend(m);
        queue.extend(visit);
    }
    assert!(!cache.is_walking());
    missed
}

/// The reply to the read of a created node, made with the tree as it is now.
fn answer(cache: &mut SubtreeCache, tree: &Tree, path: String) {
    if let Some(stat) = tree.stat(&path) {
        cache.on_stat(&path, &stat);
    }
}

/// What a walk must report after the tree went from `before` to `after` unseen.
fn coalesced_difference(before: &Tree, after: &Tree) -> BTreeSet<(i32, String)> {
    let mut expected = BTreeSet::new();
    let mut add = |t: EventType, p: &str| {
        expected.insert((i32::from(t), p.to_string()));
    };
    for (path, old) in &before.nodes {
        match after.nodes.get(path) {
            None => add(EventType::NodeDeleted, path),
            Some(new) if new.czxid != old.czxid => {
                add(EventType::NodeDeleted, path);
                add(EventType::NodeCreated, path);
            }
            Some(new) if new.version != old.version => add(EventType::NodeDataChanged, path),
            Some(_) => {}
        }
    }
    for path in after.nodes.keys() {
        if !before.nodes.contains_key(path) {
            add(EventType::NodeCreated, path);
        }
    }
    expected
}

/// Deletions come children first and creations parents first, as the server's events do.
fn assert_server_order(missed: &[Missed]) {
    for (i, (t, p)) in missed.iter().enumerate() {
        for (later_t, later_p) in &missed[i + 1..] {
            let below = later_p.starts_with(&format!("{p}/"));
            let above = p.starts_with(&format!("{later_p}/"));
            if *t == EventType::NodeDeleted && *later_t == EventType::NodeDeleted {
                assert!(
                    !below,
                    "{p} deleted before its descendant {later_p}: {missed:?}"
                );
            }
            if *t == EventType::NodeCreated && *later_t == EventType::NodeCreated {
                assert!(
                    !above,
                    "{p} created before its ancestor {later_p}: {missed:?}"
                );
            }
        }
    }
}

fn assert_cache_is(cache: &SubtreeCache, tree: &Tree) {
    let expected: BTreeMap<String, (Option<i64>, Option<i32>)> = tree
        .nodes
        .iter()
        .map(|(p, n)| (p.clone(), (Some(n.czxid), Some(n.version))))
        .collect();
    assert_eq!(cache.snapshot(), expected);
}

#[test]
fn a_walk_reports_exactly_the_changes_made_while_cut_off() {
    for seed in 1..=400u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut tree = Tree::new();
        for _ in 0..rng.below(30) {
            tree.change(&mut rng);
        }
        let mut cache = SubtreeCache::new(ROOT.to_string(), usize::MAX);
        assert_eq!(
            walk(&mut cache, &tree),
            vec![],
            "seed {seed}: the first walk learns"
        );
        assert_cache_is(&cache, &tree);

        // Connected: every change arrives as an event, and none reveals a missed one. Half the
        // seeds play a 3.9 server, whose notifications carry the zxid; for the others a created
        // node is read (in order, a few changes later) to learn its creation zxid.
        let zxid_in_events = seed % 2 == 0;
        let mut reads = VecDeque::new();
        for _ in 0..rng.below(30) {
            let (t, p) = tree.change(&mut rng);
            let zxid = zxid_in_events.then_some(tree.zxid);
            assert_eq!(
                cache.on_event(t, &p, zxid),
                Some(vec![]),
                "seed {seed}: live {t:?} {p}"
            );
            if t == EventType::NodeCreated && cache.needs_czxid(&p) {
                reads.push_back(p);
            }
            while !reads.is_empty() && rng.below(2) == 0 {
                answer(&mut cache, &tree, reads.pop_front().unwrap());
            }
        }
        // Answered before the cut-off: a read lost with the connection leaves its node's
        // creation zxid unknown, and a deletion and creation again of it while cut off unseen.
        for p in reads {
            answer(&mut cache, &tree, p);
        }

        // Cut off: changes happen unseen; the walk after the reconnect reports them.
        let before = tree.clone();
        for _ in 0..rng.below(30) {
            tree.change(&mut rng);
        }
        let missed = walk(&mut cache, &tree);
        assert_server_order(&missed);
        let reported: Vec<(i32, String)> = missed
            .iter()
            .map(|(t, p)| (i32::from(*t), p.clone()))
            .collect();
        let unique: BTreeSet<(i32, String)> = reported.iter().cloned().collect();
        assert_eq!(
            unique.len(),
            reported.len(),
            "seed {seed}: reported twice: {missed:?}"
        );
        assert_eq!(
            unique,
            coalesced_difference(&before, &tree),
            "seed {seed}: {missed:?}"
        );
        // The walk's nodes are now known exactly, so a second walk reports nothing.
        let czxids_known = cache
            .snapshot()
            .values()
            .all(|(c, v)| c.is_some() && v.is_some());
        assert!(czxids_known, "seed {seed}");
        assert_cache_is(&cache, &tree);
        assert_eq!(
            walk(&mut cache, &tree),
            vec![],
            "seed {seed}: nothing twice"
        );
    }
}

/// The events a persistent watch on `path` gets for one change of the tree.
fn node_events(path: &str, change: &(EventType, String)) -> Vec<EventType> {
    let (t, p) = change;
    if p == path {
        vec![*t]
    } else if *t != EventType::NodeDataChanged
        && p.rsplit_once('/').map(|(parent, _)| parent) == Some(path)
    {
        vec![EventType::NodeChildrenChanged]
    } else {
        vec![]
    }
}

#[test]
fn a_read_reports_exactly_the_changes_of_a_node_made_while_cut_off() {
    // The watched node is a child of the root, so that it is deleted and created again often.
    let watched = "/r/a";
    for seed in 1..=400u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut tree = Tree::new();
        for _ in 0..rng.below(20) {
            tree.change(&mut rng);
        }
        let mut node = NodeState::Unknown;
        assert_eq!(node.on_read(tree.stat(watched).as_ref()), vec![]);

        let zxid_in_events = seed % 2 == 0;
        let mut reads = 0;
        for _ in 0..rng.below(30) {
            let change = tree.change(&mut rng);
            for t in node_events(watched, &change) {
                let zxid = zxid_in_events.then_some(tree.zxid);
                assert_eq!(node.on_event(t, zxid), None, "seed {seed}: live {t:?}");
                if t == EventType::NodeCreated && node.needs_czxid() {
                    reads += 1;
                }
            }
            if reads > 0 && rng.below(2) == 0 {
                reads = 0;
                assert_eq!(node.on_read(tree.stat(watched).as_ref()), vec![]);
            }
        }
        if reads > 0 {
            assert_eq!(node.on_read(tree.stat(watched).as_ref()), vec![]);
        }

        let before = tree.stat(watched);
        for _ in 0..rng.below(20) {
            tree.change(&mut rng);
        }
        let after = tree.stat(watched);
        let expected = match (&before, &after) {
            (None, None) => vec![],
            (None, Some(_)) => vec![EventType::NodeCreated],
            (Some(_), None) => vec![EventType::NodeDeleted],
            (Some(b), Some(a)) if a.czxid != b.czxid => {
                vec![EventType::NodeDeleted, EventType::NodeCreated]
            }
            (Some(b), Some(a)) => {
                let mut e = vec![];
                if a.version != b.version {
                    e.push(EventType::NodeDataChanged);
                }
                if a.cversion != b.cversion {
                    e.push(EventType::NodeChildrenChanged);
                }
                e
            }
        };
        assert_eq!(node.on_read(after.as_ref()), expected, "seed {seed}");
        assert_eq!(
            node.on_read(after.as_ref()),
            vec![],
            "seed {seed}: nothing twice"
        );
    }
}

/// Whether `missed` reports `change` (a change of the coalesced difference) or, once the
/// cache folded, something a consumer must take for it: a deleted node by its creation again,
/// or by a change of the children of an ancestor still there.
fn covered(missed: &BTreeSet<(i32, String)>, change: &(i32, String), after: &Tree) -> bool {
    if missed.contains(change) {
        return true;
    }
    let (t, path) = change;
    if *t != i32::from(EventType::NodeDeleted) {
        return false;
    }
    if missed.contains(&(i32::from(EventType::NodeCreated), path.clone())) {
        return true;
    }
    let mut ancestor = path.as_str();
    while let Some((parent, _)) = ancestor.rsplit_once('/') {
        if after.nodes.contains_key(parent) {
            let children_changed = (
                i32::from(EventType::NodeChildrenChanged),
                parent.to_string(),
            );
            let recreated = (i32::from(EventType::NodeCreated), parent.to_string());
            return missed.contains(&children_changed) || missed.contains(&recreated);
        }
        ancestor = parent;
    }
    false
}

/// With a bound far smaller than the tree, the cache folds: what it holds stays within the
/// bound, and a walk after changes made while cut off reports every one of them, by zxid, from
/// the last zxid seen before the loss (which live changes after it make report again).
#[test]
fn a_folded_cache_loses_no_change_made_while_cut_off() {
    let max_bytes = 4 * (2 * "/r/a/b/c".len() + 160);
    let mut folded = 0;
    for seed in 1..=400u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut tree = Tree::new();
        for _ in 0..rng.below(30) {
            tree.change(&mut rng);
        }
        let mut cache = SubtreeCache::new(ROOT.to_string(), max_bytes);
        assert_eq!(
            walk(&mut cache, &tree),
            vec![],
            "seed {seed}: the first walk learns"
        );

        // The last reply before the loss came after some of the live changes.
        let mut seen_through = tree.zxid;
        for _ in 0..rng.below(30) {
            let (t, p) = tree.change(&mut rng);
            cache.on_event(t, &p, None);
            if let Some(stat) = tree.stat(&p).filter(|_| cache.needs_czxid(&p)) {
                cache.on_stat(&p, &stat);
            }
            if rng.below(3) == 0 {
                seen_through = tree.zxid;
            }
            assert!(cache.len() <= 4, "seed {seed}: {} nodes", cache.len());
        }

        let before = tree.clone();
        for _ in 0..rng.below(30) {
            tree.change(&mut rng);
        }
        let missed = walk_from(&mut cache, &tree, seen_through);
        let reported: BTreeSet<(i32, String)> = missed
            .iter()
            .map(|(t, p)| (i32::from(*t), p.clone()))
            .collect();
        let expected = coalesced_difference(&before, &tree);
        if !cache.is_folded() {
            assert_eq!(reported, expected, "seed {seed}: {missed:?}");
            continue;
        }
        folded += 1;
        for change in &expected {
            assert!(
                covered(&reported, change, &tree),
                "seed {seed}: {change:?} not reported: {missed:?}"
            );
        }
        assert!(cache.len() <= 4, "seed {seed}: {} nodes", cache.len());
    }
    assert!(folded > 200, "only {folded} histories folded");
}
