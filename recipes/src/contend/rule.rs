//! What each recipe hands the contention core: its rule for judging its place in the queue.
//!
//! Shown a listing in the peer's order, a rule says whether we are blocked and, if so, what to
//! watch: one contender (whose deletion may change the verdict) or the whole listing. The core
//! adds two answers itself:
//!
//! * whether the watched contender's deletion *alone* is our grant, so that a waiter can take
//!   the deletion event as the grant without listing the queue again (the handoff: a round
//!   trip and a listing of the whole queue saved per grant);
//! * otherwise, the contender the rule would wait for once the watched one is gone (for a
//!   mutex: the second-nearest predecessor), watched as well. Its deletion comes first when
//!   the queue moves, while the watched one still holds or waits. When the rule, shown the
//!   queue without both, grants us, that deletion turns the watched one's deletion into our
//!   grant with no listing (an upgrade); otherwise the waiter lists again then, while the
//!   contender ahead of it holds, so that its own grant comes as a handoff. Either way the
//!   listing moves off the handoff path, at the price of a second watch per waiter: each
//!   release notifies the next waiter and the one after it, never more.
//!
//! Both shortcuts are sound only for a verdict that nothing but the contenders ahead of us can
//! change, and only if it stays a grant when contenders ahead of us go (a rule is blocked by
//! what is there, never by what is missing). Nobody can queue ahead of us (a later node carries
//! a higher sequence, so it sorts after ours until the counter wraps), so after the deletions
//! we heard of, what is ahead of us is a part of what the rule was shown without them, and
//! such a rule judges it as it judged that. Which rules may take them is decided by their
//! kind, not by a promise:
//!
//! * [`Rule::Ahead`] is shown the contenders ahead of us and nothing else, and is a plain `fn`:
//!   it can hold no state of its own (a count that changes while we wait) and cannot see who
//!   queued behind us. The core gives it both shortcuts, and only while our sequence leaves
//!   room for 2^30 more creations under the path before the counter wraps.
//! * [`Rule::Whole`] is shown the whole queue and our place in it, and may hold anything (a
//!   lease count that others change): the core never takes a deletion as its grant, watches one
//!   thing only, and lists again after every wakeup; it also wakes it when what it holds
//!   changes.
//!
//! So a rule that judges by anything but the contenders ahead of it cannot be handed a
//! shortcut, whatever it claims. The crate's `peer_model` checks every recipe's rule, and this assessment,
//! against a model written plainly from the peers' semantics.

use std::future::Future;
use std::pin::Pin;

use crate::node::naming::{peer_queue, sequence_of, Contender, Layout, Queue};

/// What a rule decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Ours.
    Granted,
    /// Blocked; watch this contender (an index into what the rule was shown) for its deletion.
    WaitFor(usize),
    /// Blocked; watch the listing for any change (a semaphore counting its leases).
    WaitForChange,
}

/// A rule judging by the contenders ahead of us (first first) and nothing else.
pub(crate) type AheadRule = fn(&[Contender]) -> Verdict;

/// A rule judging by the whole queue, or by something besides the queue.
pub(crate) trait WholeRule: Send {
    /// Judges the queue with us at `ours`.
    fn judge(&self, queue: &[Contender], ours: usize) -> Verdict;

    /// Whether the verdict depends on the contenders' order: if so, a wrapped sequence (where
    /// the peers' order breaks) refuses the grant, as for every [`Rule::Ahead`].
    fn by_order(&self) -> bool;

    /// Resolves when something besides the queue that the verdict depends on changed. Made
    /// before the listing it judges is read, so a change in between is not missed.
    fn changed(&mut self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// A recipe's rule, handed to the core.
pub(crate) enum Rule<'a> {
    /// Judges by the contenders ahead of us only: a deletion may be the grant.
    Ahead(AheadRule),
    /// Judges by more: every wakeup is followed by a listing.
    Whole(&'a mut (dyn WholeRule + 'a)),
}

impl Rule<'_> {
    /// Resolves when what a [`Rule::Whole`] holds besides the queue changed; never for a
    /// [`Rule::Ahead`], which holds nothing.
    pub(crate) async fn changed(&mut self) {
        match self {
            Rule::Ahead(_) => std::future::pending().await,
            Rule::Whole(rule) => rule.changed().await,
        }
    }
}

/// The contender just before us blocks us, whatever its kind: the rule of a mutex, a writer, a
/// leader latch and a semaphore's gate.
pub(crate) fn predecessor(ahead: &[Contender]) -> Verdict {
    match ahead.len() {
        0 => Verdict::Granted,
        n => Verdict::WaitFor(n - 1),
    }
}

/// What to watch while blocked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Watch {
    /// This contender (a child name), for its deletion.
    Node(String),
    /// The listing, for any change.
    Listing,
}

/// The contender watched besides the blocker: the one the rule waits for once the blocker is
/// gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Far {
    /// Its child name.
    pub name: String,
    /// Its deletion makes the blocker's deletion our grant (no listing needed after either);
    /// otherwise its deletion is followed by a listing.
    pub upgrade: bool,
}

/// One listing judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Assessment {
    /// Ours.
    Granted,
    /// Blocked: watch `watch`; `handoff` when its deletion alone is our grant.
    Wait {
        /// What to watch.
        watch: Watch,
        /// The watched contender's deletion is the grant: no listing needed after it.
        handoff: bool,
        /// Without a handoff: the contender to watch as well, whose deletion comes first.
        far: Option<Far>,
    },
    /// Our node is not in the listing.
    Gone,
    /// This child's sequence wrapped past 2^31: the peers' order is broken.
    Wrapped(String),
}

/// Our sequences below this leave room for 2^30 more creations under the path before the
/// counter wraps: far more than can happen while one contender waits, so no contender that
/// sorts ahead of ours can appear. Above it, every grant is decided on a listing (which shows a
/// wrap).
pub(crate) const HANDOFF_BELOW: i32 = 1 << 30;

/// Judges `children` (a listing of the queue's parent) for our node `ours` by `rule`, with the
/// queue in `layout`'s order over `markers`.
pub(crate) fn assess(
    layout: Layout,
    markers: &[&str],
    children: &[String],
    ours: &str,
    rule: &Rule<'_>,
) -> Assessment {
    let Queue {
        contenders: mut queue,
        wrapped,
    } = peer_queue(layout, children, markers, Some(ours));
    let by_order = match rule {
        Rule::Ahead(_) => true,
        Rule::Whole(rule) => rule.by_order(),
    };
    if let Some(child) = wrapped.filter(|_| by_order) {
        return Assessment::Wrapped(child);
    }
    let Some(at) = queue.iter().position(|c| c.name == ours) else {
        return Assessment::Gone;
    };
    match rule {
        Rule::Ahead(judge) => {
            // Shown only what is ahead of us: the queue stops before our node.
            queue.truncate(at);
            match judge(&queue) {
                Verdict::Granted => Assessment::Granted,
                Verdict::WaitFor(blocker) if blocker < queue.len() => {
                    let name = queue.remove(blocker).name;
                    let room = sequence_of(ours, markers)
                        .is_some_and(|seq| (0..HANDOFF_BELOW).contains(&seq));
                    let (handoff, far) = match judge(&queue) {
                        Verdict::Granted => (room, None),
                        Verdict::WaitFor(far) if far < queue.len() => {
                            let name = queue.remove(far).name;
                            let upgrade = room && judge(&queue) == Verdict::Granted;
                            (false, Some(Far { name, upgrade }))
                        }
                        Verdict::WaitFor(_) | Verdict::WaitForChange => (false, None),
                    };
                    Assessment::Wait {
                        watch: Watch::Node(name),
                        handoff,
                        far,
                    }
                }
                // Nothing it was shown to watch: the listing, without a shortcut.
                Verdict::WaitFor(_) | Verdict::WaitForChange => Assessment::Wait {
                    watch: Watch::Listing,
                    handoff: false,
                    far: None,
                },
            }
        }
        Rule::Whole(rule) => {
            let watch = match rule.judge(&queue, at) {
                Verdict::Granted => return Assessment::Granted,
                Verdict::WaitFor(blocker) if blocker < queue.len() && blocker != at => {
                    Watch::Node(queue.swap_remove(blocker).name)
                }
                Verdict::WaitFor(_) | Verdict::WaitForChange => Watch::Listing,
            };
            Assessment::Wait {
                watch,
                handoff: false,
                far: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// A rule that claims more than it may: it would grant whenever the queue has room, as a
    /// semaphore does, but is handed to the core as a whole-queue rule, so no deletion is its
    /// grant.
    struct Room(usize);

    impl WholeRule for Room {
        fn judge(&self, queue: &[Contender], ours: usize) -> Verdict {
            if queue.len() <= self.0 {
                Verdict::Granted
            } else {
                Verdict::WaitFor(ours.saturating_sub(1))
            }
        }
        fn by_order(&self) -> bool {
            false
        }
        fn changed(&mut self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
            Box::pin(std::future::pending())
        }
    }

    #[test]
    fn a_predecessor_alone_ahead_is_a_handoff() {
        let children = names(&["_c_a-lock-0000000001", "_c_b-lock-0000000002"]);
        let rule = Rule::Ahead(predecessor);
        let a = assess(
            Layout::Curator,
            &["lock-"],
            &children,
            "_c_b-lock-0000000002",
            &rule,
        );
        assert_eq!(
            a,
            Assessment::Wait {
                watch: Watch::Node("_c_a-lock-0000000001".into()),
                handoff: true,
                far: None,
            }
        );
        let a = assess(
            Layout::Curator,
            &["lock-"],
            &children,
            "_c_a-lock-0000000001",
            &rule,
        );
        assert_eq!(a, Assessment::Granted);
    }

    #[test]
    fn with_two_ahead_the_far_one_upgrades_and_with_three_it_does_not() {
        let rule = Rule::Ahead(predecessor);
        let children = names(&[
            "a-lock-0000000001",
            "b-lock-0000000002",
            "c-lock-0000000003",
            "d-lock-0000000004",
        ]);
        let a = assess(
            Layout::Curator,
            &["lock-"],
            &children,
            "c-lock-0000000003",
            &rule,
        );
        assert_eq!(
            a,
            Assessment::Wait {
                watch: Watch::Node("b-lock-0000000002".into()),
                handoff: false,
                far: Some(Far {
                    name: "a-lock-0000000001".into(),
                    upgrade: true
                }),
            }
        );
        // With three ahead, the far one's deletion still leaves two: a listing follows it.
        let a = assess(
            Layout::Curator,
            &["lock-"],
            &children,
            "d-lock-0000000004",
            &rule,
        );
        assert_eq!(
            a,
            Assessment::Wait {
                watch: Watch::Node("c-lock-0000000003".into()),
                handoff: false,
                far: Some(Far {
                    name: "b-lock-0000000002".into(),
                    upgrade: false
                }),
            }
        );
    }

    #[test]
    fn no_shortcut_near_the_wrap() {
        let rule = Rule::Ahead(predecessor);
        let children = names(&["a-lock-1073741823", "b-lock-1073741824"]);
        let a = assess(
            Layout::Curator,
            &["lock-"],
            &children,
            "b-lock-1073741824",
            &rule,
        );
        assert_eq!(
            a,
            Assessment::Wait {
                watch: Watch::Node("a-lock-1073741823".into()),
                handoff: false,
                far: None,
            }
        );
        let children = names(&[
            "a-lock-1073741822",
            "b-lock-1073741823",
            "c-lock-1073741824",
        ]);
        let a = assess(
            Layout::Curator,
            &["lock-"],
            &children,
            "c-lock-1073741824",
            &rule,
        );
        assert!(
            matches!(
                &a,
                Assessment::Wait {
                    handoff: false,
                    far: Some(Far { upgrade: false, .. }),
                    ..
                }
            ),
            "{a:?}"
        );
    }

    #[test]
    fn a_whole_queue_rule_never_gets_the_handoff() {
        let mut room = Room(1);
        let rule = Rule::Whole(&mut room);
        let children = names(&["a-lease-0000000001", "b-lease-0000000002"]);
        let a = assess(
            Layout::Curator,
            &["lease-"],
            &children,
            "b-lease-0000000002",
            &rule,
        );
        assert_eq!(
            a,
            Assessment::Wait {
                watch: Watch::Node("a-lease-0000000001".into()),
                handoff: false,
                far: None,
            }
        );
    }

    #[test]
    fn a_wrapped_sequence_refuses_an_ordered_rule_only() {
        let children = names(&["a-lease-2147483646", "b-lease--2147483648"]);
        let a = assess(
            Layout::Curator,
            &["lease-"],
            &children,
            "a-lease-2147483646",
            &Rule::Ahead(predecessor),
        );
        assert_eq!(a, Assessment::Wrapped("b-lease--2147483648".into()));
        let mut room = Room(2);
        let a = assess(
            Layout::Curator,
            &["lease-"],
            &children,
            "a-lease-2147483646",
            &Rule::Whole(&mut room),
        );
        assert_eq!(a, Assessment::Granted);
    }

    #[test]
    fn our_node_missing_is_gone() {
        let a = assess(
            Layout::Curator,
            &["lock-"],
            &names(&["a-lock-0000000001"]),
            "b-lock-0000000002",
            &Rule::Ahead(predecessor),
        );
        assert_eq!(a, Assessment::Gone);
    }

    #[test]
    fn an_index_outside_what_a_rule_was_shown_watches_the_listing() {
        fn wild(_: &[Contender]) -> Verdict {
            Verdict::WaitFor(7)
        }
        let a = assess(
            Layout::Curator,
            &["lock-"],
            &names(&["a-lock-0000000001", "b-lock-0000000002"]),
            "b-lock-0000000002",
            &Rule::Ahead(wild),
        );
        assert_eq!(
            a,
            Assessment::Wait {
                watch: Watch::Listing,
                handoff: false,
                far: None,
            }
        );
    }
}
