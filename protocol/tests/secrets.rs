//! `Debug` of every record and frame that carries a credential leaves the credential out: a
//! record printed in a log line or a panic message must not give away a password.

use bytes::Bytes;
use zookeeper_jute::*;

const SECRET: &str = "hunter2-s3cret";

#[track_caller]
fn assert_hidden(what: &str, printed: String) {
    assert!(
        !printed.contains(SECRET),
        "{what} shows the secret: {printed}"
    );
    // Nor as bytes in Debug's escaped form.
    assert!(
        !printed.contains("hunter2"),
        "{what} shows the secret: {printed}"
    );
    assert!(printed.contains("redacted"), "{what}: {printed}");
}

fn secret() -> Bytes {
    Bytes::from(format!("user:{SECRET}"))
}

#[test]
fn credentials_never_show_in_debug() {
    let auth = AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: secret(),
    };
    assert_hidden("AuthPacket", format!("{auth:?}"));
    assert!(format!("{auth:?}").contains("digest"), "the scheme shows");
    let request = Request::Auth(auth);
    assert_hidden("Request::Auth", format!("{request:?}"));
    assert_hidden(
        "ClientFrame::Request",
        format!(
            "{:?}",
            ClientFrame::Request {
                xid: xid::AUTH,
                request: request.clone()
            }
        ),
    );
    assert_hidden(
        "GetSaslRequest",
        format!(
            "{:?}",
            Request::Sasl(GetSaslRequest {
                token: Some(secret())
            })
        ),
    );
    assert_hidden(
        "SetSaslResponse",
        format!(
            "{:?}",
            SetSaslResponse {
                token: Some(secret())
            }
        ),
    );
    let connect = ConnectRequest {
        session_id: 7,
        passwd: secret(),
        ..ConnectRequest::new_session(30_000, false)
    };
    assert_hidden("ConnectRequest", format!("{connect:?}"));
    assert_hidden(
        "ClientFrame::Connect",
        format!("{:?}", ClientFrame::Connect(connect)),
    );
    let response = ConnectResponse {
        protocol_version: 0,
        timeout: 30_000,
        session_id: 7,
        passwd: secret(),
        read_only: Some(false),
    };
    assert_hidden("ConnectResponse", format!("{response:?}"));
    assert_hidden(
        "ServerFrame::Connect",
        format!("{:?}", ServerFrame::Connect(response)),
    );
}

#[test]
fn the_other_fields_still_show() {
    let printed = format!(
        "{:?}",
        ConnectRequest {
            session_id: 0x1234,
            passwd: secret(),
            ..ConnectRequest::new_session(30_000, true)
        }
    );
    assert!(printed.contains("4660"), "{printed}");
    assert!(printed.contains("30000"), "{printed}");
    assert!(
        format!("{:?}", GetSaslRequest { token: None }).contains("None"),
        "an absent token shows as absent"
    );
}
