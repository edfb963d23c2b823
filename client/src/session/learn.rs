//! The session's own reads behind persistent watches: the watched node or subtree is read when
//! the watch is set, to learn it, and again after every reconnect, to report what changed
//! while the client was cut off (see `watch_memo`).
//!
//! The reads go out after the `setWatches` batches, so the server has already re-registered the
//! watches when it answers them: a change after a read arrives as a live event, a change before
//! it shows in the read.

use std::time::Instant;

use bytes::Bytes;
use tracing::{debug, warn};
use zookeeper_jute::{
    encode_request_frame, Decode, ErrorCode, ExistsRequest, ExistsResponse, GetChildren2Request,
    GetChildren2Response, ReplyHeader, Request, WatcherType,
};

use super::handshake;
use super::pending::{LearnRead, Pending};
use super::watches::{FollowUp, Learn, WatchSet};
use super::{Phase, Session};
use crate::error::Error;

impl Session {
    /// Reads what must be read for a persistent watch just set on `path`; true when the
    /// `addWatch` reply must wait for the answer.
    pub(super) fn learn(&mut self, path: String, what: Learn) -> bool {
        if self.phase != Phase::Connected {
            return false;
        }
        match what {
            Learn::Nothing => false,
            Learn::Walk => true,
            Learn::Node => {
                self.read_node(path);
                true
            }
            Learn::Subtree => {
                self.start_walk(path);
                true
            }
        }
    }

    /// After a reconnect: reads every persistent watch's node and walks every recursive
    /// watch's subtree.
    pub(super) fn relearn(&mut self, persistent: Vec<String>, recursive: Vec<String>) {
        for path in persistent {
            self.read_node(path);
        }
        for root in recursive {
            self.start_walk(root);
        }
    }

    /// Makes a request that a live event calls for.
    pub(super) fn follow_up(&mut self, read: FollowUp) {
        if self.phase != Phase::Connected {
            return;
        }
        match read {
            FollowUp::Node(path) => self.read_node(path),
            FollowUp::Stat { root, path } => self.send_learn_read(LearnRead::Stat { root, path }),
            FollowUp::Restore { path, recursive } => self.restore(path, recursive),
            FollowUp::Oneshots(path) => self.set_oneshots_again(path),
        }
    }

    /// Sets the one-shot watches on `path` again, as a reconnect would: the server fires any
    /// whose node changed since the last zxid the session saw.
    fn set_oneshots_again(&mut self, path: String) {
        let set = self.watches.oneshots_on(&path);
        if set.is_empty() {
            return;
        }
        debug!(path, "setting one-shot watches again");
        self.send_set_watches(set, false, self.last_recv);
    }

    /// Sends `set` in `setWatches` frames with the last zxid the session saw, sent at `now`;
    /// `reconnect` for those that set every watch again after a reconnect. Returns how many
    /// frames went.
    pub(super) fn send_set_watches(
        &mut self,
        set: WatchSet,
        reconnect: bool,
        now: Instant,
    ) -> usize {
        let batches =
            handshake::set_watches_batches(set, self.last_zxid, self.cfg.set_watches_limit());
        let frames = batches.len();
        for request in batches {
            let xid = self.next_xid();
            encode_request_frame(&mut self.out, xid, &request);
            self.pending
                .push(Pending::SetWatches { xid, reconnect }, now);
        }
        frames
    }

    /// Sets a persistent watch the server dropped again, then reads what it watches: as after
    /// a reconnect, the read reports what changed while the watch was not set.
    fn restore(&mut self, path: String, recursive: bool) {
        debug!(
            path,
            recursive, "setting a persistent watch the server dropped again"
        );
        let set = if recursive {
            WatchSet {
                recursive: vec![path.clone()],
                ..WatchSet::default()
            }
        } else {
            WatchSet {
                persistent: vec![path.clone()],
                ..WatchSet::default()
            }
        };
        self.send_set_watches(set, false, self.last_recv);
        if recursive {
            self.start_walk(path);
        } else {
            self.read_node(path);
        }
    }

    fn read_node(&mut self, path: String) {
        if let Some(tag) = self.watches.start_node_read(&path) {
            self.send_learn_read(LearnRead::Node { path, tag });
        }
    }

    fn start_walk(&mut self, root: String) {
        if let Some(tag) = self.watches.start_walk(&root, self.last_zxid) {
            let path = root.clone();
            self.send_learn_read(LearnRead::Listing { root, tag, path });
        }
    }

    fn send_learn_read(&mut self, read: LearnRead) {
        let xid = self.next_xid();
        let request = match &read {
            LearnRead::Node { path, .. } | LearnRead::Stat { path, .. } => {
                Request::Exists(ExistsRequest {
                    path: path.clone(),
                    watch: false,
                })
            }
            LearnRead::Listing { path, .. } => Request::GetChildren2(GetChildren2Request {
                path: path.clone(),
                watch: false,
            }),
        };
        encode_request_frame(&mut self.out, xid, &request);
        // These reads are made while a frame is handled, so they leave at its arrival time.
        self.pending
            .push(Pending::Learn { xid, read }, self.last_recv);
    }

    /// One of the session's own reads got a reply over the incoming limit: the `add_watch`
    /// calls waiting for it fail with `err`; a walk goes on without that node.
    pub(super) fn on_learn_too_large(&mut self, read: LearnRead, err: Error) {
        warn!(?read, %err, "a read behind a persistent watch is over the incoming limit");
        match read {
            LearnRead::Listing { root, tag, .. } => {
                // What changed below that node cannot be known: the watch ends, and says so,
                // rather than going on without it (a walk after a reconnect met it).
                self.watches.fail_held(&root, true, &err);
                if self.watches.is_walk(&root, tag) {
                    self.watches
                        .remove(&root, WatcherType::PersistentRecursive, &self.cfg.chroot);
                }
            }
            LearnRead::Node { path, .. } => self.watches.fail_held(&path, false, &err),
            LearnRead::Stat { .. } => {}
        }
    }

    /// The reply to one of the session's own reads.
    pub(super) fn on_learn_reply(&mut self, read: LearnRead, header: ReplyHeader, mut body: Bytes) {
        let chroot = &self.cfg.chroot;
        match (read, header.err) {
            (LearnRead::Node { path, tag }, ErrorCode::NoNode) => {
                self.watches.learn_node(&path, tag, None, chroot)
            }
            (LearnRead::Node { path, tag }, ErrorCode::Ok) => {
                match ExistsResponse::decode(&mut body) {
                    Ok(r) => self.watches.learn_node(&path, tag, Some(&r.stat), chroot),
                    Err(e) => warn!(%e, path, "undecodable exists reply: nothing learned"),
                }
            }
            (LearnRead::Stat { root, path }, ErrorCode::Ok) => {
                match ExistsResponse::decode(&mut body) {
                    Ok(r) => self.watches.learn_stat(&root, &path, &r.stat),
                    Err(e) => warn!(%e, path, "undecodable exists reply: nothing learned"),
                }
            }
            (LearnRead::Listing { root, tag, path }, ErrorCode::NoNode) => {
                let visit = self.watches.learn_listing(&root, tag, &path, None, chroot);
                debug_assert!(visit.is_empty());
            }
            (LearnRead::Listing { root, tag, path }, ErrorCode::Ok) => {
                let listing = match GetChildren2Response::decode(&mut body) {
                    Ok(r) => r,
                    Err(e) => {
                        warn!(%e, path, "undecodable getChildren2 reply: nothing learned");
                        return self.watches.skip_listing(&root, tag, &path);
                    }
                };
                let visit = self.watches.learn_listing(
                    &root,
                    tag,
                    &path,
                    Some((listing.children.as_slice(), &listing.stat)),
                    chroot,
                );
                for path in visit {
                    self.send_learn_read(LearnRead::Listing {
                        root: root.clone(),
                        tag,
                        path,
                    });
                }
            }
            (read, err) => {
                // Unreadable (an ACL, say): nothing is learned, and nothing reported.
                debug!(?err, ?read, "cannot read a persistently watched node");
                if let LearnRead::Listing { root, tag, path } = read {
                    self.watches.skip_listing(&root, tag, &path);
                }
            }
        }
    }
}
