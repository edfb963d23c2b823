//! GSSAPI (RFC 4752) on the system's MIT Kerberos through `libgssapi`: the Kerberos context
//! with mutual authentication, then the security-layer negotiation, where the client always
//! picks "no security layer" (ZooKeeper protects nothing with it) and names no separate
//! authorization identity, so the server authorizes the authenticated principal.

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE};

use super::{SaslError, SaslFactory, SaslMechanism, SaslStep};
use crate::connect_string::HostPort;

/// The "no security layer" bit of RFC 4752's layer mask.
const NO_SECURITY_LAYER: u8 = 1;

/// Which service principal to ask a ticket for: `<service>/<host>`.
#[derive(Debug, Clone)]
pub(crate) struct Gssapi {
    pub service: String,
    /// `None`: the server's host as written in the connect string.
    pub host: Option<String>,
}

impl SaslFactory for Gssapi {
    fn mechanism(&self, server: &HostPort) -> Result<Box<dyn SaslMechanism>, SaslError> {
        let host = self.host.as_deref().unwrap_or(&server.host);
        let target = format!("{}@{host}", self.service);
        let name = Name::new(target.as_bytes(), Some(&GSS_NT_HOSTBASED_SERVICE))
            .map_err(|e| SaslError(format!("GSSAPI service name {target:?}: {e}")))?;
        let flags = CtxFlags::GSS_C_MUTUAL_FLAG
            | CtxFlags::GSS_C_SEQUENCE_FLAG
            | CtxFlags::GSS_C_INTEG_FLAG
            | CtxFlags::GSS_C_CONF_FLAG;
        Ok(Box::new(GssapiLogin {
            ctx: ClientCtx::new(None, name, flags, Some(&GSS_MECH_KRB5)),
            target,
            state: State::Context,
        }))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Exchanging Kerberos context tokens.
    Context,
    /// Context established: waiting for the server's wrapped layer offer.
    LayerOffer,
    /// Layer choice sent: waiting for the server's empty final answer.
    Final,
    Done,
}

struct GssapiLogin {
    ctx: ClientCtx,
    target: String,
    state: State,
}

impl std::fmt::Debug for GssapiLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GssapiLogin")
            .field("target", &self.target)
            .field("state", &self.state)
            .finish()
    }
}

impl GssapiLogin {
    fn fail(&self, what: &str, e: impl std::fmt::Display) -> SaslError {
        SaslError(format!("GSSAPI {what} for {}: {e}", self.target))
    }
}

impl SaslMechanism for GssapiLogin {
    fn name(&self) -> &'static str {
        "GSSAPI"
    }

    fn start(&mut self) -> Result<Vec<u8>, SaslError> {
        match self.ctx.step(None, None) {
            Ok(Some(token)) => Ok(token.to_vec()),
            Ok(None) => Err(self.fail("context", "no initial token")),
            Err(e) => Err(self.fail("context", e)),
        }
    }

    fn step(&mut self, challenge: &[u8]) -> Result<SaslStep, SaslError> {
        if self.state == State::Context && self.ctx.is_complete() {
            self.state = State::LayerOffer;
        }
        match self.state {
            State::Context => {
                let token = self
                    .ctx
                    .step(Some(challenge), None)
                    .map_err(|e| self.fail("context", e))?;
                if self.ctx.is_complete() {
                    self.state = State::LayerOffer;
                }
                // An established context with nothing more to say still answers, empty: the
                // server speaks next with its layer offer.
                Ok(SaslStep::Respond(
                    token.map(|t| t.to_vec()).unwrap_or_default(),
                ))
            }
            State::LayerOffer => {
                let offer = self
                    .ctx
                    .unwrap(challenge)
                    .map_err(|e| self.fail("layer offer", e))?;
                if offer.len() != 4 {
                    return Err(
                        self.fail("layer offer", format!("{} bytes instead of 4", offer.len()))
                    );
                }
                if offer[0] & NO_SECURITY_LAYER == 0 {
                    return Err(self.fail("layer offer", "the server insists on a security layer"));
                }
                // No layer, hence no receive buffer; no authorization identity.
                let choice = [NO_SECURITY_LAYER, 0, 0, 0];
                let wrapped = self
                    .ctx
                    .wrap(false, &choice)
                    .map_err(|e| self.fail("layer choice", e))?;
                self.state = State::Final;
                Ok(SaslStep::Respond(wrapped.to_vec()))
            }
            State::Final if challenge.is_empty() => {
                self.state = State::Done;
                Ok(SaslStep::Done)
            }
            State::Final => Err(self.fail("final answer", "unexpected token")),
            State::Done => Err(self.fail("login", "challenge after completion")),
        }
    }
}
