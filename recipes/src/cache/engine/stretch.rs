//! Fresh views and unordered stretches: what the engine does when the watch starts over
//! or the connection is lost, and when the client has reported everything missed.

use std::sync::Arc;

use super::{Engine, Track};

impl Engine {
    /// Starts a fresh view on a new watch: everything pending belongs to the old one.
    pub fn start_fresh(&mut self) {
        self.dirty = true;
        self.applied_g = self.received_g();
        self.queue.clear();
        self.tracks.clear();
        self.want.clear();
        self.after_stretch.clear();
        self.reads.clear();
        self.listings.clear();
        self.listed.clear();
        self.to_list.clear();
        self.undecided.clear();
        self.decided.clear();
        self.probe = None;
        self.probed = None;
        self.stretch_from = None;
        self.generation += 1;
        self.settle_from = self.applied_g;
        self.hidden_until = self.applied_g;
        self.fresh = true;
        let root = self.root.clone();
        self.tracks.insert(root.clone(), Track::new(None));
        self.undecide(&root);
        self.want_read(&root);
    }

    /// In a fresh view, every node learned of must be read once, to know whether to list it.
    pub(super) fn undecide(&mut self, path: &Arc<str>) {
        if self.fresh && !self.decided.contains(path) {
            self.undecided.insert(path.clone());
        }
    }

    /// The connection was lost (seen before the events from position `from` were taken):
    /// events from there on are unordered until [`Engine::end_stretch`].
    pub fn begin_stretch(&mut self, from: u64) {
        let from = from.clamp(self.applied_g, self.received_g());
        self.generation += 1;
        // Nothing counted from before the stretch can date a step any more.
        self.probe = None;
        if self.stretch_from.is_none() {
            for track in self.tracks.values_mut() {
                track.stretch_base = track.applied;
                for g in &track.events {
                    if *g < from {
                        track.stretch_base += 1;
                    }
                }
            }
        }
        self.stretch_from = Some(self.stretch_from.map_or(from, |f| f.min(from)));
        let start = (from - self.applied_g) as usize;
        for q in self.queue.iter_mut().skip(start) {
            q.ordered = false;
        }
    }

    /// The client has reported everything missed while cut off.
    pub fn end_stretch(&mut self) {
        self.dirty = true;
        if self.stretch_from.take().is_some() {
            self.settle_from = self.settle_from.max(self.received_g());
            self.hidden_until = self.settle_from;
        }
        for path in std::mem::take(&mut self.after_stretch) {
            self.want_read(&path);
        }
    }

    /// Reads made during a stretch may show changes whose events have not arrived: a read
    /// that can only be placed after its end is made then.
    pub(super) fn read_after_stretch(&mut self, path: &Arc<str>) {
        if self.stretch_from.is_some() {
            self.after_stretch.push(path.clone());
        } else {
            self.want_read(path);
        }
    }
}
