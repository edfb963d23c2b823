//! Errors say where: each family of failure, produced by a real server (or refused before
//! sending), names the operation and the path as the caller gave it in its message.

mod common;

use common::client;
use zookeeper_tokio::{
    perms, Acl, CreateMode, CreateOptions, Error, ErrorKind, Id, MultiOp, ReadOp, ReadResult,
};

fn persistent() -> CreateOptions {
    CreateOptions::persistent()
}

/// The message, with the operation and path checked against their accessors.
fn located(err: &Error, operation: &str, path: &str) -> String {
    assert_eq!(err.operation(), Some(operation), "{err:?}");
    assert_eq!(err.path(), Some(path), "{err:?}");
    err.to_string()
}

#[tokio::test]
async fn no_node_names_the_create_and_its_path() {
    let c = client("errors_no_node").await;
    let err = c
        .create("/x/missing/child", b"", &persistent())
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::NoNode);
    assert_eq!(
        located(&err, "create", "/x/missing/child"),
        "create /x/missing/child: node does not exist"
    );

    let err = c.get_data("/absent").await.unwrap_err();
    assert_eq!(
        located(&err, "get_data", "/absent"),
        "get_data /absent: node does not exist"
    );
    let err = c
        .get_children_and_watch("/absent")
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "get_children_and_watch /absent: node does not exist"
    );
}

#[tokio::test]
async fn node_exists_names_the_create() {
    let c = client("errors_node_exists").await;
    c.create("/a", b"", &persistent()).await.unwrap();
    let err = c.create("/a", b"", &persistent()).await.unwrap_err();
    assert_eq!(err, ErrorKind::NodeExists);
    assert_eq!(
        located(&err, "create", "/a"),
        "create /a: node already exists"
    );
}

#[tokio::test]
async fn bad_version_names_set_data_and_delete() {
    let c = client("errors_bad_version").await;
    c.create("/v", b"", &persistent()).await.unwrap();
    let err = c.set_data("/v", b"x", Some(3)).await.unwrap_err();
    assert_eq!(err, ErrorKind::BadVersion);
    assert_eq!(
        located(&err, "set_data", "/v"),
        "set_data /v: version mismatch"
    );
    let err = c.delete("/v", Some(3)).await.unwrap_err();
    assert_eq!(err, ErrorKind::BadVersion);
    assert_eq!(located(&err, "delete", "/v"), "delete /v: version mismatch");
}

#[tokio::test]
async fn not_empty_names_the_delete() {
    let c = client("errors_not_empty").await;
    c.create("/p", b"", &persistent()).await.unwrap();
    c.create("/p/kid", b"", &persistent()).await.unwrap();
    let err = c.delete("/p", None).await.unwrap_err();
    assert_eq!(err, ErrorKind::NotEmpty);
    assert_eq!(
        located(&err, "delete", "/p"),
        "delete /p: node has children"
    );
}

#[tokio::test]
async fn no_auth_names_the_refused_write() {
    let c = client("errors_no_auth").await;
    let read_only = vec![Acl {
        perms: perms::READ,
        id: Id::anyone(),
    }];
    c.create("/ro", b"", &persistent().acl(read_only))
        .await
        .unwrap();
    let err = c.set_data("/ro", b"x", None).await.unwrap_err();
    assert_eq!(err, ErrorKind::NoAuth);
    assert_eq!(
        located(&err, "set_data", "/ro"),
        "set_data /ro: not authorised by the node's ACL"
    );
    let err = c.create("/ro/kid", b"", &persistent()).await.unwrap_err();
    assert_eq!(
        located(&err, "create", "/ro/kid"),
        "create /ro/kid: not authorised by the node's ACL"
    );
}

#[tokio::test]
async fn a_failed_multi_names_the_failing_operation() {
    let c = client("errors_multi").await;
    c.create("/m", b"", &persistent()).await.unwrap();
    let err = c
        .multi(vec![
            MultiOp::create("/m/new", b"", &persistent()),
            MultiOp::create("/m", b"", &persistent()),
            MultiOp::delete("/m/new", None),
        ])
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ErrorKind::MultiFailed {
            index: 1,
            code: zookeeper_tokio::ErrorCode::NodeExists
        }
    );
    assert_eq!((err.operation(), err.path()), (Some("multi"), None));
    assert_eq!(
        err.to_string(),
        "multi: operation 1 (create /m) failed: node already exists"
    );
    let (index, cause) = err.multi_cause().expect("the failing operation");
    assert_eq!(index, 1);
    assert_eq!(cause, ErrorKind::NodeExists);
    assert_eq!(
        located(&cause, "create", "/m"),
        "create /m: node already exists"
    );
    // Nothing applied.
    assert!(c.exists("/m/new").await.unwrap().is_none());

    let err = c.multi(vec![MultiOp::check("/m", 7)]).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "multi: operation 0 (check /m) failed: version mismatch"
    );
}

#[tokio::test]
async fn failed_reads_of_a_multi_read_name_themselves() {
    let c = client("errors_multi_read").await;
    c.create("/r", b"", &persistent()).await.unwrap();
    let results = c
        .multi_read(vec![ReadOp::get_data("/r"), ReadOp::get_children("/gone")])
        .await
        .unwrap();
    match &results[1] {
        ReadResult::Error(e) => {
            assert_eq!(*e, ErrorKind::NoNode);
            assert_eq!(
                located(e, "get_children", "/gone"),
                "get_children /gone: node does not exist"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn errors_found_before_sending_name_the_operation() {
    let c = client("errors_before_sending").await;
    let err = c.get_data("relative").await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidPath { .. }),
        "{err:?}"
    );
    // The kind's message quotes the path already; it is not repeated.
    assert_eq!(
        located(&err, "get_data", "relative"),
        "get_data: invalid path \"relative\": path must start with '/'"
    );

    let err = c
        .create(
            "/ttl",
            b"",
            &CreateOptions::new(CreateMode::PersistentWithTtl),
        )
        .await
        .unwrap_err();
    assert_eq!(
        located(&err, "create", "/ttl"),
        "create /ttl: invalid argument: mode PersistentWithTtl needs a TTL"
    );

    let too_big = vec![0u8; 1_048_576];
    let err = c.set_data("/big", &too_big, None).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::DataTooLarge { .. }),
        "{err:?}"
    );
    assert!(
        located(&err, "set_data", "/big").starts_with("set_data /big: request of "),
        "{err}"
    );

    // In a multi, the operation refused is named by its index.
    let err = c
        .multi(vec![
            MultiOp::create("/fine", b"", &persistent()),
            MultiOp::delete("no/slash", None),
        ])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "multi: operation 1 (delete) failed: invalid path \"no/slash\": path must start with '/'"
    );
    let (index, cause) = err.multi_cause().expect("the refused operation");
    assert_eq!(index, 1);
    assert_eq!(located(&cause, "delete", "no/slash"), cause.to_string());

    // Nothing reached the server.
    assert!(c.exists("/fine").await.unwrap().is_none());
}

#[tokio::test]
async fn a_chrooted_client_reports_its_own_paths() {
    let c = client("errors_chroot").await;
    let root = c.chroot().expect("the test client is chrooted").to_owned();
    let err = c
        .create("/missing/child", b"", &persistent())
        .await
        .unwrap_err();
    assert_eq!(
        located(&err, "create", "/missing/child"),
        "create /missing/child: node does not exist"
    );
    c.create("/m", b"", &persistent()).await.unwrap();
    let err = c
        .multi(vec![MultiOp::create("/m", b"", &persistent())])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "multi: operation 0 (create /m) failed: node already exists"
    );
    assert!(!format!("{err} {err:?}").contains(&root), "{err:?}");
}

#[tokio::test]
async fn a_create_under_a_missing_chroot_names_the_chroot() {
    let chroot = zookeeper_testkit::unique_chroot("errors_missing_chroot");
    let server = zookeeper_testkit::shared_server();
    let c = zookeeper_tokio::Client::connect(&server.connect_string_with_chroot(&chroot))
        .await
        .unwrap();
    let err = c.create("/config", b"", &persistent()).await.unwrap_err();
    assert_eq!(err, ErrorKind::NoNode);
    assert_eq!(
        located(&err, "create", "/config"),
        format!("create /config: node does not exist: the chroot {chroot} does not exist")
    );
    // Deeper down, the missing parent may be below the chroot: nothing is claimed.
    let err = c.create("/a/b", b"", &persistent()).await.unwrap_err();
    assert_eq!(err.to_string(), "create /a/b: node does not exist");
}

#[tokio::test]
async fn a_scheme_in_the_connect_string_is_refused_as_such() {
    let err = zookeeper_tokio::Client::connect("zk://127.0.0.1:2181")
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidConnectString { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("has no scheme"), "{err}");
    assert!(!err.to_string().contains("chroot"), "{err}");
}

#[tokio::test]
async fn a_connect_timeout_cut_short_by_the_session_timeout_says_so() {
    // A port that accepts connections (the kernel's backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let err = zookeeper_tokio::Client::builder(&addr)
        .session_timeout(std::time::Duration::from_millis(1))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Connect(_)), "{err:?}");
    assert!(
        err.to_string()
            .contains("the connect timeout defaults to the session timeout (1ms)"),
        "{err}"
    );
    // Given, the connect timeout is the caller's own: no rule to name.
    let err = zookeeper_tokio::Client::builder(&addr)
        .session_timeout(std::time::Duration::from_millis(1))
        .connect_timeout(std::time::Duration::from_millis(50))
        .connect()
        .await
        .unwrap_err();
    assert!(!err.to_string().contains("defaults"), "{err}");
}
