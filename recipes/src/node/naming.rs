//! Child-node names of every recipe, and the order of contenders.
//!
//! Every contender is an `EPHEMERAL_SEQUENTIAL` child whose name is `<prefix><marker><sequence>`:
//!
//! | Layout | Name |
//! |---|---|
//! | Curator | `_c_<uuid, 36 chars with dashes>-<marker><seq>`, marker `lock-`, `__READ__`, `__WRIT__`, `latch-` or `lease-` |
//! | kazoo | `<uuid, 32 hex chars><marker><seq>`, marker `__lock__` (writers, mutexes) or `__rlock__` (readers) |
//!
//! The prefix carries a fresh GUID per attempt, so a create whose reply was lost can be
//! found again by listing the parent (see `protection`).
//!
//! # Order: exactly the peer's
//!
//! Two contenders that disagree on the order can both believe they are first, so each layout
//! orders a listing exactly as its peer does, down to which children count:
//!
//! * **Curator** (`LockInternals.getSortedChildren`, `StandardLockInternalsDriver`,
//!   `InterProcessReadWriteLock.SortingLockInternalsDriver`, `LeaderLatch`): *every* child of
//!   the path takes part, keyed by the text after the last marker (the whole name when there
//!   is none; the read-write lock strips `__READ__`, then `__WRIT__`), compared as Java
//!   strings (UTF-16 code units), in a stable sort of the listing.
//! * **kazoo** (`kazoo/recipe/lock.py`, the 2.9 rule): only children matching
//!   `(?:<markers>)(-?\d{10})$`, keyed by the captured sequence text, compared as Python
//!   strings; a contender is blocked only by those whose key is strictly below its own.
//!   (Python's `\d` also matches non-ASCII decimal digits; no server writes those, and here
//!   only ASCII digits count.)
//!
//! # Sequence wrap-around
//!
//! The server writes the sequence as the parent's `cversion` with `%010d`; after 2^31
//! creations under one parent it wraps to `-2147483648` (a ZooKeeper 3.5+ server mostly hands
//! out `2147483647` again instead: it keeps the larger count, so names repeat that number and
//! differ only by their GUID, which breaks both peers' orders as surely; so that last number
//! counts as wrapped here too, and a create a server answers before committing the previous
//! one still gets the negative). Both peers compare the text, and `-`
//! sorts before `0`: every wrapped name sorts *first* (and among the 11-character negatives
//! the later one first), so each newcomer sees itself ahead of the holder and takes the lock
//! beside it. kazoo's pattern does not even match the 10-character negatives
//! (`-999999999` ... `-000000001`): those contenders are invisible to it. No order chosen on
//! our side can fix that for the peers, and a different order than theirs makes two holders
//! by itself; so we keep their order and **refuse to grant** on a listing where any
//! contender's sequence (ours included) carries a `-`: the acquisition fails with
//! [`Error::SequenceWrapped`](crate::Error::SequenceWrapped) and deletes its node, and a
//! leader latch ends with [`LossReason::SequenceWrapped`](crate::LossReason::SequenceWrapped).
//! The path is usable again once the counter restarts: for Curator's layout when the server
//! removes the empty container parent (it does so by itself once every contender left); for
//! kazoo's, whose parents are persistent, once someone deletes the empty parent
//! ([`recycle_idle_parent`](crate::recycle_idle_parent) does it safely, ahead of the wrap:
//! see `sequence_wrap`).

use std::cmp::Ordering;

use uuid::Uuid;
use zookeeper_tokio::Client;

/// Which peer's node layout a recipe writes and reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Apache Curator's layout (`_c_<uuid>-lock-<seq>`): interoperates with
    /// `InterProcessMutex`, `InterProcessReadWriteLock`, `LeaderLatch` and
    /// `InterProcessSemaphoreV2`.
    #[default]
    Curator,
    /// kazoo's layout (`<hex uuid>__lock__<seq>`, readers `<hex uuid>__rlock__<seq>`):
    /// interoperates with kazoo's `Lock`, `ReadLock` and `WriteLock`.
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
/// Marker of a kazoo lock node (`Lock`, `WriteLock`).
pub(crate) const KAZOO_LOCK: &str = "__lock__";
/// Marker of a kazoo read-lock node (`ReadLock`).
pub(crate) const KAZOO_READ: &str = "__rlock__";

/// The name prefix of one attempt: the layout's GUID part followed by the marker. The server
/// appends the sequence. The GUID is drawn from `client`'s seeded source, so that a simulated
/// run names its nodes the same way each time.
pub(crate) fn attempt_prefix(client: &Client, layout: Layout, marker: &str) -> String {
    prefix_with(
        guid(client.random_u64(), client.random_u64()),
        layout,
        marker,
    )
}

fn prefix_with(guid: Uuid, layout: Layout, marker: &str) -> String {
    match layout {
        Layout::Curator => format!("_c_{}-{}", guid.hyphenated(), marker),
        Layout::Kazoo => format!("{}{}", guid.simple(), marker),
    }
}

/// A version 4 GUID made of two random draws.
pub(crate) fn guid(high: u64, low: u64) -> Uuid {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&high.to_le_bytes());
    bytes[8..].copy_from_slice(&low.to_le_bytes());
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// One contender found in a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Contender {
    /// The child's name (no parent path).
    pub name: String,
    /// Index into the marker list the listing was ordered with: the kind of contender
    /// (reader, writer); `None` for a child without a marker, which Curator still counts.
    pub kind: Option<usize>,
}

/// A listing in the peer's order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Queue {
    /// The contenders, first first.
    pub contenders: Vec<Contender>,
    /// A child whose sequence wrapped past 2^31, if any: the peers' order is broken.
    pub wrapped: Option<String>,
}

/// Orders `children` as `layout`'s peer does with `markers` (the kinds a recipe tells
/// apart, in the order Curator strips them). `ours`, when given, is placed before any child
/// with an equal key, so that only keys strictly below ours come before it (kazoo's rule).
pub(crate) fn peer_queue(
    layout: Layout,
    children: &[String],
    markers: &[&str],
    ours: Option<&str>,
) -> Queue {
    let wrapped = children
        .iter()
        .find(|c| wrapped_sequence(c, markers))
        .cloned();
    let contenders = match layout {
        Layout::Curator => {
            let mut keyed: Vec<(JavaKey, &String)> = children
                .iter()
                .map(|c| (JavaKey::new(curator_key(c, markers)), c))
                .collect();
            // Stable, as Java's `Collections.sort`: equal keys keep the listing's order.
            keyed.sort_by(|a, b| a.0.cmp(&b.0));
            keyed
                .into_iter()
                .map(|(_, name)| Contender {
                    name: name.clone(),
                    kind: curator_kind(name, markers),
                })
                .collect()
        }
        Layout::Kazoo => {
            let mut keyed: Vec<(&str, usize, &String)> = children
                .iter()
                .filter_map(|c| kazoo_match(c, markers).map(|(kind, key)| (key, kind, c)))
                .collect();
            keyed.sort_by(|a, b| {
                a.0.cmp(b.0).then_with(|| {
                    // Ours first among equal keys: only strictly lower keys block it.
                    let (a_ours, b_ours) = (Some(a.2.as_str()) == ours, Some(b.2.as_str()) == ours);
                    b_ours.cmp(&a_ours)
                })
            });
            keyed
                .into_iter()
                .map(|(_, kind, name)| Contender {
                    name: name.clone(),
                    kind: Some(kind),
                })
                .collect()
        }
    };
    Queue {
        contenders,
        wrapped,
    }
}

/// Curator's sort key (`fixForSorting`, applied for each marker in turn): the text after the
/// last occurrence of the marker, or the whole name when it has none.
fn curator_key<'a>(name: &'a str, markers: &[&str]) -> &'a str {
    markers
        .iter()
        .fold(name, |key, marker| match key.rfind(marker) {
            Some(at) => &key[at + marker.len()..],
            None => key,
        })
}

/// The kind Curator gives a child: the last of `markers` it contains (a read-write lock
/// tells a writer by `__WRIT__` anywhere in the name).
fn curator_kind(name: &str, markers: &[&str]) -> Option<usize> {
    (0..markers.len())
        .rev()
        .find(|&i| name.contains(markers[i]))
}

/// `String.compareTo`: UTF-16 code units in order (the same as bytes for ASCII names).
fn java_order(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// A sort key compared as Java compares strings, cheaply when it is ASCII (as every name the
/// peers make is): UTF-8 bytes and UTF-16 units only order differently between a character
/// above U+FFFF and one in U+E000..=U+FFFF.
#[derive(PartialEq, Eq)]
struct JavaKey<'a> {
    text: &'a str,
    ascii: bool,
}

impl<'a> JavaKey<'a> {
    fn new(text: &'a str) -> Self {
        JavaKey {
            text,
            ascii: text.is_ascii(),
        }
    }
}

impl Ord for JavaKey<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        if self.ascii && other.ascii {
            self.text.cmp(other.text)
        } else {
            java_order(self.text, other.text)
        }
    }
}

impl PartialOrd for JavaKey<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// kazoo's `re.search("(?:m1|m2...)(-?\d{10})$", name)`: the marker matched and the
/// captured sequence text. Python's `$` also matches before one final newline.
fn kazoo_match<'a>(name: &'a str, markers: &[&str]) -> Option<(usize, &'a str)> {
    let body = name.strip_suffix('\n').unwrap_or(name);
    let bytes = body.as_bytes();
    if bytes.len() < 10 || !bytes[bytes.len() - 10..].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let digits_at = bytes.len() - 10;
    // With the sign first: the regex finds the leftmost match, which starts earlier.
    let signed_at = digits_at.checked_sub(1).filter(|&at| bytes[at] == b'-');
    for start in signed_at.into_iter().chain([digits_at]) {
        let before = &body[..start];
        if let Some(kind) = markers.iter().position(|m| before.ends_with(m)) {
            return Some((kind, &body[start..]));
        }
    }
    None
}

/// The last sequence a parent's counter hands out before it wraps. A ZooKeeper 3.5+ server
/// hands it out again and again afterwards (its `DataTree.createNode` keeps the larger of the
/// parent's old and new `cversion`, and the wrapped one is smaller): names then differ only
/// by their GUID, and the peers order those by the listing's order or let each newcomer pass.
const EXHAUSTED_SEQUENCE: &str = "2147483647";

/// Whether `name` is a contender of `markers` whose sequence wrapped: the text after its
/// last marker is `-` and digits, or the counter's last value, which a server may repeat.
/// Checked whatever the layout, so that kazoo's invisible 10-character negatives are caught
/// too.
fn wrapped_sequence(name: &str, markers: &[&str]) -> bool {
    let after = markers
        .iter()
        .filter_map(|m| name.rfind(m).map(|at| at + m.len()))
        .max();
    after.is_some_and(|at| {
        let sequence = &name[at..];
        sequence == EXHAUSTED_SEQUENCE
            || sequence
                .strip_prefix('-')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The sequence a child name ends with (after its last marker), as the server wrote it.
pub(crate) fn sequence_of(name: &str, markers: &[&str]) -> Option<i32> {
    let after = markers
        .iter()
        .filter_map(|m| name.rfind(m).map(|at| at + m.len()))
        .max()?;
    parse_sequence(&name[after..])
}

/// Parses the server's `%010d` sequence text: an optional minus sign, then digits only.
pub(crate) fn parse_sequence(text: &str) -> Option<i32> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i32>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(q: Queue) -> Vec<String> {
        q.contenders.into_iter().map(|c| c.name).collect()
    }

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn curator_prefix_has_uuid_and_marker() {
        let p = prefix_with(guid(1, 2), Layout::Curator, CURATOR_LOCK);
        assert!(p.starts_with("_c_"));
        assert!(p.ends_with("-lock-"));
        assert_eq!(p.len(), 3 + 36 + 1 + 5);
        let uuid = &p[3..39];
        assert!(Uuid::parse_str(uuid).is_ok());
    }

    #[test]
    fn kazoo_prefix_is_hex_then_marker() {
        let p = prefix_with(guid(3, 4), Layout::Kazoo, KAZOO_LOCK);
        assert_eq!(p.len(), 32 + 8);
        assert!(p[..32].bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(p.ends_with("__lock__"));
    }

    #[test]
    fn attempts_get_fresh_guids() {
        assert_ne!(
            prefix_with(guid(1, 2), Layout::Curator, CURATOR_LOCK),
            prefix_with(guid(1, 3), Layout::Curator, CURATOR_LOCK)
        );
    }

    #[test]
    fn curator_orders_every_child_by_the_text_after_the_last_marker() {
        let children = list(&[
            "_c_a-lock-0000000002",
            "zzz",
            "0123456789abcdef0123456789abcdef__lock__0000000001",
            "_c_b-lock-0000000001",
            "0000000000",
        ]);
        let q = peer_queue(Layout::Curator, &children, &[CURATOR_LOCK], None);
        // Foreign children take part by their whole name, as in Curator.
        assert_eq!(
            names(q),
            [
                "0000000000",
                "_c_b-lock-0000000001",
                "_c_a-lock-0000000002",
                "0123456789abcdef0123456789abcdef__lock__0000000001",
                "zzz",
            ]
        );
    }

    #[test]
    fn curator_read_write_keys_strip_read_then_write() {
        let markers = [CURATOR_READ, CURATOR_WRITE];
        assert_eq!(
            curator_key("_c_x-__READ__0000000003", &markers),
            "0000000003"
        );
        assert_eq!(
            curator_key("_c_x-__WRIT__0000000004", &markers),
            "0000000004"
        );
        assert_eq!(curator_kind("_c_x-__READ__0000000003", &markers), Some(0));
        assert_eq!(curator_kind("_c_x-__WRIT__0000000004", &markers), Some(1));
        assert_eq!(curator_kind("other", &markers), None);
        // A GUID-free name that contains the marker twice: the key follows the last one.
        assert_eq!(
            curator_key("lock-lock-0000000009", &[CURATOR_LOCK]),
            "0000000009"
        );
    }

    #[test]
    fn curator_compares_utf16_code_units_like_java() {
        // U+FF61 is one UTF-16 unit above the surrogates that encode U+1F600: Java puts the
        // emoji first, byte order (UTF-8) would not.
        assert_eq!(java_order("\u{1F600}", "\u{FF61}"), Ordering::Less);
        assert_eq!("\u{1F600}".cmp("\u{FF61}"), Ordering::Greater);
        assert_eq!(
            JavaKey::new("\u{1F600}").cmp(&JavaKey::new("\u{FF61}")),
            Ordering::Less
        );
        assert_eq!(
            JavaKey::new("0000000010").cmp(&JavaKey::new("0000000009")),
            Ordering::Greater
        );
    }

    #[test]
    fn kazoo_matches_its_pattern_only() {
        let m = [KAZOO_LOCK, KAZOO_READ];
        assert_eq!(
            kazoo_match("abc__lock__0000000007", &m),
            Some((0, "0000000007"))
        );
        assert_eq!(
            kazoo_match("abc__rlock__0000000007", &m),
            Some((1, "0000000007"))
        );
        assert_eq!(
            kazoo_match("abc__lock__-2147483648", &m),
            Some((0, "-2147483648"))
        );
        // Ten characters with the sign: not ten digits, invisible to kazoo.
        assert_eq!(kazoo_match("abc__lock__-999999999", &m), None);
        assert_eq!(kazoo_match("abc__lock__00000000071", &m), None);
        assert_eq!(kazoo_match("_c_x-lock-0000000007", &m), None);
        assert_eq!(
            kazoo_match("abc__lock__0000000007\n", &m),
            Some((0, "0000000007"))
        );
        // A reader's name is not a `Lock` contender.
        assert_eq!(kazoo_match("abc__rlock__0000000007", &[KAZOO_LOCK]), None);
    }

    #[test]
    fn kazoo_orders_matching_children_by_sequence_text_ours_first_among_equals() {
        let children = list(&[
            "b__lock__0000000002",
            "junk",
            "a__lock__0000000001",
            "c__lock__0000000002",
        ]);
        let q = peer_queue(
            Layout::Kazoo,
            &children,
            &[KAZOO_LOCK],
            Some("c__lock__0000000002"),
        );
        assert_eq!(
            names(q),
            [
                "a__lock__0000000001",
                "c__lock__0000000002",
                "b__lock__0000000002"
            ]
        );
    }

    #[test]
    fn wrapped_sequences_are_reported() {
        let m = [CURATOR_LOCK];
        for (name, wrapped) in [
            ("_c_x-lock--2147483648", true),
            ("_c_x-lock--000000001", true),
            ("_c_x-lock-2147483646", false),
            ("_c_x-lock-2147483647", true),
            ("-000000001", false),
            ("_c_x-lock-", false),
        ] {
            assert_eq!(wrapped_sequence(name, &m), wrapped, "{name}");
        }
        assert!(wrapped_sequence("abc__lock__-999999999", &[KAZOO_LOCK]));
        let children = list(&["_c_a-lock-2147483646", "_c_b-lock--2147483648"]);
        let q = peer_queue(Layout::Curator, &children, &m, None);
        assert_eq!(q.wrapped.as_deref(), Some("_c_b-lock--2147483648"));
        // The peer's order, wrap and all: the wrapped name sorts first.
        assert_eq!(names(q), ["_c_b-lock--2147483648", "_c_a-lock-2147483646"]);
        // A repeated last number: as broken.
        let children = list(&["_c_a-lock-2147483647", "_c_b-lock-2147483647"]);
        let q = peer_queue(Layout::Curator, &children, &m, None);
        assert_eq!(q.wrapped.as_deref(), Some("_c_a-lock-2147483647"));
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
        assert_eq!(
            sequence_of("_c_x-lock-0000000042", &[CURATOR_LOCK]),
            Some(42)
        );
    }
}
