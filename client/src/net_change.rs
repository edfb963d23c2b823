//! How one node changed over a stretch its watcher did not see, folded from the events of the
//! stretch or from two reads: the rule both a reconnect (reporting missed changes) and a slow
//! consumer's event queue (folding what it has not read) report changes by.

use zookeeper_jute::EventType;

/// How one node changed over a stretch its watcher did not see (cut off from the server, or
/// reading too slowly), and the events that report it: once per kind, a node created in the
/// stretch as `NodeCreated` only, one deleted and created again as `NodeDeleted` then
/// `NodeCreated`, one that came and went as nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct NetChange {
    /// Present before the stretch.
    before: bool,
    /// Present after it.
    after: bool,
    /// Deleted and created again in between.
    replaced: bool,
    data: bool,
    children: bool,
}

impl NetChange {
    /// The change that starts with `event` (a node event); the event tells whether the node
    /// was there before it.
    pub fn starting_with(event: EventType) -> NetChange {
        let before = event != EventType::NodeCreated;
        let mut change = NetChange {
            before,
            after: before,
            ..NetChange::default()
        };
        change.then(event);
        change
    }

    /// A node that was there (`before`) or not, and is there (`after`) or not, with nothing
    /// else known of it.
    pub fn presence(before: bool, after: bool) -> NetChange {
        NetChange {
            before,
            after,
            ..NetChange::default()
        }
    }

    /// A node there before and after, deleted and created again in between (`replaced`), its
    /// data or its children changed.
    pub fn stayed(replaced: bool, data: bool, children: bool) -> NetChange {
        NetChange {
            before: true,
            after: true,
            replaced,
            data,
            children,
        }
    }

    /// Adds the next event of the stretch.
    pub fn then(&mut self, event: EventType) {
        match event {
            EventType::NodeCreated => {
                self.replaced |= self.before;
                self.after = true;
            }
            EventType::NodeDeleted => self.after = false,
            EventType::NodeDataChanged => self.data = true,
            EventType::NodeChildrenChanged => self.children = true,
            _ => {}
        }
    }

    /// Whether there is nothing to report (a node that came and went).
    pub fn is_nothing(&self) -> bool {
        match (self.before, self.after) {
            (false, false) => true,
            (true, true) => !self.replaced && !self.data && !self.children,
            _ => false,
        }
    }

    /// The events that report the change, in the order a server could have sent them.
    pub fn events(&self) -> Vec<EventType> {
        match (self.before, self.after) {
            (false, false) => vec![],
            (false, true) => vec![EventType::NodeCreated],
            (true, false) => vec![EventType::NodeDeleted],
            (true, true) if self.replaced => vec![EventType::NodeDeleted, EventType::NodeCreated],
            (true, true) => {
                let mut events = vec![];
                if self.data {
                    events.push(EventType::NodeDataChanged);
                }
                if self.children {
                    events.push(EventType::NodeChildrenChanged);
                }
                events
            }
        }
    }
}
