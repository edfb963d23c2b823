//! A careless caller: every builder setting given extreme values. Each is either taken (and
//! the session then works) or refused by `connect` with a typed error naming what was wrong;
//! nothing panics, nothing hangs.

use std::time::Duration;

use zookeeper_tokio::{Client, ClientBuilder, ErrorKind, SessionId, MAX_TIMEOUT, MIN_FRAME_LIMIT};

use crate::common::within;
use crate::server::{well_behaved, FakeServer};

/// What `connect` must do with a builder.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Connects, and the session answers requests.
    Works,
    /// Connects, and a call may end at its (1 ms) request deadline with `Timeout` before its
    /// reply comes; a call without a deadline is then answered. A fast machine may answer
    /// within the deadline: `Works` is fine too.
    TimedOut,
    /// Refused before anything starts, with an `InvalidArgument`.
    Invalid,
    /// Refused as a bad connect string.
    BadConnectString,
    /// Refused as a bad path (the chroot).
    BadPath,
    /// Refused as too large to send.
    TooLarge,
    /// Taken, but no session can be set up in time with it.
    NoSession,
}

const DURATIONS: [(Duration, bool); 9] = [
    (Duration::ZERO, false),
    (Duration::from_nanos(1), false),
    (Duration::from_micros(999), false),
    (Duration::from_millis(1), true),
    (Duration::from_secs(3600), true),
    (MAX_TIMEOUT, true),
    (
        Duration::from_nanos(MAX_TIMEOUT.as_nanos() as u64 + 1),
        false,
    ),
    (Duration::from_secs(u64::MAX), false),
    (Duration::MAX, false),
];

fn cases(server: &str) -> Vec<(String, ClientBuilder, Expect)> {
    // The library's default connect timeout, 5 s, to the scripted server on this machine: a
    // setting that works must not miss it on a loaded machine, and `within`'s 10 s still
    // bounds the cases that cannot connect.
    let b = || Client::builder(server).connect_timeout(Duration::from_secs(5));
    let mut cases = vec![];
    for (d, ok) in DURATIONS {
        let taken = if ok { Expect::Works } else { Expect::Invalid };
        // A 1 ms session timeout is also the default connect timeout: too short to connect.
        let session = match (ok, d == Duration::from_millis(1)) {
            (true, true) => Expect::NoSession,
            _ => taken,
        };
        cases.push((
            format!("session_timeout({d:?})"),
            Client::builder(server).session_timeout(d),
            session,
        ));
        let connect = if d == Duration::from_millis(1) {
            Expect::NoSession
        } else {
            taken
        };
        cases.push((
            format!("connect_timeout({d:?})"),
            b().connect_timeout(d),
            connect,
        ));
        cases.push((
            format!("attempt_timeout({d:?})"),
            b().attempt_timeout(d),
            // 1 ms may or may not be enough to connect on a loaded machine: either is fine.
            if d == Duration::from_millis(1) {
                Expect::NoSession
            } else {
                taken
            },
        ));
        cases.push((
            format!("request_timeout({d:?})"),
            b().request_timeout(d),
            // A round trip within 1 ms is not something a loaded machine promises.
            if d == Duration::from_millis(1) {
                Expect::TimedOut
            } else {
                taken
            },
        ));
    }
    cases.push((
        "request_timeout(None)".into(),
        b().request_timeout(None),
        Expect::Works,
    ));
    for (n, outstanding, frame) in [
        (0, Expect::Invalid, Expect::Invalid),
        (1, Expect::Works, Expect::Invalid),
        (MIN_FRAME_LIMIT - 1, Expect::Works, Expect::Invalid),
        (MIN_FRAME_LIMIT, Expect::Works, Expect::Works),
        (i32::MAX as usize, Expect::Works, Expect::Works),
        (i32::MAX as usize + 1, Expect::Works, Expect::Invalid),
        (usize::MAX, Expect::Works, Expect::Invalid),
    ] {
        cases.push((
            format!("max_outstanding({n})"),
            b().max_outstanding(n),
            outstanding,
        ));
        cases.push((format!("max_frame({n})"), b().max_frame(n), frame));
        cases.push((
            format!("max_incoming_frame({n})"),
            b().max_incoming_frame(n),
            frame,
        ));
        cases.push((
            format!("set_watches_max_bytes({n})"),
            b().set_watches_max_bytes(n),
            if n == 0 {
                Expect::Invalid
            } else {
                Expect::Works
            },
        ));
    }
    let huge_path = "/a".repeat(1 << 20);
    for (chroot, expect) in [
        ("", Expect::BadPath),
        ("relative", Expect::BadPath),
        ("/trailing/", Expect::BadPath),
        ("/a\0b", Expect::BadPath),
        ("/", Expect::Works),
        ("/app", Expect::Works),
        (huge_path.as_str(), Expect::Invalid),
    ] {
        cases.push((
            format!("chroot({:.20?})", chroot),
            b().chroot(chroot),
            expect,
        ));
    }
    let huge_hosts = format!("{server},").repeat(100_000);
    for (connect, expect) in [
        (String::new(), Expect::BadConnectString),
        (",,,".into(), Expect::BadConnectString),
        (":".into(), Expect::BadConnectString),
        ("[".into(), Expect::BadConnectString),
        ("[::1".into(), Expect::BadConnectString),
        ("host:99999".into(), Expect::BadConnectString),
        ("host:-1".into(), Expect::BadConnectString),
        ("host:0".into(), Expect::BadConnectString),
        ("\0".into(), Expect::NoSession),
        ("/app".into(), Expect::BadConnectString),
        (format!("{server}//"), Expect::BadConnectString),
        // Taken as the host "😀:1:2", which resolves to nothing.
        ("\u{1F600}:1:2:3".into(), Expect::NoSession),
        (
            format!("{server}/{}", "a/".repeat(1 << 19)),
            Expect::BadConnectString,
        ),
        (huge_hosts, Expect::Works),
    ] {
        cases.push((
            format!("connect string {:.40?}", connect),
            Client::builder(&connect).connect_timeout(Duration::from_secs(5)),
            expect,
        ));
    }
    let huge = vec![b'x'; 2 << 20];
    cases.push(("auth(\"\", ..)".into(), b().auth("", b"x"), Expect::Invalid));
    cases.push((
        "auth(.., 2 MiB)".into(),
        b().auth("digest", &huge),
        Expect::TooLarge,
    ));
    cases.push((
        "digest_auth(\"\", \"\")".into(),
        b().digest_auth("", ""),
        Expect::Works,
    ));
    for (password, expect) in [
        (&[][..], Expect::Invalid),
        (&[1; 15][..], Expect::Invalid),
        (&[1; 17][..], Expect::Invalid),
        (&huge[..], Expect::Invalid),
        (&[1; 16][..], Expect::Works),
    ] {
        cases.push((
            format!("session(i64::MIN, {} bytes)", password.len()),
            b().session(SessionId(i64::MIN), password),
            expect,
        ));
    }
    cases
}

#[tokio::test]
async fn every_setting_is_taken_or_refused_with_a_typed_error() {
    crate::common::init_tracing();
    let server = FakeServer::start(well_behaved);
    let mut wrong = vec![];
    for (name, builder, expect) in cases(&server.connect_string()) {
        let outcome = within(&name, builder.connect()).await;
        let got = match &outcome {
            Ok(client) => {
                // The session task is alive and answers: nothing panicked inside it.
                match within(&name, client.exists("/x")).await {
                    Ok(None) => Expect::Works,
                    Err(e) if *e.kind() == ErrorKind::Timeout => {
                        let patient = client
                            .with_request_timeout(None)
                            .expect("a timeout in range");
                        match within(&name, patient.exists("/x")).await {
                            Ok(None) => Expect::TimedOut,
                            other => panic!("{name}: timed out, then exists gave {other:?}"),
                        }
                    }
                    other => panic!("{name}: connected, but exists gave {other:?}"),
                }
            }
            Err(e) => match e.kind() {
                ErrorKind::InvalidArgument(_) => Expect::Invalid,
                ErrorKind::InvalidConnectString { .. } => Expect::BadConnectString,
                ErrorKind::InvalidPath { .. } => Expect::BadPath,
                ErrorKind::DataTooLarge { .. } => Expect::TooLarge,
                ErrorKind::Connect(_) => Expect::NoSession,
                other => panic!("{name}: untyped outcome {other:?}"),
            },
        };
        // The tightest timeouts may just make it on a fast machine.
        let acceptable = got == expect
            || (matches!(expect, Expect::NoSession | Expect::TimedOut) && got == Expect::Works);
        if !acceptable {
            wrong.push(format!("{name}: expected {expect:?}, got {outcome:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
