//! Every recipe's rule, as the contention core applies it, checked against a model of the peers
//! over random queues.
//!
//! For random listings (contenders of every kind of both layouts, foreign and hand-made
//! children, sequences anywhere up to and past the wrap, in the server's arbitrary listing
//! order), the core's answers for each of our nodes must be the model's: blocked or granted,
//! which node to watch, and whether that node's deletion alone is the grant. The model uses
//! nothing of `naming` or `rule`; it is written from the peers' source:
//!
//! * Curator (`LockInternals.getSortedChildren`, `StandardLockInternalsDriver`,
//!   `InterProcessReadWriteLock`, `LeaderLatch`): every child, a stable sort by
//!   `fixForSorting` (the text after the last lock name; the read-write lock strips `__READ__`
//!   then `__WRIT__`) compared as `String.compareTo`. A mutex, a writer and a latch wait for the
//!   child just before them; a reader for any child ahead whose name contains `__WRIT__`.
//! * kazoo 2.9 (`Lock._get_predecessor`): children matched by kazoo's own regular expression
//!   over the class's names (`Lock`, `ReadLock`: `__lock__`; `WriteLock`: both), those whose
//!   captured sequence text is below ours, sorted by that text; the last one is watched.
//! * Curator's semaphore (`InterProcessSemaphoreV2`): a lease is granted while the leases
//!   number at most the maximum (a fixed one, or a `SharedCount`'s value, which may be zero or
//!   less); otherwise the listing is watched, and a change of the shared count wakes the
//!   waiter to judge again by the new value (`a_count_change_wakes_the_lease_rule`).
//!
//! Where we deliberately differ the model says so: a reader watches the *nearest* writer ahead
//! (Curator's watches the lowest, waking readers queued behind later writers), and a listing
//! with a wrapped sequence among the lock's contenders is refused (where the peers' order
//! breaks). The deletion answer the model gets by brute force: the listing without the watched
//! node must grant us, and so must it with any contender that can still join (a later sequence,
//! from the next one up to 2^30 creations after ours, past which the counter may wrap).

use regex::Regex;

use crate::contend::{assess, Assessment, Rule, Watch, WholeRule};
use crate::counter::VersionedCount;
use crate::node::naming::{Layout, CURATOR_LATCH, CURATOR_LEASE};
use crate::semaphore::counting::LeaseRoom;

/// `pattern` compiled, once per thread.
fn re(pattern: &str) -> Regex {
    thread_local! {
        static COMPILED: std::cell::RefCell<std::collections::HashMap<String, Regex>> =
            Default::default();
    }
    COMPILED.with(|c| {
        c.borrow_mut()
            .entry(pattern.to_owned())
            .or_insert_with(|| Regex::new(pattern).unwrap())
            .clone()
    })
}

/// A small deterministic generator (xorshift64*), so that a failure names its case.
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

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn hex(&mut self, digits: usize) -> String {
        (0..digits)
            .map(|_| char::from_digit(self.below(16) as u32, 16).unwrap())
            .collect()
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }
}

/// The recipes whose rules the core applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recipe {
    CuratorMutex,
    KazooMutex,
    CuratorReader,
    CuratorWriter,
    KazooReader,
    KazooWriter,
    CuratorLatch,
    /// A semaphore's leases, with this many.
    Leases(usize),
    /// A semaphore's leases, as many as a shared count holding this.
    SharedLeases(i32),
}

const RECIPES: [Recipe; 9] = [
    Recipe::CuratorMutex,
    Recipe::KazooMutex,
    Recipe::CuratorReader,
    Recipe::CuratorWriter,
    Recipe::KazooReader,
    Recipe::KazooWriter,
    Recipe::CuratorLatch,
    Recipe::Leases(0),
    Recipe::SharedLeases(0),
];

impl Recipe {
    fn layout(self) -> Layout {
        match self {
            Recipe::KazooMutex | Recipe::KazooReader | Recipe::KazooWriter => Layout::Kazoo,
            _ => Layout::Curator,
        }
    }

    /// The name our node carries, as the peers write it.
    fn our_name(self) -> &'static str {
        match self {
            Recipe::CuratorMutex => "lock-",
            Recipe::KazooMutex | Recipe::KazooWriter => "__lock__",
            Recipe::CuratorReader => "__READ__",
            Recipe::CuratorWriter => "__WRIT__",
            Recipe::KazooReader => "__rlock__",
            Recipe::CuratorLatch => "latch-",
            Recipe::Leases(_) | Recipe::SharedLeases(_) => "lease-",
        }
    }

    /// The names of every contender of this lock (readers and writers of one read-write lock).
    fn lock_names(self) -> &'static [&'static str] {
        match self {
            Recipe::CuratorMutex => &["lock-"],
            Recipe::KazooMutex => &["__lock__"],
            Recipe::CuratorReader | Recipe::CuratorWriter => &["__READ__", "__WRIT__"],
            Recipe::KazooReader | Recipe::KazooWriter => &["__rlock__", "__lock__"],
            Recipe::CuratorLatch => &["latch-"],
            Recipe::Leases(_) | Recipe::SharedLeases(_) => &["lease-"],
        }
    }

    /// What the core answers, with the rule and the markers the recipe itself hands it.
    fn core(self, children: &[String], ours: &str) -> Answer {
        let layout = self.layout();
        let assessment = match self {
            Recipe::CuratorMutex | Recipe::KazooMutex => assess(
                layout,
                &[crate::lock::mutex::marker(layout)],
                children,
                ours,
                &Rule::Ahead(crate::lock::mutex::RULE),
            ),
            Recipe::CuratorReader | Recipe::KazooReader => assess(
                layout,
                &crate::lock::rwlock::markers(layout),
                children,
                ours,
                &Rule::Ahead(crate::lock::rwlock::READ_RULE),
            ),
            Recipe::CuratorWriter | Recipe::KazooWriter => assess(
                layout,
                &crate::lock::rwlock::markers(layout),
                children,
                ours,
                &Rule::Ahead(crate::lock::rwlock::WRITE_RULE),
            ),
            Recipe::CuratorLatch => assess(
                layout,
                &[CURATOR_LATCH],
                children,
                ours,
                &Rule::Ahead(crate::election::participation::RULE),
            ),
            Recipe::Leases(max) => {
                let mut room = LeaseRoom::fixed(max);
                assess(
                    layout,
                    &[CURATOR_LEASE],
                    children,
                    ours,
                    &Rule::Whole(&mut room),
                )
            }
            Recipe::SharedLeases(count) => {
                let (_count, read) = tokio::sync::watch::channel(count_of(count, 1));
                let mut room = LeaseRoom::shared(read);
                assess(
                    layout,
                    &[CURATOR_LEASE],
                    children,
                    ours,
                    &Rule::Whole(&mut room),
                )
            }
        };
        match assessment {
            Assessment::Granted => Answer::Granted,
            Assessment::Gone => Answer::Gone,
            Assessment::Wrapped(_) => Answer::Refused,
            Assessment::Wait {
                watch,
                handoff,
                far,
            } => Answer::Wait {
                watch: match watch {
                    Watch::Node(name) => Some(name),
                    Watch::Listing => None,
                },
                handoff,
                far: far.map(|far| (far.name, far.upgrade)),
            },
        }
    }
}

/// What a rule answers for one of our nodes in one listing.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    /// A wrapped sequence among the lock's contenders: no grant.
    Refused,
    /// Our node is not listed.
    Gone,
    Granted,
    /// Blocked: watch this node (`None`: the listing); `handoff` when its deletion alone is
    /// the grant. Without a handoff, `far` is the node watched as well and whether, once it is
    /// deleted, the watched node's deletion alone is the grant.
    Wait {
        watch: Option<String>,
        handoff: bool,
        far: Option<(String, bool)>,
    },
}

/// The peers' verdict on one listing.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Peer {
    Refused,
    Gone,
    Granted,
    /// Blocked, watching this node (`None`: the listing).
    Blocked(Option<String>),
}

/// Curator's `StandardLockInternalsDriver.fixForSorting`: the text after the last `lock_name`.
fn fix_for_sorting<'a>(name: &'a str, lock_name: &str) -> &'a str {
    match name.rfind(lock_name) {
        Some(at) => &name[at + lock_name.len()..],
        None => name,
    }
}

/// Curator's sorted children (`LockInternals.getSortedChildren`, a stable sort).
fn curator_sorted(recipe: Recipe, children: &[String]) -> Vec<String> {
    let key = |name: &str| -> Vec<u16> {
        let key = match recipe {
            Recipe::CuratorReader | Recipe::CuratorWriter => {
                fix_for_sorting(fix_for_sorting(name, "__READ__"), "__WRIT__")
            }
            _ => fix_for_sorting(name, recipe.our_name()),
        };
        // `String.compareTo` compares UTF-16 code units.
        key.encode_utf16().collect()
    };
    let mut sorted = children.to_vec();
    sorted.sort_by_cached_key(|name| key(name));
    sorted
}

/// The peer's verdict for our node `ours` in `children`.
fn peer_verdict(recipe: Recipe, children: &[String], ours: &str) -> Peer {
    let max = match recipe {
        Recipe::Leases(max) => Some(max as i64),
        Recipe::SharedLeases(count) => Some(count.into()),
        _ => None,
    };
    if let Some(max) = max {
        // `InterProcessSemaphoreV2.internalAcquire1Lease`: `children.size() <= maxLeases`.
        if !children.iter().any(|c| c == ours) {
            return Peer::Gone;
        }
        return if (children.len() as i64) <= max {
            Peer::Granted
        } else {
            Peer::Blocked(None)
        };
    }
    // A negative sequence, or the counter's last value, which a server hands out again.
    let wrapped = re(&format!(
        "(?:{})(?:-[0-9]+|2147483647)$",
        recipe.lock_names().join("|")
    ));
    if children.iter().any(|c| wrapped.is_match(c)) {
        return Peer::Refused;
    }
    if !children.iter().any(|c| c == ours) {
        return Peer::Gone;
    }
    let blocker = match recipe.layout() {
        Layout::Curator => {
            let sorted = curator_sorted(recipe, children);
            let at = sorted.iter().position(|c| c == ours).unwrap();
            sorted[..at]
                .iter()
                .rev()
                .find(|c| recipe != Recipe::CuratorReader || c.contains("__WRIT__"))
                .cloned()
        }
        Layout::Kazoo => {
            let exclude = match recipe {
                Recipe::KazooWriter => "__lock__|__rlock__",
                _ => "__lock__",
            };
            let contenders = re(&format!("(?:{exclude})(-?[0-9]{{10}})$"));
            let node_sequence = &ours[32 + recipe.our_name().len()..];
            let mut lower: Vec<(&str, &String)> = children
                .iter()
                .filter_map(|c| {
                    contenders
                        .captures(c)
                        .map(|m| (m.get(1).unwrap().as_str(), c))
                })
                .filter(|(sequence, _)| *sequence < node_sequence)
                .collect();
            lower.sort_by(|a, b| a.0.cmp(b.0));
            lower.last().map(|(_, c)| (*c).clone())
        }
    };
    match blocker {
        Some(b) => Peer::Blocked(Some(b)),
        None => Peer::Granted,
    }
}

/// A contender's name as `layout`'s peer writes it, with sequence `seq`.
fn node_name(rng: &mut Rng, layout: Layout, name: &str, seq: i32) -> String {
    match layout {
        Layout::Curator => format!(
            "_c_{}-{}-{}-{}-{}-{name}{seq:010}",
            rng.hex(8),
            rng.hex(4),
            rng.hex(4),
            rng.hex(4),
            rng.hex(12)
        ),
        Layout::Kazoo => format!("{}{name}{seq:010}", rng.hex(32)),
    }
}

/// The model's answer: the peer's verdict, and the deletion answers by brute force.
fn model(recipe: Recipe, listing: &Listing, ours: &str, rng: &mut Rng) -> Answer {
    let watched = match peer_verdict(recipe, &listing.children, ours) {
        Peer::Refused => return Answer::Refused,
        Peer::Gone => return Answer::Gone,
        Peer::Granted => return Answer::Granted,
        Peer::Blocked(None) => {
            return Answer::Wait {
                watch: None,
                handoff: false,
                far: None,
            }
        }
        Peer::Blocked(Some(watched)) => watched,
    };
    let rest = without(&listing.children, &watched);
    if always_granted(recipe, listing, &rest, ours, rng) {
        return Answer::Wait {
            watch: Some(watched),
            handoff: true,
            far: None,
        };
    }
    // The node the peer would watch once the watched one is gone.
    let far = match peer_verdict(recipe, &rest, ours) {
        Peer::Blocked(Some(far)) => {
            let upgrade = always_granted(recipe, listing, &without(&rest, &far), ours, rng);
            Some((far, upgrade))
        }
        _ => None,
    };
    Answer::Wait {
        watch: Some(watched),
        handoff: false,
        far,
    }
}

/// `children` without `name`.
fn without(children: &[String], name: &str) -> Vec<String> {
    children.iter().filter(|c| *c != name).cloned().collect()
}

/// Whether the peer grants us in `rest` (a listing with some contenders deleted) and in
/// whatever it may become while we wait: any other contenders deleted too (sampled), or one
/// joined that can still join (a later sequence, from the next one up to 2^30 creations after
/// ours, past which the counter may wrap).
fn always_granted(
    recipe: Recipe,
    listing: &Listing,
    rest: &[String],
    ours: &str,
    rng: &mut Rng,
) -> bool {
    let our_sequence: i32 = fix_for_sorting(ours, recipe.our_name()).parse().unwrap();
    let mut futures = vec![rest.to_vec()];
    for name in recipe.lock_names() {
        // Short of 2^30: from ours just below 2^30, that reaches the counter's last value, which
        // counts as wrapped.
        for seq in [listing.next, our_sequence.wrapping_add((1 << 30) - 1)] {
            let mut joined = rest.to_vec();
            joined.push(node_name(rng, recipe.layout(), name, seq));
            futures.push(joined);
        }
    }
    for _ in 0..4 {
        let part: Vec<String> = rest
            .iter()
            .filter(|c| *c == ours || rng.chance(50))
            .cloned()
            .collect();
        futures.push(part);
    }
    futures
        .iter()
        .all(|future| peer_verdict(recipe, future, ours) == Peer::Granted)
}

/// A listing of a queue's parent, and the sequence the next create would get.
#[derive(Debug)]
struct Listing {
    children: Vec<String>,
    next: i32,
}

/// Every kind of child a lock path may hold: both layouts' contenders of every recipe.
const KINDS: [(Layout, &str); 7] = [
    (Layout::Curator, "lock-"),
    (Layout::Curator, "__READ__"),
    (Layout::Curator, "__WRIT__"),
    (Layout::Curator, "latch-"),
    (Layout::Curator, "lease-"),
    (Layout::Kazoo, "__lock__"),
    (Layout::Kazoo, "__rlock__"),
];

/// A random listing for `recipe`: mostly its own contenders, some of other recipes and
/// layouts, now and then hand-made children, in a random order.
fn listing(rng: &mut Rng, recipe: Recipe) -> Listing {
    let base = match rng.below(5) {
        0 | 1 => rng.below(40) as i32,
        2 => (1 << 30) - 6 + rng.below(12) as i32,
        3 => i32::MAX - rng.below(8) as i32,
        _ => rng.below(i32::MAX as usize) as i32,
    };
    let mut seq = base;
    let mut children = Vec::new();
    for _ in 0..rng.below(9) {
        let (layout, name) = if rng.chance(75) {
            (recipe.layout(), rng.pick(recipe.lock_names()))
        } else {
            rng.pick(&KINDS)
        };
        children.push(node_name(rng, layout, name, seq));
        // Gaps: deleted children, and creates under the path by others.
        seq = seq.wrapping_add(1 + rng.below(3) as i32);
    }
    for _ in 0..rng.below(3) {
        let hand_made = match rng.below(9) {
            0 => "junk".to_owned(),
            1 => format!("{:010}", rng.below(60)),
            2 => format!("_c_x-{}", recipe.our_name()),
            3 => format!("lock-lock-{:010}", rng.below(60)),
            4 => format!("_c_x-__READ__y__WRIT__{:010}", rng.below(60)),
            5 => format!("{}__lock__{:09}", rng.hex(32), rng.below(60)),
            6 => format!("{}__lock__-{:09}", rng.hex(32), rng.below(60)),
            // Another node with a listed child's sequence (hand-made: the server never
            // repeats one).
            _ => match children.first().cloned() {
                Some(twin) => {
                    let (layout, name) = rng.pick(&KINDS);
                    let seq: i32 = twin
                        .get(twin.len().saturating_sub(10)..)
                        .and_then(|t| t.parse().ok())
                        .unwrap_or(0);
                    node_name(rng, layout, name, seq)
                }
                None => "zzz".to_owned(),
            },
        };
        // Names under one parent are unique.
        if !children.contains(&hand_made) {
            children.push(hand_made);
        }
    }
    for i in (1..children.len()).rev() {
        children.swap(i, rng.below(i + 1));
    }
    Listing {
        children,
        next: seq,
    }
}

/// Our nodes in `children`: those in the form our recipe writes, with a sequence as the server
/// writes it (`%010d`).
fn ours_in(recipe: Recipe, children: &[String]) -> Vec<String> {
    let form = match recipe.layout() {
        Layout::Curator => re(&format!(
            "^_c_[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}}-{}([0-9]{{10}}|-[0-9]{{9,10}})$",
            recipe.our_name()
        )),
        Layout::Kazoo => re(&format!(
            "^[0-9a-f]{{32}}{}([0-9]{{10}}|-[0-9]{{9,10}})$",
            recipe.our_name()
        )),
    };
    children
        .iter()
        .filter(|c| form.is_match(c))
        .cloned()
        .collect()
}

#[test]
fn every_rule_answers_as_the_peers_model_over_random_queues() {
    const SEED: u64 = 0x5eed_2026_0016;
    const LISTINGS: usize = 1500;
    let mut rng = Rng(SEED);
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for case in 0..LISTINGS {
        for recipe in RECIPES {
            let recipe = match recipe {
                Recipe::Leases(_) => Recipe::Leases(1 + rng.below(4)),
                Recipe::SharedLeases(_) => Recipe::SharedLeases(rng.below(7) as i32 - 2),
                r => r,
            };
            let listing = listing(&mut rng, recipe);
            let mut ours = ours_in(recipe, &listing.children);
            if rng.chance(3) {
                // A node of ours that the listing does not hold (deleted by someone).
                ours.push(node_name(&mut rng, recipe.layout(), recipe.our_name(), 7));
            }
            for node in ours {
                let core = recipe.core(&listing.children, &node);
                let model = model(recipe, &listing, &node, &mut rng);
                assert_eq!(
                    core, model,
                    "case {case} (seed {SEED:#x}): {recipe:?} for {node} in {:?} (next {})",
                    listing.children, listing.next
                );
                let outcome = match &core {
                    Answer::Refused => "refused",
                    Answer::Gone => "gone",
                    Answer::Granted => "granted",
                    Answer::Wait { watch: None, .. } => "wait for the listing",
                    Answer::Wait { handoff: true, .. } => "wait, the deletion grants",
                    Answer::Wait {
                        far: Some((_, true)),
                        ..
                    } => "wait, the far deletion makes the next one the grant",
                    Answer::Wait {
                        far: Some((_, false)),
                        ..
                    } => "wait, the far deletion lists",
                    Answer::Wait { .. } => "wait, then list",
                };
                *seen.entry(outcome).or_default() += 1;
            }
        }
    }
    // The generator reaches every answer, many times.
    for outcome in [
        "refused",
        "gone",
        "granted",
        "wait for the listing",
        "wait, the deletion grants",
        "wait, the far deletion makes the next one the grant",
        "wait, the far deletion lists",
        "wait, then list",
    ] {
        let n = seen.get(outcome).copied().unwrap_or(0);
        assert!(n >= 100, "only {n} cases of {outcome:?}: {seen:?}");
    }
}

/// The model itself on the cases the peers' documentation and bug reports spell out.
#[test]
fn the_model_knows_the_peers_cases() {
    let mut rng = Rng(1);
    let list = |names: &[&str]| -> Listing {
        Listing {
            children: names.iter().map(|s| s.to_string()).collect(),
            next: 100,
        }
    };
    let hex = "0123456789abcdef0123456789abcdef";
    // kazoo #649: a writer queued after a reader does not block it.
    let reader = format!("{hex}__rlock__0000000001");
    let l = list(&[&reader, &format!("{hex}__lock__0000000002")]);
    assert_eq!(
        model(Recipe::KazooReader, &l, &reader, &mut rng),
        Answer::Granted
    );
    // A kazoo `Lock` ignores readers; a `WriteLock` waits for them.
    let writer = format!("{hex}__lock__0000000002");
    let l = list(&[&format!("{hex}__rlock__0000000001"), &writer]);
    assert_eq!(
        model(Recipe::KazooMutex, &l, &writer, &mut rng),
        Answer::Granted
    );
    assert!(matches!(
        model(Recipe::KazooWriter, &l, &writer, &mut rng),
        Answer::Wait { handoff: true, .. }
    ));
    // Curator counts a foreign child by its whole name: "0000000000" sorts first.
    let ours = "_c_a-lock-0000000005";
    let l = list(&["0000000000", ours]);
    assert_eq!(
        model(Recipe::CuratorMutex, &l, ours, &mut rng),
        Answer::Wait {
            watch: Some("0000000000".into()),
            handoff: true,
            far: None,
        }
    );
    // Near the wrap a deletion is not the grant: a later contender may sort first.
    let ours = "_c_a-lock-1073741824";
    let l = list(&["_c_b-lock-1073741823", ours]);
    assert!(matches!(
        model(Recipe::CuratorMutex, &l, ours, &mut rng),
        Answer::Wait { handoff: false, .. }
    ));
    // Two ahead of a mutex waiter: the first one's deletion makes the second one's the grant.
    // Three ahead: it does not (two are still ahead), so a listing follows it.
    let (h, a, b) = (
        "_c_h-lock-0000000001",
        "_c_a-lock-0000000002",
        "_c_b-lock-0000000003",
    );
    let ours = "_c_c-lock-0000000004";
    assert_eq!(
        model(Recipe::CuratorMutex, &list(&[h, a, ours]), ours, &mut rng),
        Answer::Wait {
            watch: Some(a.into()),
            handoff: false,
            far: Some((h.into(), true)),
        }
    );
    assert_eq!(
        model(
            Recipe::CuratorMutex,
            &list(&[h, a, b, ours]),
            ours,
            &mut rng
        ),
        Answer::Wait {
            watch: Some(b.into()),
            handoff: false,
            far: Some((a.into(), false)),
        }
    );
    // A reader behind W1 R W2: it waits for W2, then for W1, and with both gone only a reader
    // is ahead of it.
    let (w1, r, w2) = (
        "_c_a-__WRIT__0000000001",
        "_c_b-__READ__0000000002",
        "_c_c-__WRIT__0000000003",
    );
    let ours = "_c_d-__READ__0000000004";
    assert_eq!(
        model(
            Recipe::CuratorReader,
            &list(&[w1, r, w2, ours]),
            ours,
            &mut rng
        ),
        Answer::Wait {
            watch: Some(w2.into()),
            handoff: false,
            far: Some((w1.into(), true)),
        }
    );
    // A semaphore's lease waits for the listing, however many leases are ahead.
    let ours = "_c_a-lease-0000000002";
    let l = list(&["_c_b-lease-0000000001", ours]);
    assert_eq!(
        model(Recipe::Leases(1), &l, ours, &mut rng),
        Answer::Wait {
            watch: None,
            handoff: false,
            far: None,
        }
    );
}

/// A shared count's value, written at `zxid`.
fn count_of(count: i32, zxid: i64) -> VersionedCount {
    VersionedCount {
        count,
        version: 0,
        mzxid: zxid,
    }
}

/// True if `f` is ready on its first poll.
fn ready_now<F: std::future::Future>(f: F) -> bool {
    struct Nobody;
    impl std::task::Wake for Nobody {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Nobody));
    let f = std::pin::pin!(f);
    f.poll(&mut std::task::Context::from_waker(&waker))
        .is_ready()
}

/// A semaphore whose count is shared, over random listings and random count changes: a
/// waiting lease is woken by every change of the count (made before or after the waiter
/// started waiting, as long as after its judgement), by nothing else, and is then judged by
/// the new count as the peer would; a lowered count holds back what a higher one granted,
/// since only the listing decides and no deletion is ever taken as the grant.
#[test]
fn a_count_change_wakes_the_lease_rule() {
    const SEED: u64 = 0x5eed_2026_5e4a;
    let mut rng = Rng(SEED);
    let mut woken = 0;
    for case in 0..400 {
        let first = rng.below(7) as i32 - 2;
        let listing = listing(&mut rng, Recipe::SharedLeases(first));
        let Some(ours) = ours_in(Recipe::SharedLeases(first), &listing.children)
            .into_iter()
            .next()
        else {
            continue;
        };
        let (count, read) = tokio::sync::watch::channel(count_of(first, 1));
        let mut room = LeaseRoom::shared(read);
        let mut zxid = 1;
        let mut now = first;
        for step in 0..6 {
            let judged = assess(
                Layout::Curator,
                &[CURATOR_LEASE],
                &listing.children,
                &ours,
                &Rule::Whole(&mut room),
            );
            let peer = peer_verdict(Recipe::SharedLeases(now), &listing.children, &ours);
            let what =
                format!("case {case} step {step} (seed {SEED:#x}): count {now}, {listing:?}");
            match peer {
                Peer::Granted => assert_eq!(judged, Assessment::Granted, "{what}"),
                Peer::Blocked(None) => assert_eq!(
                    judged,
                    Assessment::Wait {
                        watch: Watch::Listing,
                        handoff: false,
                        far: None,
                    },
                    "{what}"
                ),
                other => panic!("{what}: the peer says {other:?}"),
            }
            assert!(!ready_now(room.changed()), "{what}: woken with no change");
            // The next count, made now or once the waiter waits: either way it wakes it.
            now = rng.below(7) as i32 - 2;
            zxid += 1;
            count.send_replace(count_of(now, zxid));
            assert!(
                ready_now(room.changed()),
                "{what}: the change to {now} was missed"
            );
            woken += 1;
        }
    }
    assert!(woken > 1000, "only {woken} wakeups checked");
}
