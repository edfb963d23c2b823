//! Every operation and its error paths against a real server.

mod common;

use std::time::Duration;

use common::{client, within};
use zookeeper_tokio::{
    perms, Acl, Client, CreateMode, CreateOptions, ErrorCode, ErrorKind, Id, MultiOp, MultiResult,
    ReadOp, ReadResult,
};

fn persistent() -> CreateOptions {
    CreateOptions::persistent()
}

#[tokio::test]
async fn create_in_every_plain_mode_returns_path_and_stat() {
    let c = client("create_modes").await;
    let (path, stat) = c.create("/p", b"data", &persistent()).await.unwrap();
    assert_eq!(path, "/p");
    assert_eq!(stat.data_length, 4);
    assert_eq!(stat.ephemeral_owner, 0);

    let (path, stat) = c
        .create("/e", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    assert_eq!(path, "/e");
    assert_eq!(stat.ephemeral_owner, c.session_id().0);

    let (s1, _) = c
        .create("/p/s-", b"", &CreateOptions::persistent_sequential())
        .await
        .unwrap();
    let (s2, stat) = c
        .create("/p/s-", b"", &CreateOptions::ephemeral_sequential())
        .await
        .unwrap();
    assert_eq!(s1, "/p/s-0000000000");
    assert_eq!(s2, "/p/s-0000000001");
    assert_eq!(stat.ephemeral_owner, c.session_id().0);

    let (path, _) = c
        .create("/c", b"", &CreateOptions::container())
        .await
        .unwrap();
    assert_eq!(path, "/c");
    let (data, stat) = c.get_data("/p").await.unwrap();
    assert_eq!(&data[..], b"data");
    assert_eq!(stat.num_children, 2);
}

#[tokio::test]
async fn create_errors_are_typed() {
    let c = client("create_errors").await;
    c.create("/a", b"", &persistent()).await.unwrap();
    assert_eq!(
        c.create("/a", b"", &persistent()).await.unwrap_err(),
        ErrorKind::NodeExists
    );
    assert_eq!(
        c.create("/missing/x", b"", &persistent())
            .await
            .unwrap_err(),
        ErrorKind::NoNode
    );
    c.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    assert_eq!(
        c.create("/eph/child", b"", &persistent())
            .await
            .unwrap_err(),
        ErrorKind::NoChildrenForEphemerals
    );
    // `auth` ids without any authenticated identity.
    let creator = CreateOptions::persistent().acl(Acl::creator_all());
    assert_eq!(
        c.create("/creator", b"", &creator).await.unwrap_err(),
        ErrorKind::InvalidAcl
    );
}

#[tokio::test]
async fn ttl_create_without_extended_types_is_unimplemented_and_the_session_goes_on() {
    let c = client("ttl_unimplemented").await;
    let ttl = CreateOptions::with_ttl(Duration::from_secs(10));
    assert_eq!(
        c.create("/t", b"", &ttl).await.unwrap_err(),
        ErrorKind::Unimplemented
    );
    c.create("/after", b"", &persistent()).await.unwrap();
}

#[tokio::test]
async fn ttl_nodes_on_a_server_with_extended_types() {
    let server = zookeeper_testkit::ZkServer::builder()
        .extended_types()
        .start()
        .await
        .unwrap();
    let c = Client::connect(&server.connect_string()).await.unwrap();
    let options = CreateOptions::with_ttl(Duration::from_secs(60));
    let (path, stat) = c.create("/ttl", b"x", &options).await.unwrap();
    assert_eq!(path, "/ttl");
    assert_eq!(stat.ephemeral_owner, 0, "servers hide the TTL marker");
    let seq =
        CreateOptions::new(CreateMode::PersistentSequentialWithTtl).ttl(Duration::from_secs(60));
    let (path, _) = c.create("/ttl/s-", b"", &seq).await.unwrap();
    assert_eq!(path, "/ttl/s-0000000000");
}

#[tokio::test]
async fn delete_with_and_without_version() {
    let c = client("delete").await;
    let (_, stat) = c.create("/d", b"", &persistent()).await.unwrap();
    assert_eq!(
        c.delete("/d", Some(stat.version + 1)).await.unwrap_err(),
        ErrorKind::BadVersion
    );
    c.delete("/d", Some(stat.version)).await.unwrap();
    assert_eq!(c.delete("/d", None).await.unwrap_err(), ErrorKind::NoNode);
    c.create("/n", b"", &persistent()).await.unwrap();
    c.create("/n/child", b"", &persistent()).await.unwrap();
    assert_eq!(c.delete("/n", None).await.unwrap_err(), ErrorKind::NotEmpty);
    c.delete("/n/child", None).await.unwrap();
    c.delete("/n", None).await.unwrap();
    assert_eq!(c.exists("/n").await, Ok(None));
}

#[tokio::test]
async fn exists_get_set_data() {
    let c = client("data").await;
    assert_eq!(c.exists("/x").await, Ok(None));
    assert_eq!(c.get_data("/x").await.unwrap_err(), ErrorKind::NoNode);
    assert_eq!(
        c.set_data("/x", b"", None).await.unwrap_err(),
        ErrorKind::NoNode
    );
    c.create("/x", b"one", &persistent()).await.unwrap();
    let stat = c.exists("/x").await.unwrap().expect("exists");
    assert_eq!(stat.version, 0);
    let stat = c.set_data("/x", b"two", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(
        c.set_data("/x", b"three", Some(0)).await.unwrap_err(),
        ErrorKind::BadVersion
    );
    let (data, stat) = c.get_data("/x").await.unwrap();
    assert_eq!((&data[..], stat.version), (&b"two"[..], 1));
    c.set_data("/x", b"", None).await.unwrap();
    assert_eq!(c.get_data("/x").await.unwrap().0.len(), 0);
}

#[tokio::test]
async fn acls_and_auth() {
    let c = client("acl").await;
    c.create("/open", b"", &persistent()).await.unwrap();
    let (acl, stat) = c.get_acl("/open").await.unwrap();
    assert_eq!(acl, Acl::open_unsafe());
    assert_eq!(stat.aversion, 0);

    let read_only = vec![Acl {
        perms: perms::READ,
        id: Id::anyone(),
    }];
    assert_eq!(
        c.set_acl("/open", read_only.clone(), Some(5))
            .await
            .unwrap_err(),
        ErrorKind::BadVersion
    );
    let stat = c
        .set_acl("/open", read_only.clone(), Some(0))
        .await
        .unwrap();
    assert_eq!(stat.aversion, 1);
    assert_eq!(
        c.set_data("/open", b"x", None).await.unwrap_err(),
        ErrorKind::NoAuth
    );
    assert_eq!(c.get_acl("/open").await.unwrap().0, read_only);
    assert_eq!(
        c.set_acl("/open", vec![], None).await.unwrap_err(),
        ErrorKind::InvalidAcl
    );
    assert_eq!(c.get_acl("/none").await.unwrap_err(), ErrorKind::NoNode);

    // Digest identity: the creator can write, another session cannot.
    c.add_auth("digest", b"alice:secret").await.unwrap();
    let creator = CreateOptions::persistent().acl(Acl::creator_all());
    c.create("/mine", b"", &creator).await.unwrap();
    c.set_data("/mine", b"ok", None).await.unwrap();
    let (acl, _) = c.get_acl("/mine").await.unwrap();
    assert_eq!(acl[0].id.scheme, "digest");
    assert!(acl[0].id.id.starts_with("alice:"));
    let who = c.who_am_i().await.unwrap();
    assert!(
        who.iter()
            .any(|i| i.auth_scheme == "digest" && i.user == "alice"),
        "{who:?}"
    );

    let other = Client::connect(&format!(
        "{}{}",
        zookeeper_testkit::shared_server().connect_string(),
        c.chroot().unwrap()
    ))
    .await
    .unwrap();
    assert_eq!(
        other.set_data("/mine", b"no", None).await.unwrap_err(),
        ErrorKind::NoAuth
    );
    let bob = Client::builder(&zookeeper_testkit::shared_server().connect_string())
        .chroot(c.chroot().unwrap())
        .digest_auth("alice", "secret")
        .connect()
        .await
        .unwrap();
    bob.set_data("/mine", b"yes", None).await.unwrap();
}

#[tokio::test]
async fn unknown_auth_scheme_fails_the_session() {
    let c = client("auth_failed").await;
    let mut state = c.state_watcher();
    assert_eq!(
        c.add_auth("no-such-scheme", b"x").await.unwrap_err(),
        ErrorKind::AuthFailed
    );
    within(
        "auth failed state",
        state.wait_for(|s| *s == zookeeper_tokio::SessionState::AuthFailed),
    )
    .await
    .unwrap();
    assert_eq!(c.get_data("/").await.unwrap_err(), ErrorKind::AuthFailed);
}

/// The caller waits off the workers (the body of `main`), woken by the session task from a
/// worker: the state it reads the moment its call failed is the one that failure reports.
#[test]
fn a_refused_auth_reads_auth_failed_the_moment_it_returns() {
    let runtime = common::multi_thread();
    for attempt in 0..30 {
        runtime.block_on(async {
            let c = client(&format!("auth_failed_state_{attempt}")).await;
            let e = c.add_auth("no-such-scheme", b"x").await.unwrap_err();
            let state = c.state();
            assert_eq!(e, ErrorKind::AuthFailed);
            assert_eq!(
                state,
                zookeeper_tokio::SessionState::AuthFailed,
                "attempt {attempt}"
            );
        });
    }
}

#[tokio::test]
async fn builder_auth_with_unknown_scheme_fails_connect() {
    let err = Client::builder(&zookeeper_testkit::shared_server().connect_string())
        .auth("no-such-scheme", b"x")
        .connect()
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::AuthFailed);
}

#[tokio::test]
async fn children_counts_sync_ephemerals() {
    let c = client("children").await;
    c.create("/parent", b"", &persistent()).await.unwrap();
    for name in ["a", "b", "c"] {
        c.create(&format!("/parent/{name}"), b"", &persistent())
            .await
            .unwrap();
    }
    c.create("/parent/a/deep", b"", &persistent())
        .await
        .unwrap();
    let (mut children, stat) = c.get_children("/parent").await.unwrap();
    children.sort();
    assert_eq!(children, vec!["a", "b", "c"]);
    assert_eq!(stat.num_children, 3);
    assert_eq!(
        c.get_children("/nope").await.unwrap_err(),
        ErrorKind::NoNode
    );
    assert_eq!(c.get_all_children_number("/parent").await, Ok(4));
    c.sync("/parent").await.unwrap();

    c.create("/e1", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    c.create("/parent/e2", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let mut all = c.get_ephemerals("/").await.unwrap();
    all.sort();
    assert_eq!(all, vec!["/e1", "/parent/e2"]);
    assert_eq!(
        c.get_ephemerals("/parent").await.unwrap(),
        vec!["/parent/e2"]
    );
}

#[tokio::test]
async fn multi_commits_atomically_and_reports_the_failing_op() {
    let c = client("multi").await;
    let results = c
        .multi(vec![
            MultiOp::create("/m", b"0", &persistent()),
            MultiOp::create("/m/s-", b"", &CreateOptions::persistent_sequential()),
            MultiOp::set_data("/m", b"1", Some(0)),
            MultiOp::check("/m", 1),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 4);
    assert!(matches!(&results[0], MultiResult::Create { path, .. } if path == "/m"));
    assert!(matches!(&results[1], MultiResult::Create { path, .. } if path == "/m/s-0000000000"));
    assert!(matches!(&results[2], MultiResult::SetData { stat } if stat.version == 1));
    assert_eq!(results[3], MultiResult::Check);
    // A 3.8 server gives a created node's path alone: no stat, rather than one of zeros.
    for result in &results[..2] {
        let MultiResult::Create { stat, .. } = result else {
            panic!("{result:?}")
        };
        assert!(!matches!(stat, Some(s) if s.czxid == 0), "{result:?}");
    }

    let err = c
        .multi(vec![
            MultiOp::delete("/m/s-0000000000", None),
            MultiOp::create("/m", b"", &persistent()),
            MultiOp::set_data("/m", b"2", None),
        ])
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ErrorKind::MultiFailed {
            index: 1,
            code: ErrorCode::NodeExists
        }
    );
    let (index, cause) = err.multi_cause().unwrap();
    assert_eq!((index, cause.kind()), (1, &ErrorKind::NodeExists));
    // Nothing applied.
    assert!(c.exists("/m/s-0000000000").await.unwrap().is_some());
    assert_eq!(c.get_data("/m").await.unwrap().1.version, 1);

    let err = c.multi(vec![MultiOp::check("/m", 7)]).await.unwrap_err();
    assert_eq!(
        err,
        ErrorKind::MultiFailed {
            index: 0,
            code: ErrorCode::BadVersion
        }
    );
    assert_eq!(c.multi(vec![]).await, Ok(vec![]));
}

#[tokio::test]
async fn multi_read_results_fail_independently() {
    let c = client("multi_read").await;
    c.create("/r", b"data", &persistent()).await.unwrap();
    c.create("/r/kid", b"", &persistent()).await.unwrap();
    let results = c
        .multi_read(vec![
            ReadOp::get_data("/r"),
            ReadOp::get_children("/r"),
            ReadOp::get_data("/missing"),
        ])
        .await
        .unwrap();
    assert!(matches!(&results[0], ReadResult::Data { data, .. } if &data[..] == b"data"));
    assert_eq!(
        results[1],
        ReadResult::Children {
            children: vec!["kid".into()]
        }
    );
    assert!(matches!(&results[2], ReadResult::Error(e) if *e == ErrorKind::NoNode));
}

/// A sequential create names the parent with a trailing `/` and gets a child named by its
/// sequence number alone, as on the server; under a chroot, `/` stays inside the chroot.
#[tokio::test]
async fn a_sequential_create_under_a_trailing_slash_makes_a_numbered_child() {
    let c = client("sequential_slash").await;
    c.create("/seq", b"", &persistent()).await.unwrap();
    let sequential = CreateOptions::persistent_sequential();
    let (path, _) = c.create("/seq/", b"", &sequential).await.unwrap();
    assert_eq!(path, "/seq/0000000000");
    let results = c
        .multi(vec![MultiOp::create("/seq/", b"", &sequential)])
        .await
        .unwrap();
    assert!(
        matches!(&results[0], MultiResult::Create { path, .. } if path == "/seq/0000000001"),
        "{results:?}"
    );
    let (path, _) = c.create("/", b"", &sequential).await.unwrap();
    assert_eq!(path, "/0000000001", "the chroot node already has /seq");
    let (children, _) = c.get_children("/").await.unwrap();
    assert!(children.contains(&"0000000001".to_string()), "{children:?}");
}

#[tokio::test]
async fn bad_input_is_refused_before_sending() {
    let c = client("bad_input").await;
    for (path, reason) in [
        ("relative", "path must start with '/'"),
        ("/trailing/", "path must not end with '/'"),
        ("/a//b", "path has an empty segment"),
        ("/a/./b", "relative segments '.' and '..' are not allowed"),
        ("/a/../b", "relative segments '.' and '..' are not allowed"),
        ("/nul\0", "path contains NUL"),
        ("", "path is empty"),
    ] {
        match c.get_data(path).await.map_err(|e| e.kind().clone()) {
            Err(ErrorKind::InvalidPath { path: p, reason: r }) => {
                assert_eq!((p.as_str(), r), (path, reason));
            }
            other => panic!("{path:?}: {other:?}"),
        }
    }
    let too_big = vec![0u8; 1_048_576];
    let err = c.create("/big", &too_big, &persistent()).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::DataTooLarge { .. }));
    let err = c
        .create(
            "/ttl",
            b"",
            &CreateOptions::new(CreateMode::PersistentWithTtl),
        )
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidArgument(_)));
    // None of it reached the server, and the session is fine.
    assert_eq!(c.state(), zookeeper_tokio::SessionState::Connected);
    assert_eq!(c.get_children("/").await.unwrap().0, Vec::<String>::new());
}

#[tokio::test]
async fn chroot_applies_to_paths_in_and_out() {
    let c = client("chroot").await;
    let root = c.chroot().unwrap().to_owned();
    let (path, _) = c
        .create("/s-", b"", &CreateOptions::persistent_sequential())
        .await
        .unwrap();
    assert_eq!(path, "/s-0000000000");
    let plain = Client::connect(&zookeeper_testkit::shared_server().connect_string())
        .await
        .unwrap();
    assert!(plain
        .exists(&format!("{root}/s-0000000000"))
        .await
        .unwrap()
        .is_some());
    let results = c
        .multi(vec![MultiOp::create(
            "/m-",
            b"",
            &CreateOptions::persistent_sequential(),
        )])
        .await
        .unwrap();
    assert!(matches!(&results[0], MultiResult::Create { path, .. } if path == "/m-0000000001"));
    let (_, _, watcher) = c.get_children_and_watch("/").await.unwrap();
    plain
        .create(&format!("{root}/x"), b"", &persistent())
        .await
        .unwrap();
    let event = within("child event", watcher).await;
    assert_eq!(event.path, "/");
}

#[tokio::test]
async fn request_timeout_fails_with_timeout() {
    let server = zookeeper_testkit::ZkServer::start().await.unwrap();
    let proxy = zookeeper_testkit::Proxy::start(server.addr())
        .await
        .unwrap();
    let c = Client::builder(&proxy.connect_string())
        .session_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    proxy.set_latency(Duration::from_millis(500));
    let quick = c
        .with_request_timeout(Some(Duration::from_millis(100)))
        .expect("a timeout in range");
    assert_eq!(
        quick.get_data("/").await.map(|_| ()).unwrap_err(),
        ErrorKind::Timeout
    );
    proxy.set_latency(Duration::ZERO);
    c.get_data("/").await.unwrap();
}

/// Every path of the table, through every operation that takes one, first as raw bytes to
/// the real server and then through the client. The client refuses exactly the paths at which
/// the server will not create a node (`BADARGUMENTS`, or `NONODE` for a parent no node can
/// have, as in `/p//a`), and for a sequential create exactly those it will not create a
/// sequential node under (`/p/q/` makes `/p/q/0000000000`). Where the server answers anyway,
/// the client never refuses a path it would act on as a node's: the server never says
/// `BADARGUMENTS` to a path the client sent. The server itself checks no path for reads (a
/// missing node), `sync` and `addWatch` (`OK` whatever the path, a watch that can never fire):
/// there the client refuses only paths no node can have, as above.
#[tokio::test]
async fn paths_are_refused_exactly_when_the_server_refuses_them() {
    use zookeeper_jute::{
        AddWatchRequest, CheckVersionRequest, CreateRequest, DeleteRequest, ExistsRequest,
        GetAclRequest, GetAllChildrenNumberRequest, GetChildren2Request, GetDataRequest,
        MultiRequest, Request, SetAclRequest, SetDataRequest, SyncRequest,
    };
    use zookeeper_tokio::AddWatchMode;

    let server = zookeeper_testkit::shared_server();
    let base = zookeeper_testkit::chroot_for("path_rules");
    let mut raw = common::raw::RawSession::connect(&server.addr().to_string()).await;
    let c = within("connect", Client::connect(&server.connect_string()))
        .await
        .unwrap();
    let parent = format!("{base}/p");
    c.create(&parent, b"", &persistent()).await.unwrap();

    // Names under an existing parent, so that only the path itself can make a create fail.
    let mut paths: Vec<String> = [
        "/a",
        "/a/",
        "//a",
        "/a//b",
        "/.",
        "/..",
        "/./a",
        "/../a",
        "/a/.",
        "/a/..",
        "/...",
        "/.a",
        "/a.",
        "/..a",
        "/a b",
        "/a\0",
        "/a\u{1}",
        "/a\u{1f}",
        "/a\u{7f}",
        "/a\u{80}",
        "/a\u{9f}",
        "/a\u{a0}",
        "/a\u{d7ff}",
        "/a\u{e000}",
        "/a\u{f8ff}",
        "/a\u{f900}",
        "/a\u{ffef}",
        "/a\u{fff0}",
        "/a\u{fffd}",
        "/a\u{ffff}",
        "/a\u{1f600}",
        "/é/ü",
    ]
    .iter()
    .map(|suffix| format!("{parent}{suffix}"))
    .collect();
    paths.extend(["".into(), "a".into(), "//".into(), format!("{parent}/")]);

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Op {
        Create,
        CreateSequential,
        SetData,
        Delete,
        GetData,
        Exists,
        GetChildren,
        GetAcl,
        SetAcl,
        Sync,
        AddWatch,
        AllChildren,
        Check,
    }
    let mut mismatches = vec![];
    for path in &paths {
        // Every ancestor that can exist does (an earlier delete may have removed one), so that
        // a create is refused for its own path and not for a missing parent.
        for (i, _) in path.match_indices('/').skip(1) {
            let ancestor = Request::Create2(CreateRequest {
                path: path[..i].to_string(),
                data: None,
                acl: Acl::open_unsafe(),
                flags: 0,
            });
            within("ancestor", raw.call(&ancestor)).await;
        }
        let mut nameable = true;
        for op in [
            Op::Create,
            Op::CreateSequential,
            Op::SetData,
            Op::Delete,
            Op::GetData,
            Op::Exists,
            Op::GetChildren,
            Op::GetAcl,
            Op::SetAcl,
            Op::Sync,
            Op::AddWatch,
            Op::AllChildren,
            Op::Check,
        ] {
            let create = |flags| {
                Request::Create2(CreateRequest {
                    path: path.clone(),
                    data: Some(Default::default()),
                    acl: Acl::open_unsafe(),
                    flags,
                })
            };
            let request = match op {
                Op::Create => create(0),
                Op::CreateSequential => create(2),
                Op::SetData => Request::SetData(SetDataRequest {
                    path: path.clone(),
                    data: Some(Default::default()),
                    version: -1,
                }),
                Op::Delete => Request::Delete(DeleteRequest {
                    path: path.clone(),
                    version: -1,
                }),
                Op::GetData => Request::GetData(GetDataRequest {
                    path: path.clone(),
                    watch: false,
                }),
                Op::Exists => Request::Exists(ExistsRequest {
                    path: path.clone(),
                    watch: false,
                }),
                Op::GetChildren => Request::GetChildren2(GetChildren2Request {
                    path: path.clone(),
                    watch: false,
                }),
                Op::GetAcl => Request::GetAcl(GetAclRequest { path: path.clone() }),
                Op::SetAcl => Request::SetAcl(SetAclRequest {
                    path: path.clone(),
                    acl: Acl::open_unsafe(),
                    version: -1,
                }),
                Op::Sync => Request::Sync(SyncRequest { path: path.clone() }),
                Op::AddWatch => Request::AddWatch(AddWatchRequest {
                    path: path.clone(),
                    mode: 0,
                }),
                Op::AllChildren => Request::GetAllChildrenNumber(GetAllChildrenNumberRequest {
                    path: path.clone(),
                }),
                Op::Check => Request::Multi(MultiRequest {
                    ops: vec![zookeeper_jute::MultiOp::Check(CheckVersionRequest {
                        path: path.clone(),
                        version: -1,
                    })],
                }),
            };
            let server_says = within("raw request", raw.call(&request)).await;
            let client_says = within("client request", async {
                match op {
                    Op::Create => c.create(path, b"", &persistent()).await.map(drop),
                    Op::CreateSequential => c
                        .create(path, b"", &CreateOptions::persistent_sequential())
                        .await
                        .map(drop),
                    Op::SetData => c.set_data(path, b"", None).await.map(drop),
                    Op::Delete => c.delete(path, None).await,
                    Op::GetData => c.get_data(path).await.map(drop),
                    Op::Exists => c.exists(path).await.map(drop),
                    Op::GetChildren => c.get_children(path).await.map(drop),
                    Op::GetAcl => c.get_acl(path).await.map(drop),
                    Op::SetAcl => c.set_acl(path, Acl::open_unsafe(), None).await.map(drop),
                    Op::Sync => c.sync(path).await,
                    Op::AddWatch => c.add_watch(path, AddWatchMode::Persistent).await.map(drop),
                    Op::AllChildren => c.get_all_children_number(path).await.map(drop),
                    Op::Check => c.multi(vec![MultiOp::check(path, -1)]).await.map(drop),
                }
            })
            .await;
            let client_refused =
                matches!(&client_says, Err(e) if matches!(e.kind(), ErrorKind::InvalidPath { .. }));
            let server_refused = matches!(server_says, ErrorCode::BadArguments | ErrorCode::NoNode);
            let agrees = match op {
                Op::Create => {
                    nameable = !server_refused;
                    client_refused == server_refused
                }
                Op::CreateSequential => client_refused == server_refused,
                _ => {
                    client_refused != nameable
                        && (client_refused || server_says != ErrorCode::BadArguments)
                }
            };
            if !agrees {
                mismatches.push(format!(
                    "{op:?} {path:?}: server {server_says:?}, client {client_says:?}"
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
