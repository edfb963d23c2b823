//! Credentials and session passwords, which `Debug` output and logs never show.

use std::fmt;

use bytes::Bytes;

/// Bytes that must not be printed: an `auth` credential or a session password. Every struct
/// that holds one stays free to derive `Debug`.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Secret(Bytes);

impl Secret {
    pub fn new(bytes: Bytes) -> Secret {
        Secret(bytes)
    }

    pub fn copy_from(bytes: &[u8]) -> Secret {
        Secret(Bytes::copy_from_slice(bytes))
    }

    /// The bytes, for the wire or for the caller they belong to.
    pub fn expose(&self) -> &Bytes {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::BytesMut;
    use tokio::sync::oneshot;
    use zookeeper_jute::{encode_request_frame, xid, AuthPacket, OpCode, Request};

    use super::*;
    use crate::client::{Client, Inner};
    use crate::packet::{Envelope, Packet, PacketKind};
    use crate::path::Chroot;
    use crate::queue::{Request as QueuedRequest, RequestQueue};
    use crate::session::pending::PendingAuth;
    use crate::session::SessionConfig;
    use crate::state::{SessionId, StatePublisher};

    const PASSWORD: &str = "hunter2-s3cret";
    /// A session password, as Debug would escape it if it printed it.
    const SESSION_PASSWORD: &[u8; 16] = b"sixteen-byte-pw!";

    #[track_caller]
    fn assert_hidden(what: &str, printed: &str) {
        assert!(!printed.contains("hunter2"), "{what}: {printed}");
        assert!(!printed.contains("sixteen-byte"), "{what}: {printed}");
    }

    fn auth_frame() -> Bytes {
        let mut frame = BytesMut::new();
        encode_request_frame(
            &mut frame,
            xid::AUTH,
            &Request::Auth(AuthPacket {
                auth_type: 0,
                scheme: "digest".into(),
                auth: Bytes::from(format!("alice:{PASSWORD}")),
            }),
        );
        frame.freeze()
    }

    #[test]
    fn no_debug_output_shows_a_credential_or_the_session_password() {
        let builder = Client::builder("127.0.0.1:2181/app")
            .digest_auth("alice", PASSWORD)
            .auth("x-custom", PASSWORD.as_bytes())
            .session(SessionId(5), SESSION_PASSWORD);
        let printed = format!("{builder:?}");
        assert_hidden("ClientBuilder", &printed);
        assert!(printed.contains("digest"), "{printed}");

        let config = SessionConfig {
            hosts: vec![],
            chroot: Chroot::new(None),
            session_timeout: Duration::from_secs(1),
            attempt_timeout: None,
            connect_timeout: Duration::from_secs(1),
            read_only: false,
            fail_fast: false,
            max_incoming_frame: 1 << 20,
            set_watches_max_bytes: 1 << 10,
            max_frame: 1 << 20,
            max_subtree_bytes: 1 << 20,
            auth: vec![("digest".into(), Secret::copy_from(PASSWORD.as_bytes()))],
            sasl: None,
            seed: 0,
            resume: Some((5, Secret::copy_from(SESSION_PASSWORD))),
            plain: true,
        };
        assert_hidden("SessionConfig", &format!("{config:?}"));

        let credential = Secret::copy_from(format!("alice:{PASSWORD}").as_bytes());
        let (reply, _rx) = oneshot::channel();
        let packet = Packet {
            frame: auth_frame(),
            kind: PacketKind::Auth {
                scheme: "digest".into(),
                auth: credential.clone(),
            },
            envelope: Envelope::new(OpCode::Auth, reply),
        };
        assert_hidden("Packet", &format!("{packet:?}"));
        let (reply, _rx) = oneshot::channel();
        let pending = PendingAuth {
            scheme: "digest".into(),
            auth: credential.clone(),
            reply: Some(reply),
        };
        assert_hidden("PendingAuth", &format!("{pending:?}"));

        // Queued both ways: staged at call time and waiting with its own frame.
        let queue = RequestQueue::new(1);
        let (reply, _rx) = oneshot::channel();
        let frame = auth_frame();
        let _admitted = queue.submit_request(QueuedRequest {
            len: frame.len(),
            encode: move |buf: &mut BytesMut| buf.extend_from_slice(&frame),
            kind: PacketKind::Auth {
                scheme: "digest".into(),
                auth: credential.clone(),
            },
            envelope: Envelope::new(OpCode::Auth, reply),
        });
        let _waiting = queue.submit(packet);
        assert_hidden("RequestQueue", &format!("{queue:?}"));

        let (publisher, state_rx) = StatePublisher::new();
        publisher.info.record(
            5,
            Duration::from_secs(1),
            &Secret::copy_from(SESSION_PASSWORD),
        );
        assert_hidden("SessionInfo", &format!("{:?}", publisher.info));
        let client = Client::from_inner(
            Inner {
                queue,
                info: publisher.info.clone(),
                state_rx,
                publisher,
                chroot: Chroot::new(None),
                max_frame: 1 << 20,
                max_incoming_frame: 1 << 20,
                max_queued_events: 16,
                metrics: Default::default(),
                random: crate::random::Random::new(0),
            },
            None,
        );
        assert_hidden("Client", &format!("{client:?}"));
        assert_eq!(&client.session_password()[..], SESSION_PASSWORD);
    }
}
