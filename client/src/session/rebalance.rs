//! Replacing the server list at run time, and moving to another server when the new list
//! calls for it (see [`move_plan`](super::hosts::move_plan)).
//!
//! A move is graceful: requests made meanwhile are held, the ones in flight get their
//! replies on the old connection, and only then does the client disconnect and resume the
//! session on the chosen server, so a rebalance costs no request a `ConnectionLoss`.

use std::time::Instant;

use tracing::info;

use super::{Phase, Session};
use crate::connect_string::HostPort;
use crate::metrics::{self, Loss};
use crate::state::SessionState;

impl Session {
    /// Replaces the server list; moves to another server if the rebalancing draw says so.
    pub fn update_hosts(&mut self, hosts: Vec<HostPort>, now: Instant) {
        if hosts.is_empty() || self.phase == Phase::Terminated {
            return;
        }
        let connected = matches!(self.phase, Phase::Connected);
        let current = self.current_host.clone().filter(|_| connected);
        let target = self.hosts.replace(hosts, current.as_ref(), &mut self.rng);
        self.state_tx
            .info
            .record_servers(Some(self.hosts.hosts()), current.as_ref());
        info!(
            servers = self.hosts.len(),
            moving_to = target.as_ref().map(|h| h.to_addr_string()),
            "server list replaced"
        );
        if let Some(target) = target {
            self.moving_to = Some(target);
            self.try_move(now);
        }
    }

    /// Moves once nothing is in flight on the current connection.
    pub(super) fn try_move(&mut self, now: Instant) {
        if self.phase != Phase::Connected || self.sasl_in_progress() || !self.pending.is_empty() {
            return;
        }
        let Some(target) = self.moving_to.take() else {
            return;
        };
        info!(to = %target.to_addr_string(), "moving to rebalance the ensemble");
        metrics::connection_lost(Loss::Moved);
        self.drop_connection();
        self.ping_sent = None;
        self.watches.abandon_reads();
        self.set_state(SessionState::Disconnected);
        self.start_attempt_to(target, now);
    }
}
