//! Calls made from everywhere at once share one connection: tasks on a multi-thread runtime's
//! workers, threads blocking outside them (the body of `#[tokio::main]`), and a current-thread
//! runtime of their own. A caller writes its request itself while the connection is idle, the
//! session task writes the rest; whoever writes, every call gets its own reply and the
//! connection never breaks (an xid out of order would break it and fail calls with
//! `ConnectionLoss`).

mod common;

use std::time::Duration;

use zookeeper_tokio::{Client, CreateOptions, SessionState};

const CALLS: usize = 300;

/// `CALLS` reads of the caller's own node, one at a time with a burst of concurrent ones
/// every tenth, each checked against the node's data; bounded.
async fn read_own_node(client: Client, id: usize) {
    common::within("the reads", read_own_node_unbounded(client, id)).await
}

async fn read_own_node_unbounded(client: Client, id: usize) {
    let path = format!("/n{id}");
    let want = path.as_bytes().to_vec();
    for k in 0..CALLS {
        if k % 10 == 0 {
            let burst: Vec<_> = (0..5).map(|_| client.get_data(&path)).collect();
            for call in burst {
                assert_eq!(call.await.expect("burst read").0, want);
            }
        } else {
            assert_eq!(client.get_data(&path).await.expect("read").0, want);
        }
    }
}

#[test]
fn callers_on_and_off_the_runtime_each_get_their_own_replies() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = runtime.block_on(common::client("callers_everywhere"));
    let mut changes = client.state_changes();
    runtime.block_on(async {
        for id in 0..10 {
            let path = format!("/n{id}");
            client
                .create(&path, path.as_bytes(), &CreateOptions::persistent())
                .await
                .unwrap();
        }
    });

    let mut threads = Vec::new();
    for id in 0..4 {
        let (client, handle) = (client.clone(), runtime.handle().clone());
        threads.push(std::thread::spawn(move || {
            handle.block_on(read_own_node(client, id))
        }));
    }
    for id in 4..6 {
        let client = client.clone();
        threads.push(std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(read_own_node(client, id))
        }));
    }
    let on_workers: Vec<_> = (6..10)
        .map(|id| runtime.spawn(read_own_node(client.clone(), id)))
        .collect();
    runtime.block_on(async {
        for task in on_workers {
            task.await.expect("the calls on the workers");
        }
    });
    for thread in threads {
        thread.join().expect("the calls off the workers");
    }

    assert_eq!(client.state(), SessionState::Connected);
    let left = runtime.block_on(async {
        let left = changes.wait_for(|s| s != SessionState::Connected);
        tokio::time::timeout(Duration::ZERO, left).await
    });
    assert!(left.is_err(), "the connection broke: {left:?}");
}
