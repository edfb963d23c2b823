//! Large nodes, many children, many requests in flight.

mod common;

use std::time::Duration;

use common::{client, within};
use zookeeper_tokio::{Client, CreateOptions};

/// Bound on waits for a volume of work: far past what it takes, to catch a hang only.
const HANG: Duration = Duration::from_secs(120);

#[tokio::test]
async fn one_megabyte_node_round_trips() {
    let c = client("big_node").await;
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let (_, stat) = c
        .create("/big", &data, &CreateOptions::persistent())
        .await
        .unwrap();
    assert_eq!(stat.data_length, 1_000_000);
    let (back, _) = within("1 MB read", c.get_data("/big")).await.unwrap();
    assert!(back[..] == data[..], "data differs");
}

#[tokio::test]
async fn ten_thousand_children() {
    let c = client("many_children").await;
    c.create("/p", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    // Queued at call time: all 10,000 creates are pipelined before the first is awaited.
    let creates: Vec<_> = (0..10_000)
        .map(|i| {
            c.create(
                &format!("/p/child-{i:05}"),
                b"",
                &CreateOptions::persistent(),
            )
        })
        .collect();
    for (i, f) in creates.into_iter().enumerate() {
        let (path, _) = within("create", f).await.unwrap();
        assert_eq!(path, format!("/p/child-{i:05}"));
    }
    let (mut children, stat) = within("listing", c.get_children("/p")).await.unwrap();
    assert_eq!(stat.num_children, 10_000);
    children.sort();
    let expected: Vec<String> = (0..10_000).map(|i| format!("child-{i:05}")).collect();
    assert_eq!(children, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_requests_from_a_hundred_tasks_all_matched() {
    let c = client("pipelined").await;
    let setup: Vec<_> = (0..100)
        .map(|k| {
            c.create(
                &format!("/n{k}"),
                format!("{k}").as_bytes(),
                &CreateOptions::persistent(),
            )
        })
        .collect();
    for f in setup {
        f.await.unwrap();
    }
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..100usize {
        let c: Client = c.clone();
        tasks.spawn(async move {
            let reads: Vec<_> = (0..100usize)
                .map(|i| {
                    let k = (task * 7 + i * 13) % 100;
                    (k, c.get_data(&format!("/n{k}")))
                })
                .collect();
            for (k, f) in reads {
                let (data, _) = f.await.unwrap();
                assert_eq!(
                    data,
                    format!("{k}").as_bytes(),
                    "reply routed to the wrong request"
                );
            }
        });
    }
    // A hang bound only: how fast a loaded machine serves 10,000 reads is not under test.
    tokio::time::timeout(HANG, async {
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
    })
    .await
    .expect("all tasks ended");
}

/// With a tiny queue, calls wait for room, and still leave in call order: sequential creates
/// get increasing numbers in exactly the order they were called.
#[tokio::test]
async fn full_queue_waits_and_keeps_call_order() {
    let connect = common::connect_string("full_queue");
    let c = Client::builder(&connect)
        .max_outstanding(4)
        .connect()
        .await
        .unwrap();
    c.create("/q", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let creates: Vec<_> = (0..500)
        .map(|_| c.create("/q/s-", b"", &CreateOptions::persistent_sequential()))
        .collect();
    for (i, f) in creates.into_iter().enumerate() {
        let (path, _) = within("create", f).await.unwrap();
        assert_eq!(path, format!("/q/s-{i:010}"));
    }
}

/// The largest data a request may carry (with the default request limit), read back with the
/// default incoming limit: the limit holds the largest reply a server sends about one node.
#[tokio::test]
async fn the_largest_node_a_server_accepts_is_read_with_the_default_limit() {
    use zookeeper_tokio::DEFAULT_MAX_INCOMING_FRAME;
    let connect = common::connect_string("largest_node");
    let c = Client::connect(&connect).await.unwrap();
    c.create("/n", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    // setData's frame: header (8), path (4 + length), data (4 + length), version (4).
    let server_path = format!("{}/n", c.chroot().unwrap());
    let max = zookeeper_jute::DEFAULT_MAX_FRAME - (8 + 4 + server_path.len() + 4 + 4);
    let data = vec![7u8; max];
    within("largest write", c.set_data("/n", &data, None))
        .await
        .unwrap();
    let too_big = vec![7u8; max + 1];
    assert!(c.set_data("/n", &too_big, None).await.is_err());
    let (back, stat) = within("largest read", c.get_data("/n")).await.unwrap();
    assert_eq!(back.len(), max);
    assert_eq!(stat.data_length as usize, max);
    // Reply header, data length and data, stat.
    let reply = 16 + 4 + max + 68;
    assert!(reply <= DEFAULT_MAX_INCOMING_FRAME, "{reply}");
}

/// 100,000 children with long names make a listing of 4.6 MB, over the default incoming limit:
/// the listing fails alone, with a typed error that is not retryable, a read pipelined behind
/// it succeeds, and a recursive watch whose walk meets it fails cleanly. The session never
/// drops its connection over it (it used to reconnect, and walk again, hundreds of times per
/// 10 s); the proxy counts the connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_over_the_limit_fails_only_its_call_and_the_session_keeps_its_connection() {
    use zookeeper_tokio::{AddWatchMode, ErrorKind};
    let server = zookeeper_testkit::shared_server();
    let chroot = zookeeper_testkit::chroot_for("huge_listing");
    let proxy = zookeeper_testkit::Proxy::start(server.addr())
        .await
        .unwrap();
    let c = Client::connect(&format!("{}{chroot}", proxy.connect_string()))
        .await
        .unwrap();
    c.create("/big", b"data", &CreateOptions::persistent())
        .await
        .unwrap();
    const CHILDREN: usize = 100_000;
    let tail = "x".repeat(36);
    let mut pending = std::collections::VecDeque::new();
    for i in 0..CHILDREN {
        pending.push_back(c.create(
            &format!("/big/child-{i:06}-{tail}"),
            b"",
            &CreateOptions::persistent(),
        ));
        if pending.len() >= 5_000 {
            within("create", pending.pop_front().unwrap())
                .await
                .unwrap();
        }
    }
    for f in pending {
        within("create", f).await.unwrap();
    }

    let (listing, data) = tokio::join!(c.get_children("/big"), c.get_data("/big"));
    let err = listing.unwrap_err();
    let ErrorKind::ReplyTooLarge { size, max } = *err.kind() else {
        panic!("{err}")
    };
    assert!(
        size > 4_500_000 && max == zookeeper_tokio::DEFAULT_MAX_INCOMING_FRAME,
        "{err}"
    );
    assert!(!err.is_retryable());
    assert_eq!(&data.unwrap().0[..], b"data");

    let err = within(
        "recursive watch",
        c.add_watch("/big", AddWatchMode::PersistentRecursive),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ReplyTooLarge { .. }),
        "{err}"
    );

    // A while later: still the first connection, and the session works.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        within("read", c.exists("/big"))
            .await
            .unwrap()
            .unwrap()
            .num_children as usize,
        CHILDREN
    );
    assert_eq!(proxy.accepted(), 1, "the client reconnected");

    // The limit is the client's: raised, the same listing is read whole.
    let roomy = Client::builder(&format!("{}{chroot}", server.connect_string()))
        .max_incoming_frame(8 << 20)
        .connect()
        .await
        .unwrap();
    let (children, _) = within("whole listing", roomy.get_children("/big"))
        .await
        .unwrap();
    assert_eq!(children.len(), CHILDREN);
}
