//! Large nodes, many children, many requests in flight.

mod common;

use common::{client, within};
use zookeeper_tokio::{Client, CreateOptions};

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
    within("all tasks", async {
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
    })
    .await;
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
