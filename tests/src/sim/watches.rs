//! The model's watch tables, kept as the server keeps them: two tables (data and child), a
//! watcher per connection with one mode per path and table, one-shot watches removed as they
//! fire, recursive watches firing for descendants but never for child lists, and one event
//! per connection per change whatever number of its watches match.

use std::collections::{BTreeMap, BTreeSet};

use zookeeper_jute::EventType;

use super::tree::parent_of;

/// A connection of the model server.
pub(crate) type ConnId = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Standard,
    Persistent,
    Recursive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Table {
    Data,
    Child,
}

#[derive(Debug, Default)]
pub(crate) struct Watches {
    data: BTreeMap<String, BTreeMap<ConnId, Mode>>,
    child: BTreeMap<String, BTreeMap<ConnId, Mode>>,
}

impl Watches {
    fn table(&mut self, table: Table) -> &mut BTreeMap<String, BTreeMap<ConnId, Mode>> {
        match table {
            Table::Data => &mut self.data,
            Table::Child => &mut self.child,
        }
    }

    /// Registers a watch. A persistent mode replaces a one-shot one; a one-shot watch leaves
    /// a persistent one as it is.
    pub(crate) fn add(&mut self, table: Table, path: &str, conn: ConnId, mode: Mode) {
        let entry = self.table(table).entry(path.to_owned()).or_default();
        match entry.get(&conn) {
            Some(Mode::Persistent | Mode::Recursive) if mode == Mode::Standard => {}
            _ => {
                entry.insert(conn, mode);
            }
        }
    }

    /// `addWatch`: persistent watches go in both tables.
    pub(crate) fn add_persistent(&mut self, path: &str, conn: ConnId, recursive: bool) {
        let mode = if recursive {
            Mode::Recursive
        } else {
            Mode::Persistent
        };
        self.add(Table::Data, path, conn, mode);
        self.add(Table::Child, path, conn, mode);
    }

    /// Fires `event` on `path` in `table`; returns the connections to notify, in order, less
    /// those in `suppress` (already told of this change by the other table).
    pub(crate) fn trigger(
        &mut self,
        table: Table,
        path: &str,
        event: EventType,
        suppress: &BTreeSet<ConnId>,
    ) -> BTreeSet<ConnId> {
        let mut to = BTreeSet::new();
        let tab = self.table(table);
        let mut at = path.to_owned();
        let mut own = true;
        loop {
            if let Some(watchers) = tab.get_mut(&at) {
                watchers.retain(|&conn, &mut mode| match mode {
                    Mode::Recursive => {
                        if event != EventType::NodeChildrenChanged {
                            to.insert(conn);
                        }
                        true
                    }
                    _ if own => {
                        to.insert(conn);
                        mode == Mode::Persistent
                    }
                    _ => true,
                });
                if watchers.is_empty() {
                    tab.remove(&at);
                }
            }
            if at == "/" {
                break;
            }
            at = parent_of(&at).to_owned();
            own = false;
        }
        to.retain(|c| !suppress.contains(c));
        to
    }

    /// Removes every watch of a closed connection.
    pub(crate) fn drop_connection(&mut self, conn: ConnId) {
        for table in [&mut self.data, &mut self.child] {
            table.retain(|_, watchers| {
                watchers.remove(&conn);
                !watchers.is_empty()
            });
        }
    }

    /// `removeWatches`: removes `conn`'s watches on `path` of the kinds asked for (1 child,
    /// 2 data, 3 any); false if it had none.
    pub(crate) fn remove(&mut self, path: &str, conn: ConnId, kind: i32) -> bool {
        let mut removed = false;
        let tables: &[Table] = match kind {
            1 => &[Table::Child],
            2 => &[Table::Data],
            _ => &[Table::Data, Table::Child],
        };
        for &table in tables {
            let tab = self.table(table);
            if let Some(watchers) = tab.get_mut(path) {
                let persistent_too = kind == 3;
                if let Some(mode) = watchers.get(&conn) {
                    if *mode == Mode::Standard || persistent_too {
                        watchers.remove(&conn);
                        removed = true;
                    }
                }
                if watchers.is_empty() {
                    tab.remove(path);
                }
            }
        }
        removed
    }

    /// Whether `conn` watches `path` in `table` (any mode).
    pub(crate) fn has(&self, table: Table, path: &str, conn: ConnId) -> bool {
        let tab = match table {
            Table::Data => &self.data,
            Table::Child => &self.child,
        };
        tab.get(path).is_some_and(|w| w.contains_key(&conn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shot_fires_once_persistent_stays_recursive_skips_child_lists() {
        let mut w = Watches::default();
        let none = BTreeSet::new();
        w.add(Table::Data, "/a", 1, Mode::Standard);
        w.add_persistent("/a", 2, false);
        w.add_persistent("/", 3, true);
        let fired = w.trigger(Table::Data, "/a", EventType::NodeDataChanged, &none);
        assert_eq!(fired, BTreeSet::from([1, 2, 3]));
        let fired = w.trigger(Table::Data, "/a", EventType::NodeDataChanged, &none);
        assert_eq!(fired, BTreeSet::from([2, 3]));
        let fired = w.trigger(Table::Child, "/a", EventType::NodeChildrenChanged, &none);
        assert_eq!(fired, BTreeSet::from([2]));
        // A one-shot watch on a parent does not fire for a child's change.
        w.add(Table::Data, "/", 4, Mode::Standard);
        let fired = w.trigger(Table::Data, "/a", EventType::NodeDataChanged, &none);
        assert_eq!(fired, BTreeSet::from([2, 3]));
    }
}
