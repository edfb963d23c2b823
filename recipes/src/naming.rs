//! Child-node names of every recipe, and the order of contenders.
//!
//! Every contender is an `EPHEMERAL_SEQUENTIAL` child whose name is `<prefix><marker><sequence>`:
//!
//! | Layout | Name |
//! |---|---|
//! | Curator | `_c_<uuid, 36 chars with dashes>-<marker><seq>`, marker `lock-`, `__READ__`, `__WRIT__`, `latch-` or `lease-` |
//! | kazoo | `<uuid, 32 hex chars><marker><seq>`, marker `__lock__` |
//!
//! The prefix carries a fresh GUID per attempt, so a create whose reply was lost can be
//! found again by listing the parent (see `protection`).
//!
//! # Order, and sequence wrap-around
//!
//! The server writes the sequence as the parent's `cversion` with `%010d`; after 2^31 it
//! wraps to `-2147483648`. Peers compare the text, so a wrapped sequence sorts *first* and a
//! newcomer jumps the queue. Here sequences are points on a circle of 2^32 values: the live
//! children occupy an arc shorter than half the circle (breaking that needs 2^31 creations
//! under the parent while one contender stays alive), so the queue starts right after the
//! widest empty arc. When that arc is not wider than half the circle the names cannot decide,
//! and [`order`] says so; callers then order by `czxid`, which the server assigns in the same
//! order as the sequence.

use uuid::Uuid;

/// Which peer's node layout a recipe writes and reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Apache Curator's layout (`_c_<uuid>-lock-<seq>`): interoperates with
    /// `InterProcessMutex`, `InterProcessReadWriteLock`, `LeaderLatch` and
    /// `InterProcessSemaphoreV2`.
    #[default]
    Curator,
    /// kazoo's layout (`<hex uuid>__lock__<seq>`): interoperates with kazoo's `Lock`.
    Kazoo,
}

/// Marker of a Curator mutex node (also the semaphore's internal mutex).
pub(crate) const CURATOR_LOCK: &str = "lock-";
/// Marker of a Curator read-lock node.
pub(crate) const CURATOR_READ: &str = "__READ__";
/// Marker of a Curator write-lock node.
pub(crate) const CURATOR_WRITE: &str = "__WRIT__";
/// Marker of a Curator leader-latch node.
pub(crate) const CURATOR_LATCH: &str = "latch-";
/// Marker of a Curator semaphore lease node.
pub(crate) const CURATOR_LEASE: &str = "lease-";
/// Marker of a kazoo lock node.
pub(crate) const KAZOO_LOCK: &str = "__lock__";

/// The name prefix of one attempt: the layout's GUID part followed by the marker. The server
/// appends the sequence.
pub(crate) fn attempt_prefix(layout: Layout, marker: &str) -> String {
    let guid = Uuid::new_v4();
    match layout {
        Layout::Curator => format!("_c_{}-{}", guid.hyphenated(), marker),
        Layout::Kazoo => format!("{}{}", guid.simple(), marker),
    }
}

/// One contender found in a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Contender {
    /// The child's name (no parent path).
    pub name: String,
    /// Index into the marker list the listing was parsed with.
    pub kind: usize,
    /// The sequence number the server appended.
    pub seq: i32,
}

/// Parses `name` as a contender of one of `markers`, or `None` for a child of another recipe
/// or another layout. The sequence follows the *last* occurrence of a marker, as Curator reads it.
pub(crate) fn parse_child(name: &str, markers: &[&str]) -> Option<Contender> {
    let mut best: Option<(usize, usize)> = None; // (position after marker, kind)
    for (kind, marker) in markers.iter().enumerate() {
        if let Some(at) = name.rfind(marker) {
            let end = at + marker.len();
            match best {
                Some((b, _)) if b >= end => {}
                _ => best = Some((end, kind)),
            }
        }
    }
    let (end, kind) = best?;
    let seq = parse_sequence(&name[end..])?;
    Some(Contender {
        name: name.to_owned(),
        kind,
        seq,
    })
}

/// Parses the server's `%010d` sequence text: an optional minus sign, then digits only.
pub(crate) fn parse_sequence(text: &str) -> Option<i32> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i32>().ok()
}

/// Parses and orders a listing. Children of other recipes or layouts are left out.
pub(crate) fn contenders(children: &[String], markers: &[&str]) -> Ordered {
    let parsed: Vec<Contender> = children
        .iter()
        .filter_map(|c| parse_child(c, markers))
        .collect();
    order(parsed)
}

/// The result of ordering a listing by sequence.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ordered {
    /// The queue, first contender first.
    Queue(Vec<Contender>),
    /// The sequences span half the circle or more: order these by `czxid` instead.
    NeedsCzxid(Vec<Contender>),
}

/// Orders contenders by sequence on the 2^32 circle (see the module docs).
pub(crate) fn order(mut items: Vec<Contender>) -> Ordered {
    items.sort_by_key(|c| c.seq);
    if items.len() < 2 {
        return Ordered::Queue(items);
    }
    // Widest empty arc between neighbours; the arc from the largest value back round to the
    // smallest is the usual winner, and then the plain numeric order is the queue.
    let n = items.len();
    let mut widest = (items[0].seq as u32).wrapping_sub(items[n - 1].seq as u32);
    let mut start = 0;
    for i in 1..n {
        let gap = (items[i].seq as u32).wrapping_sub(items[i - 1].seq as u32);
        if gap > widest {
            widest = gap;
            start = i;
        }
    }
    if widest <= 1 << 31 {
        return Ordered::NeedsCzxid(items);
    }
    items.rotate_left(start);
    Ordered::Queue(items)
}

/// The last path segment: the child's name.
pub(crate) fn child_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Joins a parent path and a child name.
pub(crate) fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, seq: i32) -> Contender {
        Contender {
            name: name.into(),
            kind: 0,
            seq,
        }
    }

    fn names(o: Ordered) -> Vec<String> {
        match o {
            Ordered::Queue(v) => v.into_iter().map(|c| c.name).collect(),
            Ordered::NeedsCzxid(_) => panic!("expected a decided order"),
        }
    }

    #[test]
    fn curator_prefix_has_uuid_and_marker() {
        let p = attempt_prefix(Layout::Curator, CURATOR_LOCK);
        assert!(p.starts_with("_c_"));
        assert!(p.ends_with("-lock-"));
        assert_eq!(p.len(), 3 + 36 + 1 + 5);
        let uuid = &p[3..39];
        assert!(Uuid::parse_str(uuid).is_ok());
    }

    #[test]
    fn kazoo_prefix_is_hex_then_marker() {
        let p = attempt_prefix(Layout::Kazoo, KAZOO_LOCK);
        assert_eq!(p.len(), 32 + 8);
        assert!(p[..32].bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(p.ends_with("__lock__"));
    }

    #[test]
    fn attempts_get_fresh_guids() {
        assert_ne!(
            attempt_prefix(Layout::Curator, CURATOR_LOCK),
            attempt_prefix(Layout::Curator, CURATOR_LOCK)
        );
    }

    #[test]
    fn parses_curator_and_kazoo_names() {
        let cur = "_c_0f8e1a52-7f7b-4c84-9d8e-1c2a3b4c5d6e-lock-0000000042";
        assert_eq!(parse_child(cur, &[CURATOR_LOCK]).unwrap().seq, 42);
        let kaz = "0123456789abcdef0123456789abcdef__lock__0000000007";
        assert_eq!(parse_child(kaz, &[KAZOO_LOCK]).unwrap().seq, 7);
        // A kazoo child is not a Curator contender and vice versa.
        assert!(parse_child(kaz, &[CURATOR_LOCK]).is_none());
        assert!(parse_child(cur, &[KAZOO_LOCK]).is_none());
        // Plain children of the lock path are ignored.
        assert!(parse_child("locks", &[CURATOR_LOCK]).is_none());
        assert!(parse_child("lock-", &[CURATOR_LOCK]).is_none());
        assert!(parse_child("lock-12a", &[CURATOR_LOCK]).is_none());
    }

    #[test]
    fn parses_read_write_kinds() {
        let markers = [CURATOR_READ, CURATOR_WRITE];
        let r = parse_child("_c_x-__READ__0000000003", &markers).unwrap();
        let w = parse_child("_c_x-__WRIT__0000000004", &markers).unwrap();
        assert_eq!((r.kind, r.seq), (0, 3));
        assert_eq!((w.kind, w.seq), (1, 4));
    }

    #[test]
    fn last_marker_wins_like_curator() {
        // A GUID-free name that contains the marker twice: the sequence follows the last one.
        let p = parse_child("lock-lock-0000000009", &[CURATOR_LOCK]).unwrap();
        assert_eq!(p.seq, 9);
    }

    #[test]
    fn parses_negative_sequences_as_the_server_writes_them() {
        assert_eq!(parse_sequence("-2147483648"), Some(i32::MIN));
        assert_eq!(parse_sequence("-000000005"), Some(-5));
        assert_eq!(parse_sequence("2147483647"), Some(i32::MAX));
        assert_eq!(parse_sequence("2147483648"), None);
        assert_eq!(parse_sequence("+000000001"), None);
        assert_eq!(parse_sequence("-"), None);
        assert_eq!(parse_sequence(""), None);
    }

    #[test]
    fn orders_by_number_not_text() {
        let v = vec![c("b", 10), c("a", 9), c("c", 100)];
        assert_eq!(names(order(v)), ["a", "b", "c"]);
    }

    #[test]
    fn wrapped_sequences_sort_after_the_pre_wrap_ones() {
        let v = vec![
            c("wrapped2", i32::MIN + 1),
            c("old", i32::MAX - 1),
            c("wrapped1", i32::MIN),
            c("older", i32::MAX - 5),
            c("last", i32::MAX),
        ];
        assert_eq!(
            names(order(v)),
            ["older", "old", "last", "wrapped1", "wrapped2"]
        );
    }

    #[test]
    fn negative_to_positive_crossing_is_plain_order() {
        let v = vec![c("b", 1), c("a", -1), c("z", 0)];
        assert_eq!(names(order(v)), ["a", "z", "b"]);
    }

    #[test]
    fn half_circle_span_is_undecidable_from_names() {
        let v = vec![c("a", 0), c("b", i32::MIN)];
        assert!(matches!(order(v), Ordered::NeedsCzxid(_)));
        let v = vec![
            c("a", 0),
            c("b", 1 << 30),
            c("c", i32::MIN),
            c("d", -(1 << 30)),
        ];
        assert!(matches!(order(v), Ordered::NeedsCzxid(_)));
    }

    #[test]
    fn single_and_empty_listings() {
        assert_eq!(names(order(vec![])), Vec::<String>::new());
        assert_eq!(names(order(vec![c("x", i32::MIN)])), ["x"]);
    }

    #[test]
    fn contenders_filters_foreign_children() {
        let children: Vec<String> = [
            "_c_a-lock-0000000002",
            "junk",
            "0123456789abcdef0123456789abcdef__lock__0000000001",
            "_c_b-lock-0000000001",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let o = contenders(&children, &[CURATOR_LOCK]);
        assert_eq!(names(o), ["_c_b-lock-0000000001", "_c_a-lock-0000000002"]);
    }

    #[test]
    fn paths() {
        assert_eq!(child_name("/a/b/c-0001"), "c-0001");
        assert_eq!(join("/", "x"), "/x");
        assert_eq!(join("/a", "x"), "/a/x");
    }
}
