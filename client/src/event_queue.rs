//! The stream of one persistent watch, from the session to the user, with memory bounded
//! whatever the server sends and however slowly the user reads.
//!
//! At most `max` events wait in the queue. When it is full, later events are not queued but
//! folded, per node, into what changed since (the [`NetChange`] rules a reconnect uses to
//! report missed changes); once the consumer has read everything queued, it gets those changes,
//! one event per node and kind, and the stream goes on. The event that ends the stream (the
//! session's end, or the watch removed) comes after everything else. The queuing and folding
//! are a [`FoldingQueue`]'s; [`NodeChanges`] is the rule it folds and releases by.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use zookeeper_jute::EventType;

use crate::folding::{FoldRule, FoldingQueue, Pushed};
use crate::net_change::NetChange;
use crate::state::SessionState;
use crate::watched_event::WatchedEvent;

/// A stream of `max` events at most; see the module docs.
pub(crate) fn channel(max: usize) -> (EventSender, EventReceiver) {
    let shared = Arc::new(Mutex::new(Shared {
        events: FoldingQueue::new(max, NodeChanges),
        last: None,
        sender_gone: false,
        receiver_gone: false,
        waker: None,
    }));
    (
        EventSender {
            shared: shared.clone(),
        },
        EventReceiver { shared },
    )
}

#[derive(Debug)]
struct Shared {
    /// Node events; held back by client path while the consumer is behind, so that they come
    /// in path order.
    events: FoldingQueue<NodeChanges>,
    /// The event that ends the stream.
    last: Option<WatchedEvent>,
    sender_gone: bool,
    receiver_gone: bool,
    waker: Option<Waker>,
}

/// Folds a node's events into its [`NetChange`], and hands held-back nodes back in path
/// order, as many as fit the queue's bound (a node whose change takes two events goes whole,
/// so a bound of 1 may hold 2).
#[derive(Debug)]
struct NodeChanges;

impl FoldRule for NodeChanges {
    type Item = WatchedEvent;
    type Key = String;
    type Change = NetChange;

    fn key<'a>(&self, event: &'a WatchedEvent) -> Option<&'a String> {
        Some(&event.path)
    }

    fn start(&mut self, event: &WatchedEvent) -> NetChange {
        NetChange::starting_with(event.event_type)
    }

    fn then(&mut self, change: &mut NetChange, event: &WatchedEvent) {
        change.then(event.event_type);
    }

    /// A node that came and went is no change: forgetting it keeps what is held to the nodes
    /// that are, or were, there.
    fn is_nothing(&self, change: &NetChange) -> bool {
        change.is_nothing()
    }

    fn release(
        &mut self,
        held: &mut BTreeMap<String, NetChange>,
        queue: &mut VecDeque<WatchedEvent>,
        max: usize,
    ) {
        while let Some(entry) = held.first_entry() {
            let events = entry.get().events();
            if !queue.is_empty() && queue.len() + events.len() > max {
                return;
            }
            let path = entry.remove_entry().0;
            for event_type in events {
                queue.push_back(WatchedEvent {
                    event_type,
                    state: SessionState::Connected,
                    path: path.clone(),
                });
            }
        }
    }
}

impl Shared {
    fn wake(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // Nothing panics while holding it; if something did, the data is still consistent.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The session's end of a stream.
#[derive(Debug)]
pub(crate) struct EventSender {
    shared: Arc<Mutex<Shared>>,
}

/// The receiver is gone.
#[derive(Debug)]
pub(crate) struct Closed;

impl EventSender {
    /// Queues `event`, or folds it into what the consumer is behind on.
    pub fn send(&self, event: WatchedEvent) -> Result<(), Closed> {
        let mut shared = lock(&self.shared);
        if shared.receiver_gone {
            return Err(Closed);
        }
        let node_event = matches!(
            event.event_type,
            EventType::NodeCreated
                | EventType::NodeDeleted
                | EventType::NodeDataChanged
                | EventType::NodeChildrenChanged
        );
        if !node_event {
            shared.last.get_or_insert(event);
        } else if shared.events.push(event) == Pushed::Folded {
            crate::metrics::watch_event_coalesced();
        }
        shared.wake();
        Ok(())
    }

    pub fn is_closed(&self) -> bool {
        lock(&self.shared).receiver_gone
    }
}

impl Drop for EventSender {
    fn drop(&mut self) {
        let mut shared = lock(&self.shared);
        shared.sender_gone = true;
        shared.wake();
    }
}

/// The user's end of a stream.
#[derive(Debug)]
pub(crate) struct EventReceiver {
    shared: Arc<Mutex<Shared>>,
}

impl EventReceiver {
    /// The next event: `Ready(None)` once the stream has ended and everything was read.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<WatchedEvent>> {
        let mut shared = lock(&self.shared);
        match shared.next() {
            Some(event) => Poll::Ready(Some(event)),
            None if shared.sender_gone => Poll::Ready(None),
            None => {
                shared.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// The next event if there is one now.
    pub fn try_recv(&mut self) -> Option<WatchedEvent> {
        lock(&self.shared).next()
    }

    /// Events waiting now: queued, and nodes held back.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn queued(&self) -> (usize, usize) {
        let shared = lock(&self.shared);
        (shared.events.len(), shared.events.held_keys())
    }
}

impl Shared {
    fn next(&mut self) -> Option<WatchedEvent> {
        self.events.pop().or_else(|| self.last.take())
    }
}

impl Drop for EventReceiver {
    fn drop(&mut self) {
        let mut shared = lock(&self.shared);
        shared.receiver_gone = true;
        shared.events.clear();
        shared.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EventType::{NodeChildrenChanged, NodeCreated, NodeDataChanged, NodeDeleted};

    fn ev(event_type: EventType, path: &str) -> WatchedEvent {
        WatchedEvent {
            event_type,
            state: SessionState::Connected,
            path: path.into(),
        }
    }

    fn drain(rx: &mut EventReceiver) -> Vec<(EventType, String)> {
        std::iter::from_fn(|| rx.try_recv())
            .map(|e| (e.event_type, e.path))
            .collect()
    }

    fn pairs(list: &[(EventType, &str)]) -> Vec<(EventType, String)> {
        list.iter().map(|(t, p)| (*t, p.to_string())).collect()
    }

    #[test]
    fn under_the_bound_events_pass_as_they_are() {
        let (tx, mut rx) = channel(4);
        for e in [
            ev(NodeCreated, "/a"),
            ev(NodeDataChanged, "/a"),
            ev(NodeDeleted, "/a"),
        ] {
            tx.send(e).unwrap();
        }
        assert_eq!(
            drain(&mut rx),
            pairs(&[
                (NodeCreated, "/a"),
                (NodeDataChanged, "/a"),
                (NodeDeleted, "/a")
            ])
        );
    }

    #[test]
    fn past_the_bound_changes_are_folded_per_node_and_come_after_the_queue() {
        let (tx, mut rx) = channel(2);
        tx.send(ev(NodeDataChanged, "/q1")).unwrap();
        tx.send(ev(NodeDataChanged, "/q2")).unwrap();
        // Full: a million changes of one node, and a few of others.
        for _ in 0..1_000_000 {
            tx.send(ev(NodeDataChanged, "/busy")).unwrap();
        }
        tx.send(ev(NodeCreated, "/new")).unwrap();
        tx.send(ev(NodeDeleted, "/gone")).unwrap();
        tx.send(ev(NodeCreated, "/brief")).unwrap();
        tx.send(ev(NodeDeleted, "/brief")).unwrap();
        tx.send(ev(NodeDeleted, "/again")).unwrap();
        tx.send(ev(NodeCreated, "/again")).unwrap();
        tx.send(ev(NodeChildrenChanged, "/busy")).unwrap();
        assert_eq!(rx.queued(), (2, 4), "two queued, four nodes held back");
        assert_eq!(
            drain(&mut rx),
            pairs(&[
                (NodeDataChanged, "/q1"),
                (NodeDataChanged, "/q2"),
                (NodeDeleted, "/again"),
                (NodeCreated, "/again"),
                (NodeDataChanged, "/busy"),
                (NodeChildrenChanged, "/busy"),
                (NodeDeleted, "/gone"),
                (NodeCreated, "/new"),
            ])
        );
        // Caught up: events queue again.
        tx.send(ev(NodeDataChanged, "/later")).unwrap();
        assert_eq!(rx.queued(), (1, 0));
        assert_eq!(drain(&mut rx), pairs(&[(NodeDataChanged, "/later")]));
    }

    /// While anything is held back, new events join it, even with room in the queue: none
    /// may overtake an older change of its node.
    #[test]
    fn nothing_overtakes_what_is_held_back() {
        let (tx, mut rx) = channel(1);
        tx.send(ev(NodeDataChanged, "/a")).unwrap();
        tx.send(ev(NodeDeleted, "/a")).unwrap();
        assert_eq!(rx.try_recv().unwrap().event_type, NodeDataChanged);
        // The queue has room now; the deletion is still held back.
        tx.send(ev(NodeCreated, "/a")).unwrap();
        assert_eq!(
            drain(&mut rx),
            pairs(&[(NodeDeleted, "/a"), (NodeCreated, "/a")])
        );
    }

    #[test]
    fn held_back_changes_come_in_chunks_of_the_bound() {
        let (tx, mut rx) = channel(3);
        for i in 0..10 {
            tx.send(ev(NodeCreated, &format!("/n{i}"))).unwrap();
        }
        assert_eq!(rx.queued(), (3, 7));
        for _ in 0..3 {
            rx.try_recv().unwrap();
        }
        rx.try_recv().unwrap();
        assert_eq!(rx.queued(), (2, 4), "refilled to the bound only");
        assert_eq!(drain(&mut rx).len(), 6);
    }

    #[test]
    fn the_last_event_comes_after_everything_and_the_stream_ends() {
        let (tx, mut rx) = channel(1);
        tx.send(ev(NodeDataChanged, "/a")).unwrap();
        tx.send(ev(NodeDataChanged, "/b")).unwrap();
        tx.send(WatchedEvent::session(SessionState::Expired, "/"))
            .unwrap();
        drop(tx);
        let got = drain(&mut rx);
        assert_eq!(
            got,
            pairs(&[
                (NodeDataChanged, "/a"),
                (NodeDataChanged, "/b"),
                (EventType::None, "/")
            ])
        );
        struct NoopWake;
        impl std::task::Wake for NoopWake {
            fn wake(self: Arc<Self>) {}
        }
        let waker = Waker::from(Arc::new(NoopWake));
        assert_eq!(
            rx.poll_recv(&mut Context::from_waker(&waker)),
            Poll::Ready(None)
        );
    }

    #[test]
    fn a_dropped_receiver_closes_the_stream_and_frees_what_it_held() {
        let (tx, rx) = channel(8);
        tx.send(ev(NodeDataChanged, "/a")).unwrap();
        assert!(!tx.is_closed());
        drop(rx);
        assert!(tx.is_closed());
        assert!(tx.send(ev(NodeDataChanged, "/a")).is_err());
    }
}
