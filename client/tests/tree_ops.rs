//! Create with parents against a real server, races included.

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
