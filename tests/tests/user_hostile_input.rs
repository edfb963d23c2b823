//! What a service may hand the client by mistake or from its own users: paths with odd
//! Unicode, data at and past the 1 MiB limit, a node with 10,000 children and a listing past
//! the reply limit, ACLs the server refuses. The promise (client docs): nothing panics or
//! hangs, errors are typed and name the operation, the path and what was wrong, and the
//! session goes on serving afterwards.

use zookeeper_testkit::{bounded, ZkServer};
use zookeeper_tokio::{
    perms, validate_path, Acl, Client, CreateOptions, ErrorKind, Id, DEFAULT_MAX_INCOMING_FRAME,
};

/// The session still answers, on the same session.
async fn still_serving(c: &Client, session: zookeeper_tokio::SessionId) {
    bounded("exists /", c.exists("/")).await.unwrap();
    assert_eq!(c.session_id(), session, "the same session");
}

/// Each odd path either works end to end (created, listed under its exact name, read back) or
/// fails with a typed path error naming it; the client's own check and the server agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_unicode_paths_work_or_fail_typed_and_the_client_agrees_with_the_server() {
    let server = ZkServer::start().await.unwrap();
    let c = bounded("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let session = c.session_id();
    c.create("/u", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let names = [
        "a\u{0}b",     // NUL
        "\u{1}",       // control
        "\u{7f}",      // DEL
        "\u{85}",      // C1 control
        "\u{9f}",      // C1 control, last
        "\u{a0}",      // no-break space: fine
        "\u{200b}",    // zero-width space: fine
        "e\u{301}",    // combining accent (NFD)
        "\u{e9}",      // the same letter precomposed (NFC): another node
        "\u{202e}rtl", // right-to-left override
        "\u{d7ff}",    // last before the surrogates
        "\u{e000}",    // private use
        "\u{f8ff}",    // private use, last
        "\u{f900}",    // CJK compatibility
        "\u{fffd}",    // replacement character
        "\u{fff0}",    // specials
        "\u{fffe}",    // noncharacter
        "\u{1f600}",   // emoji: a surrogate pair in Java
        "\u{10ffff}",  // last code point
        ".",
        "..",
        "...",
        "zookeeper",
        " ",
    ];
    let mut report = Vec::new();
    for name in names {
        let path = format!("/u/{name}");
        let client_says = validate_path(&path);
        let created = bounded(
            "create",
            c.create(&path, name.as_bytes(), &CreateOptions::persistent()),
        )
        .await;
        match &created {
            Ok(_) => {
                assert!(client_says.is_ok());
                let (data, _) = bounded("get", c.get_data(&path)).await.unwrap();
                assert_eq!(&data[..], name.as_bytes(), "{name:?} read back");
            }
            Err(e) => {
                match e.kind() {
                    ErrorKind::InvalidPath { path: p, reason } => {
                        assert_eq!(p, &path);
                        assert!(!reason.is_empty());
                    }
                    ErrorKind::BadArguments => {}
                    other => panic!("{path:?}: untyped or wrong error {other:?} ({e})"),
                }
                assert!(e.to_string().contains("create"), "{e} names the operation");
                // The client's check must not let through what the server refuses.
                assert!(
                    client_says.is_err(),
                    "{path:?}: passed the client's check, refused by the server: {e}"
                );
            }
        }
        report.push((name, created.is_ok()));
        still_serving(&c, session).await;
    }
    let (mut listed, _) = bounded("list", c.get_children("/u")).await.unwrap();
    listed.sort();
    let mut made: Vec<String> = report
        .iter()
        .filter(|(_, ok)| *ok)
        .map(|(n, _)| n.to_string())
        .collect();
    made.sort();
    assert_eq!(listed, made, "every created name listed exactly");
    // Paths the client itself must refuse before sending.
    for bad in ["", "u", "/u/", "//", "/u//x", "/u/./x", "/u/../x"] {
        let e = c
            .create(bad, b"", &CreateOptions::persistent())
            .await
            .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::InvalidPath { .. }),
            "{bad:?}: {e:?}"
        );
    }
    // A path of 1 MiB: refused, typed, and nothing stuck.
    let long = format!("/u/{}", "x".repeat(1 << 20));
    let e = bounded("long path", c.exists(&long)).await.unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::DataTooLarge { .. }),
        "1 MiB path: {e:?}"
    );
    still_serving(&c, session).await;
}

/// Data up to the largest the client lets through is stored and read back whole; one byte more
/// is refused before sending with the sizes named; the session is unharmed either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_at_the_frame_limit_is_stored_and_read_back_and_one_byte_more_is_refused() {
    let server = ZkServer::start().await.unwrap();
    let c = bounded("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let session = c.session_id();
    let mib = vec![7u8; 1 << 20];
    let e = bounded(
        "1 MiB",
        c.create("/big", &mib, &CreateOptions::persistent()),
    )
    .await
    .unwrap_err();
    let ErrorKind::DataTooLarge { size, max } = *e.kind() else {
        panic!("1 MiB create: {e:?}")
    };
    assert!(size > max);
    assert!(e.to_string().contains("/big"), "{e} names the path");
    still_serving(&c, session).await;
    // The largest that fits.
    let fits = vec![7u8; mib.len() - (size - max)];
    bounded(
        "create at the limit",
        c.create("/big", &fits, &CreateOptions::persistent()),
    )
    .await
    .unwrap_or_else(|e| panic!("{} bytes, within the client's limit: {e}", fits.len()));
    let (data, stat) = bounded("get at the limit", c.get_data("/big"))
        .await
        .unwrap_or_else(|e| panic!("reading back {} bytes: {e}", fits.len()));
    assert_eq!(
        (data.len(), stat.data_length as usize),
        (fits.len(), fits.len())
    );
    assert!(data.iter().all(|b| *b == 7));
    // set_data, whose frame carries no ACL: its own limit, to the byte.
    let e = bounded("set 1 MiB", c.set_data("/big", &mib, None))
        .await
        .unwrap_err();
    let ErrorKind::DataTooLarge { size, max } = *e.kind() else {
        panic!("1 MiB set_data: {e:?}")
    };
    let fits = vec![8u8; mib.len() - (size - max)];
    bounded("set at the limit", c.set_data("/big", &fits, None))
        .await
        .unwrap_or_else(|e| panic!("set {} bytes: {e}", fits.len()));
    let (data, _) = bounded("get", c.get_data("/big")).await.unwrap();
    assert_eq!(data.len(), fits.len());
    let over = vec![7u8; fits.len() + 1];
    let e = bounded("set past", c.set_data("/big", &over, None))
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::DataTooLarge { .. }), "{e:?}");
    still_serving(&c, session).await;
}

/// 10,000 children are listed whole; a listing past the reply limit fails typed, names the
/// sizes, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_children_are_listed_and_a_listing_past_the_limit_fails_typed() {
    let server = ZkServer::start().await.unwrap();
    let c = bounded("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let session = c.session_id();
    c.create("/many", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.create("/wide", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    // Names of 200 bytes: 10,000 of them list as about 2 MB, past the 1 MiB reply limit.
    let pad = "n".repeat(190);
    let mut calls = Vec::new();
    for i in 0..10_000 {
        calls.push(c.create(&format!("/many/{i:05}"), b"", &CreateOptions::persistent()));
        calls.push(c.create(
            &format!("/wide/{pad}{i:05}"),
            b"",
            &CreateOptions::persistent(),
        ));
    }
    for call in calls {
        bounded("create", call).await.unwrap();
    }
    let (names, stat) = bounded("list 10,000", c.get_children("/many"))
        .await
        .unwrap();
    assert_eq!((names.len(), stat.num_children), (10_000, 10_000));
    assert_eq!(
        bounded("count", c.get_all_children_number("/many"))
            .await
            .unwrap(),
        10_000
    );
    let e = bounded("list past the limit", c.get_children("/wide"))
        .await
        .unwrap_err();
    let ErrorKind::ReplyTooLarge { size, max } = *e.kind() else {
        panic!("a 2 MB listing: {e:?}")
    };
    assert!(
        size > max && max == DEFAULT_MAX_INCOMING_FRAME,
        "{size} {max}"
    );
    assert!(e.to_string().contains("/wide"), "{e} names the path");
    still_serving(&c, session).await;
    // A client that allows larger replies reads it.
    let roomy = bounded(
        "connect roomy",
        Client::builder(&server.connect_string())
            .max_incoming_frame(4 << 20)
            .connect(),
    )
    .await
    .unwrap();
    let (names, _) = bounded("list roomy", roomy.get_children("/wide"))
        .await
        .unwrap();
    assert_eq!(names.len(), 10_000);
}

/// ACLs the server refuses fail typed as `InvalidAcl`, naming the path, and leave nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_acls_fail_typed_and_leave_nothing() {
    let server = ZkServer::start().await.unwrap();
    let c = bounded("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let session = c.session_id();
    let acl = |scheme: &str, id: &str, perms: i32| Acl {
        perms,
        id: Id {
            scheme: scheme.into(),
            id: id.into(),
        },
    };
    let cases: Vec<(&str, Vec<Acl>)> = vec![
        ("empty", vec![]),
        ("unknown scheme", vec![acl("bogus", "x", perms::ALL)]),
        (
            "digest without a hash",
            vec![acl("digest", "alice", perms::ALL)],
        ),
        (
            "ip not an address",
            vec![acl("ip", "999.1.1.1", perms::ALL)],
        ),
        ("ip bad mask", vec![acl("ip", "10.0.0.0/99", perms::ALL)]),
        ("auth with no identity", vec![acl("auth", "", perms::ALL)]),
        (
            "world not anyone",
            vec![acl("world", "someone", perms::ALL)],
        ),
    ];
    for (what, acl) in cases {
        let path = "/acl";
        let e = bounded(
            what,
            c.create(path, b"", &CreateOptions::persistent().acl(acl.clone())),
        )
        .await
        .expect_err(what);
        assert!(
            matches!(e.kind(), ErrorKind::InvalidAcl),
            "{what}: {e:?} ({e})"
        );
        assert!(e.to_string().contains(path), "{what}: {e} names the path");
        assert!(bounded("exists", c.exists(path)).await.unwrap().is_none());
        // set_acl on an existing node, the same.
        c.create("/acl-set", b"", &CreateOptions::persistent())
            .await
            .ok();
        let e = bounded(what, c.set_acl("/acl-set", acl, None))
            .await
            .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::InvalidAcl),
            "set_acl {what}: {e:?} ({e})"
        );
        still_serving(&c, session).await;
    }
    // An id the server takes as it is (a digest is any `user:hash`), odd bytes and all: it
    // comes back the same, but for the hash, which 3.8 shows only to those with ADMIN.
    let odd = vec![
        acl("digest", "\u{0}\u{202e}:\u{1f600}", perms::ALL),
        acl("world", "anyone", perms::READ),
    ];
    c.create("/odd", b"", &CreateOptions::persistent().acl(odd.clone()))
        .await
        .unwrap();
    let (mut read, _) = bounded("get_acl", c.get_acl("/odd")).await.unwrap();
    assert_eq!(read[0].id.id, "\u{0}\u{202e}:x");
    read[0].id.id = odd[0].id.id.clone();
    assert_eq!(read, odd);
    still_serving(&c, session).await;
}
