//! The SASL login that follows every handshake when the client is configured for it.
//!
//! Nothing else goes out while it runs: a server that requires SASL closes the session of a
//! client that sends any other request first (pings, auth replays and `setWatches`
//! included), so those wait, together with held user requests, until the mechanism is done.
//! The server answers `sasl` (102) at once, outside its request pipeline, with the xid of
//! the request; a refused login (`AUTHFAILED`, or `SESSIONCLOSEDREQUIRESASLAUTH`) or a
//! mechanism that cannot go on ends the session with `AuthFailed`.

use std::time::Instant;

use bytes::Bytes;
use tracing::{debug, info, warn};
use zookeeper_jute::{
    encode_request_frame, Decode, ErrorCode, GetSaslRequest, ReplyHeader, Request, SetSaslResponse,
};

use super::Session;
use crate::sasl::{SaslMechanism, SaslStep};
use crate::state::SessionState;

/// A login under way on the current connection.
pub(super) struct SaslExchange {
    mechanism: Box<dyn SaslMechanism>,
    /// The xid of the `sasl` request whose answer is awaited.
    xid: i32,
}

impl Session {
    /// After the handshake: starts the login if one is configured. Returns false when there
    /// is none, so the connection is ready at once.
    pub(super) fn start_sasl(&mut self, now: Instant) -> bool {
        let Some(factory) = self.cfg.sasl.clone() else {
            return false;
        };
        let host = self
            .current_host
            .clone()
            .unwrap_or_else(|| self.cfg.hosts[0].clone());
        let started = factory
            .mechanism(&host)
            .and_then(|mut mechanism| mechanism.start().map(|token| (mechanism, token)));
        match started {
            Ok((mechanism, token)) => {
                debug!(mechanism = mechanism.name(), "SASL login starts");
                let xid = self.send_sasl_token(token, now);
                self.sasl = Some(SaslExchange { mechanism, xid });
            }
            Err(e) => {
                warn!(reason = %e, "SASL login cannot start");
                self.terminate(SessionState::AuthFailed);
            }
        }
        true
    }

    /// True while the login of this connection runs.
    pub(super) fn sasl_in_progress(&self) -> bool {
        self.sasl.is_some()
    }

    /// True when `xid` is the current `sasl` request's.
    pub(super) fn is_sasl_reply(&self, xid: i32) -> bool {
        self.sasl.as_ref().is_some_and(|e| e.xid == xid)
    }

    /// Takes the reply to the current `sasl` request.
    pub(super) fn on_sasl_reply(&mut self, header: &ReplyHeader, mut body: Bytes, now: Instant) {
        let Some(exchange) = self.sasl.as_mut() else {
            return;
        };
        if header.err != ErrorCode::Ok {
            warn!(err = ?header.err, mechanism = exchange.mechanism.name(), "the server refused the SASL login");
            self.sasl = None;
            self.terminate(SessionState::AuthFailed);
            return;
        }
        let challenge = match SetSaslResponse::decode(&mut body) {
            Ok(r) => r.token.unwrap_or_default(),
            Err(e) => {
                self.sasl = None;
                self.protocol_error(now, &format!("sasl reply: {e}"));
                return;
            }
        };
        match exchange.mechanism.step(&challenge) {
            Ok(SaslStep::Respond(token)) => {
                let xid = self.send_sasl_token(token, now);
                if let Some(exchange) = self.sasl.as_mut() {
                    exchange.xid = xid;
                }
            }
            Ok(SaslStep::Done) => {
                info!(
                    mechanism = exchange.mechanism.name(),
                    "SASL login succeeded"
                );
                self.sasl = None;
                self.connection_ready(now);
            }
            Err(e) => {
                warn!(reason = %e, mechanism = exchange.mechanism.name(), "SASL login failed");
                self.sasl = None;
                self.terminate(SessionState::AuthFailed);
            }
        }
    }

    fn send_sasl_token(&mut self, token: Vec<u8>, now: Instant) -> i32 {
        let xid = self.next_xid();
        let request = Request::Sasl(GetSaslRequest {
            token: Some(Bytes::from(token)),
        });
        encode_request_frame(&mut self.out, xid, &request);
        self.last_send = now;
        xid
    }
}
