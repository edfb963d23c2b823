//! Connection life cycle: attempts and backoff, the handshake and what follows it (auth
//! replay, watch restoration, held requests), read-only probing, loss and termination.

use std::time::{Duration, Instant};

use bytes::Bytes;
use tracing::field::display;
use tracing::{debug, info, warn};

use super::pending::PendingAuth;
use super::{handshake, hosts};
use super::{Action, Phase, Probe, Session, PROBE_MIN};
use crate::connect_string::HostPort;
use crate::error::ErrorKind;
use crate::metrics::{self, Loss};
use crate::packet::detach;
use crate::secret::Secret;
use crate::state::SessionState;

impl Session {
    pub(super) fn start_attempt(&mut self, now: Instant) {
        let (_, host) = self.hosts.next_host();
        self.start_attempt_to(host, now);
    }

    pub(super) fn start_attempt_to(&mut self, host: HostPort, now: Instant) {
        debug!(host = %host.to_addr_string(), "connecting");
        metrics::connection_attempt();
        self.epoch += 1;
        self.frames.reset();
        self.out.clear();
        self.current_host = Some(host.clone());
        self.actions.push_back(Action::Connect(host));
        self.attempt_allowed = self.attempt_timeout(now);
        self.phase = Phase::Connecting {
            deadline: now + self.attempt_allowed,
        };
    }

    pub(super) fn drop_connection(&mut self) {
        self.probe = None;
        self.sasl = None;
        self.moving_to = None;
        self.epoch += 1;
        self.frames.reset();
        self.out.clear();
        self.actions.push_back(Action::Disconnect);
    }

    /// Gives up on the handshake under way, if its request went out: the connection is set
    /// apart for the answer, so that a session the server creates for it all the same is
    /// closed rather than left to expire (a fleet starting at once against a loaded server
    /// left it thousands). The caller drops the connection next.
    pub(super) fn orphan_handshake(&mut self) {
        if matches!(self.phase, Phase::Handshaking { .. }) && self.out.is_empty() {
            debug!("handshake given up: its answer is awaited apart, to close its session");
            self.actions.push_back(Action::Orphan {
                wait: self.cfg.session_timeout,
            });
        }
    }

    pub(super) fn attempt_failed(&mut self, now: Instant, reason: &str) {
        if let Some(host) = &self.current_host {
            self.state_tx.info.record_attempt_failure(host, reason);
        }
        self.tls_failures_in_a_row = 0;
        // No session was taken back (nothing listening, no answer, or the connection closed
        // before the handshake's reply): while the session may live, come back soon, so that
        // a short outage ends before a holder's suspend limit.
        let cap = if self.session_id != 0 {
            hosts::live_session_cap(self.timeout())
        } else {
            hosts::BACKOFF_MAX
        };
        self.drop_connection();
        let delay = self.hosts.failed(&mut self.rng, cap);
        if delay.is_zero() {
            self.start_attempt(now);
        } else {
            self.phase = Phase::Backoff { until: now + delay };
        }
    }

    pub(super) fn connection_lost(&mut self, now: Instant, class: Loss, reason: &str) {
        self.connection_lost_to(now, class, reason, None)
    }

    /// Drops the connection, fails what was in flight, and reconnects: to `to` at once, or to
    /// the next server, at once unless the connection was short-lived (see `hosts`).
    pub(super) fn connection_lost_to(
        &mut self,
        now: Instant,
        class: Loss,
        reason: &str,
        to: Option<HostPort>,
    ) {
        let host = self
            .current_host
            .as_ref()
            .map(|h| display(h.to_addr_string()));
        warn!(reason, host, "connection lost");
        metrics::connection_lost(class);
        // A move that was waiting for replies goes where it meant to go.
        let to = to.or_else(|| self.moving_to.take());
        self.tls_failures_in_a_row = 0;
        self.drop_connection();
        self.ping_sent = None;
        self.completed += self.pending.fail_all(&ErrorKind::ConnectionLoss.into());
        self.watches.abandon_reads();
        self.set_state(SessionState::Disconnected);
        if self.cfg.fail_fast {
            for packet in self.unsent.drain(..) {
                self.completed += 1;
                packet.fail(ErrorKind::ConnectionLoss.into());
            }
        }
        match to {
            Some(host) => self.start_attempt_to(host, now),
            // At once after a healthy connection; after one that did not last, a pause.
            None => {
                let delay = self.hosts.lost(now, &mut self.rng);
                if delay.is_zero() {
                    self.start_attempt(now);
                } else {
                    debug!(
                        ?delay,
                        "the connection did not last: pausing before the next"
                    );
                    self.phase = Phase::Backoff { until: now + delay };
                }
            }
        }
    }

    pub(super) fn protocol_error(&mut self, now: Instant, reason: &str) {
        // What was answered before the error is the callers' before the failures after it.
        self.answers.send_all();
        warn!(reason, "protocol error");
        match self.phase {
            Phase::Connected => self.connection_lost(now, Loss::ProtocolError, reason),
            Phase::Closing { .. } => self.terminate(SessionState::Closed),
            Phase::Connecting { .. } | Phase::Handshaking { .. } => {
                self.attempt_failed(now, reason)
            }
            _ => {}
        }
    }

    /// Ends the session where it stands, for a task that will never run it again (dropped
    /// unfinished when its runtime shut down): as far as its handles can tell, it is closed.
    /// Nothing for a session already ended.
    pub(crate) fn abandon(&mut self) {
        self.terminate(SessionState::Closed);
    }

    pub(super) fn terminate(&mut self, state: SessionState) {
        self.answers.send_all();
        if self.phase == Phase::Terminated {
            return;
        }
        self.lease.end();
        self.state_tx.info.set_lease(None);
        self.set_state(state);
        self.phase = Phase::Terminated;
        self.drop_connection();
        let err = self.terminal_error();
        self.completed += self.pending.fail_all(&err);
        for packet in self.unsent.drain(..) {
            self.completed += 1;
            packet.fail(err.clone());
        }
        self.watches.terminate(state, &self.cfg.chroot);
        self.notify_close_waiters();
    }

    pub(super) fn notify_close_waiters(&mut self) {
        for done in self.close_waiters.drain(..) {
            let _ = done.send(());
        }
    }

    pub(super) fn on_connect_response(&mut self, mut frame: Bytes, now: Instant) {
        let response = match handshake::read_connect_response(&mut frame) {
            Ok(r) => r,
            Err(e) => return self.protocol_error(now, &e.to_string()),
        };
        if response.timeout <= 0 && response.read_only == Some(true) && self.sent_session_id != 0 {
            // A read-only member only knows its own local sessions: its "expired" for a session
            // of the ensemble is not authoritative (3.8 answers so for any global session it
            // has not seen). Try another server; local expiry still bounds the search.
            let reason = "read-only server does not know the session";
            debug!("{reason}: trying another");
            return self.attempt_failed(now, reason);
        }
        if response.timeout <= 0 {
            warn!("server reports the session expired");
            return self.terminate(SessionState::Expired);
        }
        if self.sent_session_id != 0 && response.session_id != self.sent_session_id {
            return self.protocol_error(now, "server answered with another session id");
        }
        if self.session_id != 0 && response.session_id != self.session_id {
            info!(
                old = %crate::state::SessionId(self.session_id),
                new = %crate::state::SessionId(response.session_id),
                "the read-only session is replaced by a session of the ensemble"
            );
        }
        if response.session_id != self.session_id {
            // Log lines carry the id through the session task's span, once.
            tracing::Span::current().record(
                "session_id",
                tracing::field::display(crate::state::SessionId(response.session_id)),
            );
        }
        self.session_id = response.session_id;
        self.passwd = Secret::new(detach(response.passwd));
        self.negotiated = Some(Duration::from_millis(response.timeout as u64));
        self.read_only_conn = response.read_only == Some(true);
        if self.read_only_conn {
            if self.hosts.len() > 1 {
                self.probe = Some(Probe {
                    at: now + PROBE_MIN,
                    interval: PROBE_MIN,
                    in_flight: false,
                });
            }
        } else {
            self.seen_rw = true;
        }
        self.last_heard = Some(now);
        self.hosts.connected(now);
        metrics::connection_established(self.sent_session_id != 0);
        self.state_tx
            .info
            .record_servers(None, self.current_host.as_ref());
        self.tls_failures_in_a_row = 0;
        self.state_tx
            .info
            .failures
            .send_if_modified(|f| std::mem::take(&mut f.every_server_tls));
        self.state_tx.info.record(
            self.session_id,
            Duration::from_millis(response.timeout as u64),
            &self.passwd,
        );
        self.phase = Phase::Connected;
        self.ping_sent = None;
        // The server revalidated the session when it took the handshake, and nothing else is
        // sent while handshaking: `last_send` is when the handshake left.
        let timeout = Duration::from_millis(response.timeout as u64);
        self.lease
            .negotiated(self.session_id, timeout, self.read_only_conn);
        self.lease.acknowledged(self.last_send);
        self.state_tx.info.set_lease(self.lease.deadline());
        info!(
            timeout_ms = response.timeout,
            read_only = self.read_only_conn,
            "session established"
        );
        if !self.start_sasl(now) {
            self.connection_ready(now);
        }
    }

    /// The connection is ready for requests (handshake and any SASL login done): replays,
    /// watches and held requests go out, and the state turns connected once every identity
    /// is back in place.
    pub(super) fn connection_ready(&mut self, now: Instant) {
        self.prime(now);
        if self.auth_replays == 0 {
            self.set_connected_state();
        }
    }

    /// While on a read-only server, asks the next other server whether it is read-write.
    pub(super) fn maybe_probe(&mut self, now: Instant) {
        let Some(probe) = self.probe else { return };
        if probe.in_flight || now < probe.at {
            return;
        }
        let mut host = self.hosts.next_host().1;
        if Some(&host) == self.current_host.as_ref() {
            host = self.hosts.next_host().1;
        }
        debug!(host = %host.to_addr_string(), "probing for a read-write server");
        self.probe = Some(Probe {
            in_flight: true,
            ..probe
        });
        self.actions.push_back(Action::Probe(host));
    }

    pub(super) fn set_connected_state(&mut self) {
        self.set_state(if self.read_only_conn {
            SessionState::ConnectedReadOnly
        } else {
            SessionState::Connected
        });
    }

    /// After a handshake: identities first, then watches, then the requests that waited.
    pub(super) fn prime(&mut self, now: Instant) {
        self.auth_replays = self.auths.len();
        for (scheme, auth) in self.auths.clone() {
            handshake::write_auth(&mut self.out, &scheme, &auth);
            self.pending.auths.push_back(PendingAuth {
                scheme,
                auth,
                reply: None,
            });
        }
        let wanted = self.watches.wanted();
        let relearn = (wanted.persistent.clone(), wanted.recursive.clone());
        if !wanted.is_empty() {
            // Counted before any answer can come: they are answered on a later read.
            let frames = self.send_set_watches(wanted, true, now);
            debug!(frames, "re-registering watches");
            self.watches.reregistering(frames);
        }
        self.relearn(relearn.0, relearn.1);
        self.last_send = now;
        while let Some(packet) = self.unsent.pop_front() {
            if packet.envelope.reply.is_closed() {
                self.completed += 1;
                continue;
            }
            self.send_packet(packet, now);
        }
        // Their deadlines, if any, are followed in flight now.
        self.unsent_deadline = None;
    }
}
