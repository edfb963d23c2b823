//! The SASL login in the machine, driven by a scripted mechanism: it runs before anything
//! else after every handshake, holds requests, pings and replays back until it is done, and
//! a refusal is terminal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use zookeeper_jute::{GetSaslRequest, SetSaslResponse};

use super::*;
use crate::sasl::{SaslError, SaslFactory, SaslMechanism, SaslStep};

/// Sends `hello`, answers `c1` with `r1`, and is done on `ok`.
#[derive(Debug, Default)]
struct Scripted {
    logins: AtomicUsize,
    hosts: Mutex<Vec<HostPort>>,
}

struct ScriptedLogin {
    round: usize,
}

impl SaslMechanism for ScriptedLogin {
    fn name(&self) -> &'static str {
        "SCRIPTED"
    }

    fn start(&mut self) -> Result<Vec<u8>, SaslError> {
        Ok(b"hello".to_vec())
    }

    fn step(&mut self, challenge: &[u8]) -> Result<SaslStep, SaslError> {
        self.round += 1;
        match (self.round, challenge) {
            (1, b"c1") => Ok(SaslStep::Respond(b"r1".to_vec())),
            (2, b"ok") => Ok(SaslStep::Done),
            _ => Err(SaslError(format!("unexpected {challenge:?}"))),
        }
    }
}

impl SaslFactory for Scripted {
    fn mechanism(&self, host: &HostPort) -> Result<Box<dyn SaslMechanism>, SaslError> {
        self.logins.fetch_add(1, Ordering::SeqCst);
        self.hosts.lock().unwrap().push(host.clone());
        Ok(Box::new(ScriptedLogin { round: 0 }))
    }
}

fn sasl_harness(script: &Arc<Scripted>) -> Harness {
    let mut cfg = config(1);
    cfg.sasl = Some(script.clone());
    cfg.auth = vec![("digest".into(), crate::secret::Secret::copy_from(b"u:p"))];
    Harness::new(cfg)
}

/// The `sasl` frames written since the last call, as (xid, token).
fn sasl_tokens(sent: &[Sent]) -> Vec<(i32, Vec<u8>)> {
    sent.iter()
        .filter_map(|f| match f {
            Sent::Request {
                xid,
                opcode: OpCode::Sasl,
                body,
            } => {
                let mut body = body.clone();
                let request = GetSaslRequest::decode(&mut body).unwrap();
                Some((*xid, request.token.unwrap_or_default().to_vec()))
            }
            _ => None,
        })
        .collect()
}

fn challenge(h: &mut Harness, xid: i32, err: ErrorCode, token: &[u8]) {
    let mut body = BytesMut::new();
    SetSaslResponse {
        token: Some(Bytes::copy_from_slice(token)),
    }
    .encode(&mut body);
    h.reply(xid, 0, err, &body);
}

/// Runs the scripted login to completion on the current connection.
fn log_in(h: &mut Harness) {
    let sent = h.sent();
    let tokens = sasl_tokens(&sent);
    assert_eq!(tokens.len(), 1, "{sent:?}");
    assert_eq!(tokens[0].1, b"hello");
    challenge(h, tokens[0].0, ErrorCode::Ok, b"c1");
    let sent = h.sent();
    let tokens = sasl_tokens(&sent);
    assert_eq!(tokens.len(), 1, "{sent:?}");
    assert_eq!(tokens[0].1, b"r1");
    challenge(h, tokens[0].0, ErrorCode::Ok, b"ok");
}

#[test]
fn login_goes_first_and_holds_everything_back_until_done() {
    let script = Arc::new(Scripted::default());
    let mut h = sasl_harness(&script);
    let mut early = h.get_data("/early");
    h.establish(0x42, 3000);
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "only the login goes out: {sent:?}");
    assert_eq!(sasl_tokens(&sent)[0].1, b"hello");
    let xid = sasl_tokens(&sent)[0].0;
    assert_eq!(
        h.state(),
        SessionState::Connecting,
        "not connected before the login"
    );

    // Neither a request made now nor a ping slips out while the login runs.
    let mut during = h.get_data("/during");
    h.advance(Duration::from_millis(1100));
    assert!(h.sent().is_empty(), "nothing but the login may be sent");

    challenge(&mut h, xid, ErrorCode::Ok, b"c1");
    let sent = h.sent();
    assert_eq!(sasl_tokens(&sent).len(), 1);
    assert_eq!(sent.len(), 1, "{sent:?}");
    challenge(&mut h, sasl_tokens(&sent)[0].0, ErrorCode::Ok, b"ok");

    // Done: the auth replay, then the held requests in call order.
    let sent = h.sent();
    let kinds: Vec<(i32, OpCode)> = sent
        .iter()
        .map(|f| match f {
            Sent::Request { xid, opcode, .. } => (*xid, *opcode),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds[0], (-4, OpCode::Auth));
    assert_eq!(kinds[1].1, OpCode::GetData);
    assert_eq!(kinds[2].1, OpCode::GetData);
    assert!(kinds[1].0 < kinds[2].0);
    h.reply(-4, 0, ErrorCode::Ok, &[]);
    assert_eq!(h.state(), SessionState::Connected);
    h.reply(kinds[1].0, 5, ErrorCode::Ok, &[0, 0, 0, 0]);
    assert!(result(&mut early).is_some());
    assert!(result(&mut during).is_none());
    assert_eq!(script.hosts.lock().unwrap()[0], hosts(1)[0]);
}

#[test]
fn a_refused_login_is_terminal_and_fails_held_requests() {
    for refusal in [
        ErrorCode::AuthFailed,
        ErrorCode::SessionClosedRequireSaslAuth,
    ] {
        let script = Arc::new(Scripted::default());
        let mut h = sasl_harness(&script);
        h.establish(0x42, 3000);
        let xid = sasl_tokens(&h.sent())[0].0;
        let mut held = h.get_data("/held");
        challenge(&mut h, xid, refusal, b"");
        assert_eq!(h.state(), SessionState::AuthFailed, "{refusal:?}");
        assert_eq!(result(&mut held), Some(Err(ErrorKind::AuthFailed)));
        assert!(h.s.is_terminated());
        assert!(
            !h.actions().iter().any(|a| matches!(a, Action::Connect(_))),
            "no reconnect after a refusal"
        );
        assert_eq!(script.logins.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn a_mechanism_that_cannot_go_on_ends_the_session() {
    let script = Arc::new(Scripted::default());
    let mut h = sasl_harness(&script);
    h.establish(0x42, 3000);
    let xid = sasl_tokens(&h.sent())[0].0;
    challenge(&mut h, xid, ErrorCode::Ok, b"not the script");
    assert_eq!(h.state(), SessionState::AuthFailed);
}

#[test]
fn every_reconnect_logs_in_again_before_restoring_watches() {
    let script = Arc::new(Scripted::default());
    let mut h = sasl_harness(&script);
    h.establish(0x42, 3000);
    log_in(&mut h);
    h.sent();
    h.reply(-4, 0, ErrorCode::Ok, &[]);
    assert_eq!(h.state(), SessionState::Connected);
    let (mut reply, _watcher) = h.get_data_watched("/w");
    let xid = h.xids()[0].0;
    h.reply(xid, 9, ErrorCode::Ok, &[0, 0, 0, 0]);
    assert!(result(&mut reply).is_some());

    h.s.on_disconnected(h.now, "reset");
    assert_eq!(h.state(), SessionState::Disconnected);
    h.establish(0x42, 3000);
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "the login comes before setWatches: {sent:?}");
    let xid = sasl_tokens(&sent)[0].0;
    assert_eq!(script.logins.load(Ordering::SeqCst), 2, "a fresh login");
    challenge(&mut h, xid, ErrorCode::Ok, b"c1");
    let xid = sasl_tokens(&h.sent())[0].0;
    assert_eq!(h.state(), SessionState::Disconnected);
    challenge(&mut h, xid, ErrorCode::Ok, b"ok");
    let opcodes: Vec<OpCode> = h.xids().into_iter().map(|(_, op)| op).collect();
    assert_eq!(opcodes, vec![OpCode::Auth, OpCode::SetWatches]);
    h.reply(-4, 0, ErrorCode::Ok, &[]);
    assert_eq!(h.state(), SessionState::Connected);
}

#[test]
fn a_server_silent_during_the_login_is_left_after_the_read_timeout() {
    let script = Arc::new(Scripted::default());
    let mut h = sasl_harness(&script);
    h.establish(0x42, 3000);
    assert_eq!(sasl_tokens(&h.sent()).len(), 1);
    h.advance(Duration::from_millis(2001));
    let actions = h.actions();
    assert!(
        actions.iter().any(|a| matches!(a, Action::Connect(_))),
        "{actions:?}"
    );
}

#[test]
fn a_login_that_cannot_start_is_terminal() {
    #[derive(Debug)]
    struct NoCredentials;
    impl SaslFactory for NoCredentials {
        fn mechanism(&self, _: &HostPort) -> Result<Box<dyn SaslMechanism>, SaslError> {
            Err(SaslError("no credentials".into()))
        }
    }
    let mut cfg = config(1);
    cfg.sasl = Some(Arc::new(NoCredentials));
    let mut h = Harness::new(cfg);
    h.establish(0x42, 3000);
    assert_eq!(h.state(), SessionState::AuthFailed);
}
