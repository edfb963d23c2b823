//! Create with parents and recursive delete against a real server, races included.

mod common;

use common::{client, connect_string, within};
use zookeeper_tokio::{perms, Acl, Client, CreateOptions, ErrorKind, Id, MultiOp, Parents};

async fn sessions(connect: &str, n: usize) -> Vec<Client> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(Client::connect(connect).await.unwrap());
    }
    out
}

#[tokio::test]
async fn create_with_parents_makes_every_missing_ancestor() {
    let c = client("parents_make").await;
    // Without the flag the server's answer stands.
    let err = c
        .create("/a/b/c", b"x", &CreateOptions::persistent())
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::NoNode);
    assert_eq!(err.to_string(), "create /a/b/c: node does not exist");

    let acl = vec![Acl {
        perms: perms::ALL,
        id: Id::anyone(),
    }];
    let (path, stat) = c
        .create(
            "/a/b/c",
            b"x",
            &CreateOptions::persistent()
                .acl(acl.clone())
                .creating_parents(),
        )
        .await
        .unwrap();
    assert_eq!(path, "/a/b/c");
    assert_eq!(stat.data_length, 1);
    for ancestor in ["/a", "/a/b"] {
        let (data, stat) = c.get_data(ancestor).await.unwrap();
        assert!(data.is_empty());
        assert_eq!(stat.ephemeral_owner, 0, "{ancestor} is persistent");
        assert_eq!(c.get_acl(ancestor).await.unwrap().0, acl);
    }
    // When the parent exists, the flag changes nothing; an existing node is still an error.
    let err = c
        .create(
            "/a/b/c",
            b"",
            &CreateOptions::persistent().creating_parents(),
        )
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::NodeExists);

    // Sequential ephemerals get persistent parents and keep their own mode.
    let (seq, stat) = c
        .create(
            "/q/r/n-",
            b"",
            &CreateOptions::ephemeral_sequential().creating_parents(),
        )
        .await
        .unwrap();
    assert_eq!(seq, "/q/r/n-0000000000");
    assert_eq!(stat.ephemeral_owner, c.session_id().0);
    assert_eq!(c.exists("/q/r").await.unwrap().unwrap().ephemeral_owner, 0);
}

/// Servers hide a container's marker from the stat, so this shows what a container does: the
/// server removes it once its last child is gone (checked every 100 ms on a server of its own).
#[tokio::test]
async fn create_with_parent_containers_makes_containers() {
    let server = zookeeper_testkit::ZkServer::builder()
        .system_property("znode.container.checkIntervalMs", "100")
        .start()
        .await
        .unwrap();
    let c = Client::connect(&server.connect_string()).await.unwrap();
    let options = CreateOptions::ephemeral().creating_parent_containers();
    assert_eq!(options.parents, Parents::Container);
    c.create("/locks/deploy/n", b"", &options).await.unwrap();
    c.create(
        "/kept/n",
        b"",
        &CreateOptions::ephemeral().creating_parents(),
    )
    .await
    .unwrap();
    let (_, gone) = c.exists_and_watch("/locks").await.unwrap();
    c.delete("/locks/deploy/n", None).await.unwrap();
    c.delete("/kept/n", None).await.unwrap();
    // The inner container goes first, then the outer one, now empty too.
    within("the containers to be removed", gone).await;
    assert!(c.exists("/locks").await.unwrap().is_none());
    assert!(
        c.exists("/kept").await.unwrap().is_some(),
        "persistent parents stay"
    );
}

#[tokio::test]
async fn create_with_parents_under_an_ephemeral_fails_with_the_server_error() {
    let c = client("parents_ephemeral").await;
    c.create("/e", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let err = c
        .create(
            "/e/x/y",
            b"",
            &CreateOptions::persistent().creating_parents(),
        )
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::NoChildrenForEphemerals);
}

#[tokio::test]
async fn a_missing_ancestor_we_may_not_create_is_the_error_reported() {
    let c = client("parents_noauth").await;
    let read_only = vec![Acl {
        perms: perms::READ,
        id: Id::anyone(),
    }];
    c.create("/ro", b"", &CreateOptions::persistent().acl(read_only))
        .await
        .unwrap();
    let err = c
        .create(
            "/ro/x/y",
            b"",
            &CreateOptions::persistent().creating_parents(),
        )
        .await
        .unwrap_err();
    assert_eq!(err, ErrorKind::NoAuth);
    assert_eq!(err.path(), Some("/ro/x"), "{err}");
}

#[tokio::test]
async fn racing_creators_of_the_same_ancestors_all_succeed() {
    let connect = connect_string("parents_race");
    let clients = sessions(&connect, 8).await;
    let creates: Vec<_> = clients
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            (0..10).map(move |j| {
                c.create(
                    &format!("/x/y/z/{i}/{j}"),
                    b"",
                    &CreateOptions::persistent().creating_parents(),
                )
            })
        })
        .collect();
    for reply in creates {
        within("create with parents", reply).await.unwrap();
    }
    assert_eq!(
        clients[0].get_all_children_number("/x").await.unwrap(),
        2 + 8 + 80
    );
}

#[tokio::test]
async fn a_parents_create_inside_multi_is_refused_before_sending() {
    let c = client("parents_multi").await;
    let err = c
        .multi(vec![MultiOp::create(
            "/m/n",
            b"",
            &CreateOptions::persistent().creating_parents(),
        )])
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidArgument(_)), "{err}");
}

/// `/t` with `wide` leaves under `/t/wide`, and a chain `depth` deep under `/t/deep`, each
/// chain node with two leaves.
async fn build_tree(c: &Client, wide: usize, depth: usize) -> usize {
    let persistent = CreateOptions::persistent();
    let mut made = 0;
    for p in ["/t", "/t/wide", "/t/deep"] {
        c.create(p, b"", &persistent).await.unwrap();
        made += 1;
    }
    let leaves: Vec<_> = (0..wide)
        .map(|i| c.create(&format!("/t/wide/{i}"), b"", &persistent))
        .collect();
    for leaf in leaves {
        leaf.await.unwrap();
        made += 1;
    }
    let mut path = "/t/deep".to_owned();
    for level in 0..depth {
        for leaf in ["l", "r"] {
            c.create(&format!("{path}/{leaf}"), b"", &CreateOptions::ephemeral())
                .await
                .unwrap();
            made += 1;
        }
        path = format!("{path}/{level}");
        c.create(&path, b"", &persistent).await.unwrap();
        made += 1;
    }
    made
}

#[tokio::test]
async fn delete_recursive_removes_a_wide_and_deep_tree() {
    let c = client("delete_tree").await;
    // More children under one node than one batch, and a chain deeper than a batch is wide.
    let made = build_tree(&c, 2500, 30).await;
    assert_eq!(c.delete_recursive("/t").await.unwrap(), made);
    assert!(c.exists("/t").await.unwrap().is_none());
    // Nothing there: nothing to do.
    assert_eq!(c.delete_recursive("/t").await.unwrap(), 0);
    // A leaf is a tree of one.
    c.create("/leaf", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(c.delete_recursive("/leaf").await.unwrap(), 1);
}

#[tokio::test]
async fn delete_recursive_refuses_the_root_and_bad_paths() {
    let server = zookeeper_testkit::shared_server();
    let c = Client::connect(&server.connect_string()).await.unwrap();
    let err = c.delete_recursive("/").await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidArgument(_)), "{err}");
    let err = c.delete_recursive("no-slash").await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidPath { .. }), "{err}");
    assert_eq!(err.operation(), Some("delete_recursive"));
}

#[tokio::test]
async fn delete_recursive_under_a_chroot_removes_the_chroot_node() {
    let connect = connect_string("delete_chroot");
    let c = Client::connect(&connect).await.unwrap();
    c.create("/a", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(c.delete_recursive("/").await.unwrap(), 2);
    let chroot = &connect[connect.find('/').unwrap()..];
    let root = Client::connect(&zookeeper_testkit::shared_server().connect_string())
        .await
        .unwrap();
    assert!(root.exists(chroot).await.unwrap().is_none());
}

#[tokio::test]
async fn concurrent_recursive_deletes_share_the_work() {
    let connect = connect_string("delete_race");
    let clients = sessions(&connect, 4).await;
    let made = build_tree(&clients[0], 1500, 10).await;
    let deletes: Vec<_> = clients.iter().map(|c| c.delete_recursive("/t")).collect();
    let mut total = 0;
    for d in deletes {
        total += within("delete_recursive", d).await.unwrap();
    }
    // Every node was deleted exactly once, by one of them.
    assert_eq!(total, made);
    assert!(clients[0].exists("/t").await.unwrap().is_none());
}

#[tokio::test]
async fn delete_recursive_outlasts_a_concurrent_creator() {
    let connect = connect_string("delete_vs_create");
    let clients = sessions(&connect, 2).await;
    build_tree(&clients[0], 1200, 5).await;
    // The creator adds children under nodes of the tree while the delete runs; once the delete
    // has removed a parent its creates fail, so it can only slow the delete down. Each create
    // can cost a parent at most one extra listing, so 100 creates per parent stay within the
    // 100 relistings a node is allowed before the delete gives up with `NotEmpty`.
    let creator = clients[1].clone();
    let creating = tokio::spawn(async move {
        let mut added = 0;
        for i in 0..200 {
            let parent = if i % 2 == 0 { "/t/wide" } else { "/t/deep/0" };
            match creator
                .create(
                    &format!("{parent}/new{i}"),
                    b"",
                    &CreateOptions::persistent(),
                )
                .await
            {
                Ok(_) => added += 1,
                Err(e) if e == ErrorKind::NoNode => break,
                Err(e) => panic!("creator: {e}"),
            }
        }
        added
    });
    within("delete_recursive", clients[0].delete_recursive("/t"))
        .await
        .unwrap();
    within("creator", creating).await.unwrap();
    assert!(clients[0].exists("/t").await.unwrap().is_none());
}
