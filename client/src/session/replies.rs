//! Routing what the server sends once connected: notifications to the watch registry, pings,
//! out-of-band auth replies, and ordered replies matched against the pending FIFO.

use std::time::Instant;

use bytes::Bytes;
use tracing::{debug, trace, warn};
use zookeeper_jute::{xid, Decode, ErrorCode, EventType, ReplyHeader, WatcherEvent, WatcherType};

use super::pending::Pending;
use super::watches::{FollowUp, Touched};
use super::Session;
use crate::ensemble_config::CONFIG_NODE;
use crate::error::{Error, ErrorKind};
use crate::packet::{RawReply, WatchRegistration};
use crate::path::validate_path;
use crate::state::SessionState;

impl Session {
    pub(super) fn on_reply(&mut self, mut frame: Bytes, now: Instant) {
        let header = match ReplyHeader::decode(&mut frame) {
            Ok(h) => h,
            Err(e) => return self.protocol_error(now, &e.to_string()),
        };
        if header.xid <= 0 || self.is_sasl_reply(header.xid) {
            // Handed out now: the answers decided before it go first.
            self.answers.send_all();
        }
        // A login's own reply goes to the login even when it carries this code: a server that
        // requires SASL answers a refused login so, and the operator must read that the
        // login was refused, not that none was made.
        if header.err == ErrorCode::SessionClosedRequireSaslAuth && !self.is_sasl_reply(header.xid)
        {
            // The server requires a login (`zookeeper.enforce.auth.enabled`) that this session
            // did not make, answers any request (pings too) with this and drops the
            // connection. Every reconnect would go the same way while the state read
            // `Connected`: the session is over, as when a login is refused.
            warn!(
                xid = header.xid,
                "the server requires SASL authentication; ending the session"
            );
            return self.terminate(SessionState::AuthFailed);
        }
        match header.xid {
            xid::NOTIFICATION => {
                let event = match WatcherEvent::decode(&mut frame) {
                    Ok(e) => e,
                    Err(e) => return self.protocol_error(now, &e.to_string()),
                };
                trace!(?event.event_type, path = %event.path, "watch event");
                if let Some(reason) = self.unusable_notification(&event) {
                    warn!(?event.event_type, path = %event.path, reason, "notification dropped");
                    return;
                }
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
            x if x > 0 && self.is_sasl_reply(x) => self.on_sasl_reply(&header, frame, now),
            x if x > 0 => self.on_ordered_reply(header, frame, now),
            other => self.protocol_error(now, &format!("reply with unexpected xid {other}")),
        }
    }

    /// Why a notification cannot be delivered, if it cannot: servers send only node events,
    /// on valid paths inside the chroot (or the configuration node). Anything else would reach watchers as an event that
    /// never happened (a client-only type even tells a stream that a live watch has ended).
    fn unusable_notification(&self, event: &WatcherEvent) -> Option<&'static str> {
        if !matches!(
            event.event_type,
            EventType::NodeCreated
                | EventType::NodeDeleted
                | EventType::NodeDataChanged
                | EventType::NodeChildrenChanged
        ) {
            return Some("not an event type servers send");
        }
        if validate_path(&event.path).is_err() {
            return Some("malformed path");
        }
        // The configuration node is watched at its server path whatever the chroot.
        if self.cfg.chroot.strip_ref(&event.path).is_none() && event.path != CONFIG_NODE {
            return Some("path outside the chroot");
        }
        None
    }

    /// The header of a reply over the incoming limit, whose `size`-byte body is being skipped:
    /// the request it answers fails with `ReplyTooLarge`, and nothing else does.
    pub(super) fn on_oversized_reply(&mut self, mut head: Bytes, size: usize, now: Instant) {
        self.answers.send_all();
        let max = self.cfg.max_incoming_frame;
        let header = match ReplyHeader::decode(&mut head) {
            Ok(h) => h,
            Err(e) => return self.protocol_error(now, &e.to_string()),
        };
        if header.xid == xid::NOTIFICATION {
            // Only a node below a recursive watch can have a path that long (a watch is set
            // only on a path whose events fit the limit). The event cannot be delivered, and
            // the watches it may concern would go on as if it had not happened: they end,
            // and say so.
            let prefix = notification_path_prefix(&head);
            warn!(
                size,
                max,
                path_start = %String::from_utf8_lossy(&prefix[..prefix.len().min(200)]),
                "notification over the incoming limit: the recursive watches it may concern end"
            );
            self.watches.end_unreadable(&prefix, &self.cfg.chroot);
            return;
        }
        let front = self.pending.front_xid();
        if header.xid <= 0 || front != Some(header.xid) {
            let reason = format!(
                "reply xid {} of {size} bytes matches no pending request",
                header.xid
            );
            return self.protocol_error(now, &reason);
        }
        let (entry, sent) = self.pending.pop_front().expect("front checked above");
        // The server took the request, however large its answer: it touched the session.
        self.acknowledged(sent);
        if header.zxid > self.last_zxid {
            self.last_zxid = header.zxid;
        }
        warn!(
            xid = header.xid,
            size, max, "reply over the incoming limit skipped"
        );
        let err: Error = ErrorKind::ReplyTooLarge { size, max }.into();
        match entry {
            Pending::User { reply, write, .. } => {
                self.completed += 1;
                if let Some(reply) = reply {
                    // A write the server answered with success was applied; its caller only
                    // cannot read the reply.
                    let _ = reply.send(Err(err.unanswered(write && header.err == ErrorCode::Ok)));
                }
            }
            Pending::Learn { read, .. } => self.on_learn_too_large(read, err),
            Pending::SetWatches { .. } | Pending::Close { .. } => {
                self.protocol_error(now, "a reply without a body over the incoming limit")
            }
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
        // The state first: a caller woken on another thread by the failure reads it at once.
        self.terminate(SessionState::AuthFailed);
        if let Some(reply) = auth.reply {
            self.completed += 1;
            let _ = reply.send(Err(ErrorKind::AuthFailed.into()));
        }
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
        if !matches!(entry, Pending::User { watch: None, .. }) {
            // What follows may hand out events or replies held for their watches: the
            // answers decided before go first.
            self.answers.send_all();
        }
        match entry {
            Pending::User {
                xid,
                reply,
                watch,
                caller_here,
                ..
            } => {
                self.completed += 1;
                self.completed_here += usize::from(caller_here);
                debug!(xid, err = ?header.err, "request completed");
                if header.err == ErrorCode::Ok {
                    let raw = RawReply {
                        zxid: header.zxid,
                        body,
                    };
                    let held = watch.and_then(|watch| self.register_watch(watch, true));
                    // A caller whose deadline passed was answered already; the watch stays set
                    // as the server set it.
                    match (held, reply) {
                        (Some((path, recursive)), Some(reply)) => {
                            self.watches.hold_reply(&path, recursive, (reply, raw))
                        }
                        (None, Some(reply)) => self.answers.push(reply, Ok(raw)),
                        (_, None) => {}
                    }
                } else {
                    if header.err == ErrorCode::NoNode {
                        if let Some(watch) = watch {
                            self.register_watch(watch, false);
                        }
                    }
                    if let Some(reply) = reply {
                        self.answers.push(reply, Err(Error::from_code(header.err)));
                    }
                    if header.err == ErrorCode::SessionExpired {
                        self.terminate(SessionState::Expired);
                    }
                }
            }
            Pending::SetWatches { reconnect, .. } => {
                if header.err != ErrorCode::Ok {
                    warn!(err = ?header.err, "setWatches failed");
                }
                if reconnect {
                    self.watches.reregistered();
                }
            }
            Pending::Close { .. } => self.terminate(SessionState::Closed),
            Pending::Learn { read, .. } => self.on_learn_reply(read, header, body),
        }
    }

    /// Records a watch the server set: `ok` says the reply succeeded, else it was `NONODE`
    /// (where only `exists` leaves a watch behind). Returns the persistent watch whose reply
    /// must wait until its node or subtree is read.
    ///
    /// Then sets again on the server what the request took off it there (see
    /// `WatchRegistry::displaced`).
    pub(super) fn register_watch(
        &mut self,
        watch: WatchRegistration,
        ok: bool,
    ) -> Option<(String, bool)> {
        let (path, touched) = match (watch, ok) {
            (WatchRegistration::Data(path, tx), true) => {
                self.watches.add_data(path.clone(), tx);
                (path, Touched::Data)
            }
            (WatchRegistration::Exists(path, tx), true) => {
                self.watches.add_data(path.clone(), tx);
                (path, Touched::Data)
            }
            (WatchRegistration::Exists(path, tx), false) => {
                self.watches.add_exist(path.clone(), tx);
                (path, Touched::Data)
            }
            (WatchRegistration::Child(path, tx), true) => {
                self.watches.add_child(path.clone(), tx);
                (path, Touched::Children)
            }
            (
                WatchRegistration::Persistent {
                    path,
                    recursive,
                    tx,
                },
                true,
            ) => {
                let learn = self.watches.add_persistent(path.clone(), recursive, tx);
                let held = self.learn(path.clone(), learn);
                if !recursive {
                    // It took both tables, and so the place of a recursive watch there.
                    self.set_again(self.watches.displaced(&path, Touched::Persistent));
                }
                return held.then_some((path, recursive));
            }
            (WatchRegistration::Remove(path, watcher_type), true) => {
                self.watches.remove(&path, watcher_type, &self.cfg.chroot);
                let touched = match watcher_type {
                    WatcherType::Data => Touched::Data,
                    WatcherType::Children => Touched::Children,
                    _ => Touched::RemovedPersistent,
                };
                (path, touched)
            }
            _ => return None,
        };
        self.set_again(self.watches.displaced(&path, touched));
        None
    }

    fn set_again(&mut self, follow: Vec<FollowUp>) {
        for read in follow {
            self.follow_up(read);
        }
    }
}

/// The start of the path of a notification read only as far as `body` (type, state, then the
/// path's length and bytes); empty when even that is cut short.
fn notification_path_prefix(body: &[u8]) -> Vec<u8> {
    body.get(12..).map_or_else(Vec::new, <[u8]>::to_vec)
}
