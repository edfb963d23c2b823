//! A bounded queue for a consumer that may fall behind: past its bound, items are folded per
//! key into what changed, and handed over once the consumer has caught up.
//!
//! Up to `max` items wait in order. Past that, and for as long as anything is held back, a new
//! item is not queued but folded into the change held for its key, so that none overtakes an
//! older change of its key. Once the consumer has read everything queued, the [`FoldRule`]
//! releases what is held into the queue: how much at once, in what order, as which items.
//! Memory is bounded by `max` plus the number of distinct keys held, however many items come.
//!
//! The client folds a persistent watch's events this way (per path, into the events a server
//! would have sent for the net change); `zookeeper-recipes` folds a cache consumer's events
//! (per path, into the node as last seen and as it is now). The queue does no locking and no
//! waking: its owner keeps it behind its own lock and wakes its own consumer.
//!
//! ```
//! use std::collections::{BTreeMap, VecDeque};
//! use zookeeper_tokio::folding::{FoldRule, FoldingQueue};
//!
//! /// Keeps a counter's latest value, released in key order, all at once.
//! struct Latest;
//!
//! impl FoldRule for Latest {
//!     type Item = (String, u64);
//!     type Key = String;
//!     type Change = u64;
//!
//!     fn key<'a>(&self, item: &'a (String, u64)) -> Option<&'a String> {
//!         Some(&item.0)
//!     }
//!     fn start(&mut self, item: &(String, u64)) -> u64 {
//!         item.1
//!     }
//!     fn then(&mut self, change: &mut u64, item: &(String, u64)) {
//!         *change = item.1;
//!     }
//!     fn release(
//!         &mut self,
//!         held: &mut BTreeMap<String, u64>,
//!         queue: &mut VecDeque<(String, u64)>,
//!         _max: usize,
//!     ) {
//!         queue.extend(std::mem::take(held));
//!     }
//! }
//!
//! let mut queue = FoldingQueue::new(1, Latest);
//! for (name, value) in [("b", 1), ("b", 2), ("a", 7), ("b", 3)] {
//!     queue.push((name.to_string(), value));
//! }
//! assert_eq!((queue.len(), queue.held_keys()), (1, 2));
//! let read: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
//! let expected = [("b", 1), ("a", 7), ("b", 3)].map(|(n, v)| (n.to_string(), v));
//! assert_eq!(read, expected);
//! ```

use std::collections::{BTreeMap, VecDeque};

/// How a [`FoldingQueue`] folds the items it cannot queue, and hands them back.
pub trait FoldRule {
    /// What the queue carries.
    type Item;
    /// What items are folded per: no two changes of one key are held apart.
    type Key: Ord + Clone;
    /// What one key's held-back items folded into.
    type Change;

    /// The key `item` folds under, or `None` for an item that is no change of one key (the
    /// rule holds what it needs of it in [`hold_unkeyed`](FoldRule::hold_unkeyed)).
    fn key<'a>(&self, item: &'a Self::Item) -> Option<&'a Self::Key>;

    /// The change `item` alone makes, for a key that holds none.
    fn start(&mut self, item: &Self::Item) -> Self::Change;

    /// Adds `item`, the next of its key, to the change held for the key.
    fn then(&mut self, change: &mut Self::Change, item: &Self::Item);

    /// Whether `change` amounts to nothing (a node that came and went), so its key is
    /// forgotten, as if none of its items had come. By default no change is nothing.
    fn is_nothing(&self, change: &Self::Change) -> bool {
        let _ = change;
        false
    }

    /// Holds back an item that has no key. A rule whose [`key`](FoldRule::key) can be `None`
    /// implements this and [`holds_unkeyed`](FoldRule::holds_unkeyed); by default there is
    /// no such item.
    fn hold_unkeyed(&mut self, item: &Self::Item) {
        let _ = item;
    }

    /// Whether anything held by [`hold_unkeyed`](FoldRule::hold_unkeyed) waits for release:
    /// while it does, items are folded, as while any key holds a change.
    fn holds_unkeyed(&self) -> bool {
        false
    }

    /// Moves what is held into the empty `queue`, once the consumer has read it all: some or
    /// all of `held` (the keys left stay held, and later items of every key keep folding
    /// until none is) and what the rule holds itself, in the order the consumer is to see
    /// them. `max` is the queue's bound, for a rule that releases a queueful at a time.
    /// Each call must queue at least one item or leave nothing held (a held change may
    /// amount to no item): until one of those happens, the consumer reads nothing more.
    fn release(
        &mut self,
        held: &mut BTreeMap<Self::Key, Self::Change>,
        queue: &mut VecDeque<Self::Item>,
        max: usize,
    );
}

/// Where [`FoldingQueue::push`] put an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Queued as it came.
    Queued,
    /// Folded into what is held back.
    Folded,
}

/// A queue of up to `max` items that folds the rest; see the [module docs](self).
#[derive(Debug)]
pub struct FoldingQueue<F: FoldRule> {
    queue: VecDeque<F::Item>,
    max: usize,
    /// Changes held back, by key; with the rule's own, non-empty exactly while the consumer
    /// is behind.
    held: BTreeMap<F::Key, F::Change>,
    rule: F,
}

impl<F: FoldRule> FoldingQueue<F> {
    /// An empty queue of `max` items at most (at least 1), folding by `rule`.
    pub fn new(max: usize, rule: F) -> FoldingQueue<F> {
        FoldingQueue {
            queue: VecDeque::new(),
            max: max.max(1),
            held: BTreeMap::new(),
            rule,
        }
    }

    /// Queues `item` if it fits and nothing is held back; folds it otherwise.
    pub fn push(&mut self, item: F::Item) -> Pushed {
        if self.fits(1) {
            self.queue.push_back(item);
            Pushed::Queued
        } else {
            self.fold(&item);
            Pushed::Folded
        }
    }

    /// Queues `items` whole if they all fit and nothing is held back; folds them all
    /// otherwise, so that a step of several items is never split between the two.
    pub fn push_step(&mut self, items: &[F::Item]) -> Pushed
    where
        F::Item: Clone,
    {
        if self.fits(items.len()) {
            self.queue.extend(items.iter().cloned());
            Pushed::Queued
        } else {
            for item in items {
                self.fold(item);
            }
            Pushed::Folded
        }
    }

    /// The next item: the oldest queued, or once none is, the first of what is released.
    pub fn pop(&mut self) -> Option<F::Item> {
        if self.queue.is_empty() && self.is_behind() {
            self.rule.release(&mut self.held, &mut self.queue, self.max);
        }
        self.queue.pop_front()
    }

    /// Whether anything is held back.
    pub fn is_behind(&self) -> bool {
        !self.held.is_empty() || self.rule.holds_unkeyed()
    }

    /// The items queued now.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no item is queued (something may still be held back).
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The keys holding a change now.
    pub fn held_keys(&self) -> usize {
        self.held.len()
    }

    /// Drops every item queued and every change held, and frees their memory; what the rule
    /// holds itself stays.
    pub fn clear(&mut self) {
        self.queue = VecDeque::new();
        self.held = BTreeMap::new();
    }

    fn fits(&self, items: usize) -> bool {
        !self.is_behind()
            && self
                .queue
                .len()
                .checked_add(items)
                .is_some_and(|len| len <= self.max)
    }

    fn fold(&mut self, item: &F::Item) {
        let Some(key) = self.rule.key(item) else {
            self.rule.hold_unkeyed(item);
            return;
        };
        match self.held.get_mut(key) {
            Some(change) => {
                self.rule.then(change, item);
                if self.rule.is_nothing(change) {
                    self.held.remove(key);
                }
            }
            None => {
                let change = self.rule.start(item);
                if !self.rule.is_nothing(&change) {
                    self.held.insert(key.clone(), change);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test item: a value set for a name, or a mark with no name.
    #[derive(Debug, Clone, PartialEq)]
    enum Item {
        Set(String, i32),
        Mark,
    }

    fn set(name: &str, value: i32) -> Item {
        Item::Set(name.into(), value)
    }

    /// Folds a name's sets into (first, latest); a name whose latest value is 0 is nothing.
    /// Releases `chunk` names at a time in name order, a name that changed as two
    /// items (first, latest) whole, then a held mark after every name.
    #[derive(Default)]
    struct Rule {
        chunk: usize,
        marked: bool,
        releases: usize,
    }

    impl FoldRule for Rule {
        type Item = Item;
        type Key = String;
        type Change = (i32, i32);

        fn key<'a>(&self, item: &'a Item) -> Option<&'a String> {
            match item {
                Item::Set(name, _) => Some(name),
                Item::Mark => None,
            }
        }

        fn start(&mut self, item: &Item) -> (i32, i32) {
            let Item::Set(_, v) = item else { panic!() };
            (*v, *v)
        }

        fn then(&mut self, change: &mut (i32, i32), item: &Item) {
            let Item::Set(_, v) = item else { panic!() };
            change.1 = *v;
        }

        fn is_nothing(&self, change: &(i32, i32)) -> bool {
            change.1 == 0
        }

        fn hold_unkeyed(&mut self, _: &Item) {
            self.marked = true;
        }

        fn holds_unkeyed(&self) -> bool {
            self.marked
        }

        fn release(
            &mut self,
            held: &mut BTreeMap<String, (i32, i32)>,
            queue: &mut VecDeque<Item>,
            _max: usize,
        ) {
            self.releases += 1;
            for _ in 0..self.chunk {
                let Some((name, (first, latest))) = held.pop_first() else {
                    break;
                };
                queue.push_back(Item::Set(name.clone(), first));
                if latest != first {
                    queue.push_back(Item::Set(name, latest));
                }
            }
            if held.is_empty() && std::mem::take(&mut self.marked) {
                queue.push_back(Item::Mark);
            }
        }
    }

    fn queue(max: usize, chunk: usize) -> FoldingQueue<Rule> {
        FoldingQueue::new(
            max,
            Rule {
                chunk,
                ..Rule::default()
            },
        )
    }

    fn drain(q: &mut FoldingQueue<Rule>) -> Vec<Item> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn within_the_bound_items_pass_as_they_came() {
        let mut q = queue(3, usize::MAX);
        for v in 1..=3 {
            assert_eq!(q.push(set("/a", v)), Pushed::Queued);
        }
        assert_eq!(q.push(set("/a", 4)), Pushed::Folded);
        assert_eq!((q.len(), q.held_keys()), (3, 1));
        assert_eq!(
            drain(&mut q),
            vec![set("/a", 1), set("/a", 2), set("/a", 3), set("/a", 4)]
        );
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn held_back_items_fold_per_key_and_memory_stays_bounded() {
        let mut q = queue(2, usize::MAX);
        q.push(set("/q", 1));
        q.push(set("/q", 2));
        for v in 1..=100_000 {
            q.push(set("/busy", v));
            q.push(set(&format!("/k{}", v % 10), v));
        }
        assert_eq!((q.len(), q.held_keys()), (2, 11));
        let got = drain(&mut q);
        assert_eq!(got.len(), 2 + 11 * 2);
        assert_eq!(got[2], set("/busy", 1));
        assert_eq!(got[3], set("/busy", 100_000));
    }

    /// A free place in the queue does not let an item past an older held change of its key.
    #[test]
    fn nothing_overtakes_what_is_held_back() {
        let mut q = queue(1, usize::MAX);
        q.push(set("/a", 1));
        q.push(set("/a", 2));
        assert_eq!(q.pop(), Some(set("/a", 1)));
        assert_eq!(q.len(), 0);
        assert_eq!(q.push(set("/a", 3)), Pushed::Folded, "room, but /a is held");
        assert_eq!(q.push(set("/b", 1)), Pushed::Folded, "room, but behind");
        assert_eq!(
            drain(&mut q),
            vec![set("/a", 2), set("/a", 3), set("/b", 1)]
        );
        assert_eq!(q.push(set("/a", 4)), Pushed::Queued, "caught up");
    }

    #[test]
    fn release_waits_for_the_queue_to_be_read_and_takes_what_the_rule_gives() {
        let mut q = queue(1, 2);
        for name in ["/a", "/b", "/c", "/d", "/e"] {
            q.push(set(name, 1));
        }
        assert_eq!(q.pop(), Some(set("/a", 1)));
        assert_eq!(
            q.rule.releases, 0,
            "nothing released while the queue held one"
        );
        assert_eq!(q.pop(), Some(set("/b", 1)));
        assert_eq!((q.rule.releases, q.len(), q.held_keys()), (1, 1, 2));
        assert_eq!(q.push(set("/b", 2)), Pushed::Folded, "still behind");
        assert_eq!(
            drain(&mut q),
            vec![set("/c", 1), set("/b", 2), set("/d", 1), set("/e", 1)]
        );
        assert_eq!(q.rule.releases, 3);
    }

    #[test]
    fn a_step_is_queued_whole_or_folded_whole() {
        let mut q = queue(3, usize::MAX);
        assert_eq!(q.push_step(&[set("/a", 1), set("/b", 1)]), Pushed::Queued);
        assert_eq!(
            q.push_step(&[set("/a", 2), set("/c", 1)]),
            Pushed::Folded,
            "one would fit, the step does not"
        );
        assert_eq!((q.len(), q.held_keys()), (2, 2));
        assert_eq!(
            drain(&mut q),
            vec![set("/a", 1), set("/b", 1), set("/a", 2), set("/c", 1)]
        );
        assert_eq!(q.push_step(&[]), Pushed::Queued);
    }

    #[test]
    fn a_change_that_amounts_to_nothing_is_forgotten() {
        let mut q = queue(1, usize::MAX);
        q.push(set("/q", 5));
        q.push(set("/gone", 0));
        q.push(set("/x", 7));
        q.push(set("/gone", 4));
        q.push(set("/gone", 0));
        assert_eq!(q.held_keys(), 1, "/gone went back to nothing");
        assert_eq!(drain(&mut q), vec![set("/q", 5), set("/x", 7)]);
    }

    #[test]
    fn an_unkeyed_item_held_keeps_the_queue_behind_until_released() {
        let mut q = queue(1, 1);
        q.push(set("/a", 1));
        q.push(Item::Mark);
        assert!(q.is_behind());
        assert_eq!(q.held_keys(), 0);
        assert_eq!(q.pop(), Some(set("/a", 1)));
        assert_eq!(
            q.push(set("/b", 1)),
            Pushed::Folded,
            "room, but the mark is held"
        );
        assert_eq!(drain(&mut q), vec![set("/b", 1), Item::Mark]);
        assert!(!q.is_behind());
        assert_eq!(q.push(set("/c", 1)), Pushed::Queued);
    }

    #[test]
    fn a_bound_of_zero_is_one_and_clear_frees_everything() {
        let mut q = queue(0, usize::MAX);
        assert_eq!(q.push(set("/a", 1)), Pushed::Queued);
        assert_eq!(q.push(set("/b", 1)), Pushed::Folded);
        q.clear();
        assert_eq!((q.len(), q.held_keys()), (0, 0));
        assert!(q.is_empty() && !q.is_behind());
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn an_unbounded_queue_does_not_overflow_its_count() {
        let mut q = queue(usize::MAX, usize::MAX);
        assert_eq!(q.push(set("/a", 1)), Pushed::Queued);
        assert_eq!(q.push_step(&[set("/a", 2), set("/b", 1)]), Pushed::Queued);
        assert_eq!(q.len(), 3);
    }
}
