//! Routing what the server sends once connected: notifications to the watch registry, pings,
//! out-of-band auth replies, and ordered replies matched against the pending FIFO.

use std::time::Instant;

use bytes::Bytes;
use tracing::{debug, trace, warn};
use zookeeper_jute::{xid, Decode, ErrorCode, ReplyHeader, WatcherEvent};

use super::pending::Pending;
use super::Session;
use crate::error::{Error, ErrorKind};
use crate::packet::{RawReply, WatchRegistration};
use crate::state::SessionState;

impl Session {
    pub(super) fn on_reply(&mut self, mut frame: Bytes, now: Instant) {
        let header = match ReplyHeader::decode(&mut frame) {
            Ok(h) => h,
            Err(e) => return self.protocol_error(now, &e.to_string()),
        };
        match header.xid {
            xid::NOTIFICATION => {
                let event = match WatcherEvent::decode(&mut frame) {
                    Ok(e) => e,
                    Err(e) => return self.protocol_error(now, &e.to_string()),
                };
                trace!(?event.event_type, path = %event.path, "watch event");
                let follow = self.watches.dispatch(
                    event.event_type,
                    &event.path,
                    header.zxid,
                    &self.cfg.chroot,
                );
                for read in follow {
                    self.follow_up(read);
                }
            }
            xid::PING => {
                if let Some(sent) = self.ping_sent.take() {
                    self.acknowledged(sent);
                }
            }
            xid::AUTH => self.on_auth_reply(header, now),
            x if x > 0 => self.on_ordered_reply(header, frame, now),
            other => self.protocol_error(now, &format!("reply with unexpected xid {other}")),
        }
    }

    pub(super) fn on_auth_reply(&mut self, header: ReplyHeader, now: Instant) {
        let Some(auth) = self.pending.auths.pop_front() else {
            return self.protocol_error(now, "auth reply with no auth pending");
        };
        if header.err == ErrorCode::Ok {
            match auth.reply {
                Some(reply) => {
                    self.completed += 1;
                    self.auths.push((auth.scheme, auth.auth));
                    let _ = reply.send(Ok(RawReply {
                        zxid: header.zxid,
                        body: Bytes::new(),
                    }));
                }
                None => {
                    self.auth_replays = self.auth_replays.saturating_sub(1);
                    if self.auth_replays == 0 {
                        self.set_connected_state();
                    }
                }
            }
            return;
        }
        warn!(scheme = auth.scheme, err = ?header.err, "authentication failed");
        if let Some(reply) = auth.reply {
            self.completed += 1;
            let _ = reply.send(Err(ErrorKind::AuthFailed.into()));
        }
        self.terminate(SessionState::AuthFailed);
    }

    pub(super) fn on_ordered_reply(&mut self, header: ReplyHeader, body: Bytes, now: Instant) {
        let Some(front) = self.pending.front_xid() else {
            return self.protocol_error(
                now,
                &format!("reply xid {} with nothing pending", header.xid),
            );
        };
        if front != header.xid {
            let reason = format!("xid out of order: expected {front}, got {}", header.xid);
            return self.protocol_error(now, &reason);
        }
        let (entry, sent) = self.pending.pop_front().expect("front checked above");
        // Whatever the answer, the server took the request: it touched the session.
        self.acknowledged(sent);
        if header.zxid > self.last_zxid {
            self.last_zxid = header.zxid;
        }
        match entry {
            Pending::User { xid, reply, watch } => {
                self.completed += 1;
                debug!(xid, err = ?header.err, "request completed");
                if header.err == ErrorCode::Ok {
                    let raw = RawReply {
                        zxid: header.zxid,
                        body,
                    };
                    match watch.and_then(|watch| self.register_watch(watch, true)) {
                        Some((path, recursive)) => {
                            self.watches.hold_reply(&path, recursive, (reply, raw))
                        }
                        None => {
                            let _ = reply.send(Ok(raw));
                        }
                    }
                } else {
                    if header.err == ErrorCode::NoNode {
                        if let Some(watch) = watch {
                            self.register_watch(watch, false);
                        }
                    }
                    let _ = reply.send(Err(Error::from_code(header.err)));
                    if header.err == ErrorCode::SessionExpired {
                        self.terminate(SessionState::Expired);
                    }
                }
            }
            Pending::SetWatches { .. } => {
                if header.err != ErrorCode::Ok {
                    warn!(err = ?header.err, "setWatches failed");
                }
            }
            Pending::Close { .. } => self.terminate(SessionState::Closed),
            Pending::Learn { read, .. } => self.on_learn_reply(read, header, body),
        }
    }

    /// Records a watch the server set: `ok` says the reply succeeded, else it was `NONODE`
    /// (where only `exists` leaves a watch behind). Returns the persistent watch whose reply
    /// must wait until its node or subtree is read.
    pub(super) fn register_watch(
        &mut self,
        watch: WatchRegistration,
        ok: bool,
    ) -> Option<(String, bool)> {
        match (watch, ok) {
            (WatchRegistration::Data(path, tx), true) => self.watches.add_data(path, tx),
            (WatchRegistration::Exists(path, tx), true) => self.watches.add_data(path, tx),
            (WatchRegistration::Exists(path, tx), false) => self.watches.add_exist(path, tx),
            (WatchRegistration::Child(path, tx), true) => self.watches.add_child(path, tx),
            (
                WatchRegistration::Persistent {
                    path,
                    recursive,
                    tx,
                },
                true,
            ) => {
                let learn = self.watches.add_persistent(path.clone(), recursive, tx);
                if self.learn(path.clone(), learn) {
                    return Some((path, recursive));
                }
            }
            (WatchRegistration::Remove(path, watcher_type), true) => {
                self.watches.remove(&path, watcher_type, &self.cfg.chroot)
            }
            _ => {}
        }
        None
    }
}
