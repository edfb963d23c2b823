//! DIGEST-MD5 (RFC 2831) as ZooKeeper's server speaks it: authentication only (`qop=auth`),
//! `md5-sess`, UTF-8 names, the service `zookeeper` on the host `zk-sasl-md5` (the
//! server's fixed name, also its realm), and the server's `rspauth` checked before the login
//! counts as done.

use md5::{Digest as _, Md5};

use super::{random_bytes, SaslError, SaslFactory, SaslMechanism, SaslStep};
use crate::connect_string::HostPort;
use crate::secret::Secret;

/// The digest-uri ZooKeeper's server checks: its SASL protocol and fixed server name.
pub(crate) const DIGEST_URI: &str = "zookeeper/zk-sasl-md5";
/// RFC 2831 bounds a challenge to 2048 bytes; anything longer is not a DIGEST-MD5 server.
const MAX_CHALLENGE: usize = 2048;
/// The receive buffer announced (the RFC's default); no security layer uses it.
const MAXBUF: u32 = 65536;

/// DIGEST-MD5 credentials; each connection makes a [`DigestLogin`] from them.
#[derive(Debug, Clone)]
pub(crate) struct DigestMd5 {
    pub user: String,
    pub password: Secret,
}

impl SaslFactory for DigestMd5 {
    fn mechanism(&self, _host: &HostPort) -> Result<Box<dyn SaslMechanism>, SaslError> {
        let cnonce = hex(&random_bytes::<16>());
        Ok(Box::new(DigestLogin::new(
            self.user.clone(),
            self.password.clone(),
            cnonce,
        )))
    }
}

#[derive(Debug)]
enum State {
    /// Waiting for the server's challenge.
    Challenge,
    /// Response sent: waiting for `rspauth`, which must equal this.
    RspAuth(String),
    Done,
}

/// One DIGEST-MD5 login.
#[derive(Debug)]
pub(crate) struct DigestLogin {
    user: String,
    password: Secret,
    cnonce: String,
    state: State,
}

impl DigestLogin {
    pub(crate) fn new(user: String, password: Secret, cnonce: String) -> DigestLogin {
        DigestLogin {
            user,
            password,
            cnonce,
            state: State::Challenge,
        }
    }

    fn respond(&mut self, challenge: &[u8]) -> Result<SaslStep, SaslError> {
        if challenge.is_empty() {
            return Err(SaslError(
                "the server sent no DIGEST-MD5 challenge (is SASL configured on it?)".into(),
            ));
        }
        let fields = parse(challenge)?;
        let get = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        let nonce = get("nonce")
            .ok_or_else(|| SaslError("DIGEST-MD5 challenge without a nonce".into()))?
            .clone();
        if fields.iter().filter(|(k, _)| k == "nonce").count() > 1 {
            return Err(SaslError("DIGEST-MD5 challenge with two nonces".into()));
        }
        let qop_offered = get("qop").map(String::as_str).unwrap_or("auth");
        if !qop_offered.split(',').any(|q| q.trim() == "auth") {
            return Err(SaslError(format!(
                "the server offers qop {qop_offered:?}, not \"auth\""
            )));
        }
        match get("algorithm").map(String::as_str) {
            Some("md5-sess") => {}
            other => {
                return Err(SaslError(format!(
                    "DIGEST-MD5 challenge with algorithm {other:?}, not md5-sess"
                )))
            }
        }
        let utf8 = get("charset").is_some_and(|c| c.eq_ignore_ascii_case("utf-8"));
        let realm = get("realm").cloned().unwrap_or_default();
        let nc = "00000001";
        let ha1 = a1_hash(
            &self.user,
            &realm,
            self.password.expose(),
            &nonce,
            &self.cnonce,
        );
        let response = kd(
            &ha1,
            &nonce,
            nc,
            &self.cnonce,
            &format!("AUTHENTICATE:{DIGEST_URI}"),
        );
        let expected = kd(&ha1, &nonce, nc, &self.cnonce, &format!(":{DIGEST_URI}"));
        let mut out = String::new();
        if utf8 {
            out.push_str("charset=utf-8,");
        }
        out.push_str(&format!(
            "username=\"{}\",realm=\"{}\",nonce=\"{}\",nc={nc},cnonce=\"{}\",\
             digest-uri=\"{DIGEST_URI}\",maxbuf={MAXBUF},response={response},qop=auth",
            quote(&self.user),
            quote(&realm),
            quote(&nonce),
            self.cnonce
        ));
        self.state = State::RspAuth(expected);
        Ok(SaslStep::Respond(out.into_bytes()))
    }
}

impl SaslMechanism for DigestLogin {
    fn name(&self) -> &'static str {
        "DIGEST-MD5"
    }

    fn start(&mut self) -> Result<Vec<u8>, SaslError> {
        Ok(Vec::new())
    }

    fn step(&mut self, challenge: &[u8]) -> Result<SaslStep, SaslError> {
        match &self.state {
            State::Challenge => self.respond(challenge),
            State::RspAuth(expected) => {
                let fields = parse(challenge)?;
                let got = fields
                    .iter()
                    .find(|(k, _)| k == "rspauth")
                    .map(|(_, v)| v.as_str());
                if got != Some(expected.as_str()) {
                    return Err(SaslError(
                        "the server's rspauth does not prove it knows the password".into(),
                    ));
                }
                self.state = State::Done;
                Ok(SaslStep::Done)
            }
            State::Done => Err(SaslError("DIGEST-MD5 challenge after completion".into())),
        }
    }
}

/// `HEX(H(H(user:realm:password):nonce:cnonce))` for `md5-sess`, no authzid.
fn a1_hash(user: &str, realm: &str, password: &[u8], nonce: &str, cnonce: &str) -> String {
    let mut secret = Md5::new();
    secret.update(format!("{user}:{realm}:").as_bytes());
    secret.update(password);
    let inner = secret.finalize();
    let mut a1 = Md5::new();
    a1.update(inner);
    a1.update(format!(":{nonce}:{cnonce}").as_bytes());
    hex(&a1.finalize())
}

/// `HEX(KD(HEX(H(A1)), nonce:nc:cnonce:auth:HEX(H(A2))))`.
fn kd(ha1: &str, nonce: &str, nc: &str, cnonce: &str, a2: &str) -> String {
    let ha2 = hex(&Md5::digest(a2.as_bytes()));
    hex(&Md5::digest(
        format!("{ha1}:{nonce}:{nc}:{cnonce}:auth:{ha2}").as_bytes(),
    ))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn quote(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Parses `key=value,key="quoted, value",...` (RFC 2831 §7.1: optional spaces, empty list
/// elements, backslash escapes inside quotes). Keys are lower-cased.
fn parse(challenge: &[u8]) -> Result<Vec<(String, String)>, SaslError> {
    if challenge.len() > MAX_CHALLENGE {
        return Err(SaslError(format!(
            "DIGEST-MD5 challenge of {} bytes (at most {MAX_CHALLENGE})",
            challenge.len()
        )));
    }
    let text = std::str::from_utf8(challenge)
        .map_err(|_| SaslError("DIGEST-MD5 challenge is not UTF-8".into()))?;
    let bad = |why: &str| SaslError(format!("malformed DIGEST-MD5 challenge: {why}"));
    let mut fields = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(fields);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c.to_ascii_lowercase());
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') || key.is_empty() {
            return Err(bad("a field without '='"));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => value.push(chars.next().ok_or_else(|| bad("unclosed quote"))?),
                    Some(c) => value.push(c),
                    None => return Err(bad("unclosed quote")),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
            value.truncate(value.trim_end().len());
        }
        fields.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_2831_example_response_and_rspauth() {
        // The worked example of RFC 2831 §4, with its own digest-uri.
        let ha1 = a1_hash(
            "chris",
            "elwood.innosoft.com",
            b"secret",
            "OA6MG9tEQGm2hh",
            "OA6MHXh6VqTrRk",
        );
        let uri = "imap/elwood.innosoft.com";
        assert_eq!(
            kd(
                &ha1,
                "OA6MG9tEQGm2hh",
                "00000001",
                "OA6MHXh6VqTrRk",
                &format!("AUTHENTICATE:{uri}")
            ),
            "d388dad90d4bbd760a152321f2143af7"
        );
        assert_eq!(
            kd(
                &ha1,
                "OA6MG9tEQGm2hh",
                "00000001",
                "OA6MHXh6VqTrRk",
                &format!(":{uri}")
            ),
            "ea40f60335c427b5527b84dbabcdfffd"
        );
    }

    fn zookeeper_challenge() -> &'static [u8] {
        // As ZooKeeper 3.8's server sends it.
        b"realm=\"zk-sasl-md5\",nonce=\"kT8dq1vJ3Ly2z6dCZ2b0o3tRX3FG+E8pK1O5qfPh\",charset=utf-8,algorithm=md5-sess"
    }

    #[test]
    fn a_zookeeper_exchange_step_by_step() {
        let mut login = DigestLogin::new(
            "bob".into(),
            Secret::copy_from(b"bob-secret"),
            "c0ffee".into(),
        );
        assert_eq!(login.start().unwrap(), b"");
        let SaslStep::Respond(response) = login.step(zookeeper_challenge()).unwrap() else {
            panic!("no response");
        };
        let response = String::from_utf8(response).unwrap();
        let fields = parse(response.as_bytes()).unwrap();
        let field = |k: &str| fields.iter().find(|(key, _)| key == k).unwrap().1.clone();
        assert_eq!(field("username"), "bob");
        assert_eq!(field("realm"), "zk-sasl-md5");
        assert_eq!(field("digest-uri"), "zookeeper/zk-sasl-md5");
        assert_eq!(field("qop"), "auth");
        assert_eq!(field("nc"), "00000001");
        assert_eq!(field("cnonce"), "c0ffee");
        assert_eq!(field("charset"), "utf-8");
        assert!(!response.contains("bob-secret"));
        let ha1 = a1_hash(
            "bob",
            "zk-sasl-md5",
            b"bob-secret",
            "kT8dq1vJ3Ly2z6dCZ2b0o3tRX3FG+E8pK1O5qfPh",
            "c0ffee",
        );
        let nonce = "kT8dq1vJ3Ly2z6dCZ2b0o3tRX3FG+E8pK1O5qfPh";
        let rspauth = kd(&ha1, nonce, "00000001", "c0ffee", ":zookeeper/zk-sasl-md5");
        assert_eq!(
            field("response"),
            kd(
                &ha1,
                nonce,
                "00000001",
                "c0ffee",
                "AUTHENTICATE:zookeeper/zk-sasl-md5"
            )
        );
        // A server that does not know the password cannot produce rspauth.
        let mut forged = DigestLogin::new(
            "bob".into(),
            Secret::copy_from(b"bob-secret"),
            "c0ffee".into(),
        );
        forged.step(zookeeper_challenge()).unwrap();
        assert!(forged
            .step(b"rspauth=00000000000000000000000000000000")
            .is_err());
        assert_eq!(
            login.step(format!("rspauth={rspauth}").as_bytes()).unwrap(),
            SaslStep::Done
        );
        assert!(login.step(b"rspauth=x").is_err(), "nothing after done");
    }

    #[test]
    fn refuses_what_it_cannot_answer_safely() {
        let login = || DigestLogin::new("u".into(), Secret::copy_from(b"p"), "c".into());
        for challenge in [
            &b""[..],
            b"realm=\"r\"",
            b"nonce=\"n\",qop=\"auth-conf\",algorithm=md5-sess",
            b"nonce=\"n\",algorithm=md5",
            b"nonce=\"n\",nonce=\"m\",algorithm=md5-sess",
            b"nonce=\"unclosed,algorithm=md5-sess",
            b"=x",
            &[0xff, 0xfe][..],
        ] {
            assert!(login().step(challenge).is_err(), "{challenge:?}");
        }
        assert!(login().step(&[b'a'; MAX_CHALLENGE + 1]).is_err());
    }

    #[test]
    fn parser_handles_spaces_escapes_and_empty_elements() {
        let fields = parse(b" a = 1 ,, b=\"x\\\"y, z\" ,C=3").unwrap();
        assert_eq!(
            fields,
            vec![
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "x\"y, z".to_string()),
                ("c".to_string(), "3".to_string()),
            ]
        );
    }

    #[test]
    fn debug_hides_the_password() {
        let factory = DigestMd5 {
            user: "bob".into(),
            password: Secret::copy_from(b"bob-secret"),
        };
        let login = factory
            .mechanism(&HostPort {
                host: "h".into(),
                port: 1,
            })
            .unwrap();
        assert_eq!(login.name(), "DIGEST-MD5");
        assert!(!format!("{factory:?}").contains("bob-secret"));
        let digest = DigestLogin::new("bob".into(), Secret::copy_from(b"bob-secret"), "c".into());
        assert!(!format!("{digest:?}").contains("bob-secret"));
    }
}
