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

/// Bound on the wait for a caller's `CALLS` round trips: far past what they take.
const HANG: Duration = Duration::from_secs(120);

/// `CALLS` reads of the caller's own node, one at a time with a burst of concurrent ones
/// every tenth, each checked against the node's data; bounded.
async fn read_own_node(client: Client, id: usize) {
    // A hang bound only: how fast ten callers' round trips go on a loaded machine is not
    // under test.
    let reads = tokio::time::timeout(HANG, read_own_node_unbounded(client, id)).await;
    reads.expect("the reads ended")
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
    let runtime = common::multi_thread();
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
            common::current_thread().block_on(read_own_node(client, id))
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

/// Distinct nodes the window reads in turn, so that a reply given to the wrong call shows.
const WINDOW_NODES: usize = 20;

/// One loop keeping `window` calls in flight, each awaited in call order and checked against
/// the node it read: the body of a `main` or a batch job.
async fn read_through_a_window(client: Client, calls: usize, window: usize) {
    let mut in_flight = std::collections::VecDeque::with_capacity(window);
    let mut made = 0;
    while made < calls || !in_flight.is_empty() {
        if made < calls && in_flight.len() < window {
            let path = format!("/w{}", made % WINDOW_NODES);
            let call = client.get_data(&path);
            in_flight.push_back((path, call));
            made += 1;
            continue;
        }
        let (path, call) = in_flight.pop_front().unwrap();
        let (data, _) = tokio::time::timeout(HANG, call)
            .await
            .expect("a reply")
            .unwrap();
        assert_eq!(data, path.as_bytes());
    }
}

/// A loop in the body of `#[tokio::main]` (a thread blocking on the multi-thread runtime)
/// keeps a window of calls in flight: it writes its requests itself while replies are
/// awaited, beside tasks on the workers whose requests the session task writes. Every call
/// gets its own reply, and the connection never breaks.
#[test]
fn a_window_kept_in_flight_from_main_beside_the_workers_gets_every_reply() {
    let runtime = common::multi_thread();
    let client = runtime.block_on(common::client("callers_window"));
    let mut changes = client.state_changes();
    runtime.block_on(async {
        let paths = (0..WINDOW_NODES)
            .map(|i| format!("/w{i}"))
            .chain((0..4).map(|id| format!("/n{id}")));
        for path in paths {
            client
                .create(&path, path.as_bytes(), &CreateOptions::persistent())
                .await
                .unwrap();
        }
    });
    let on_workers: Vec<_> = (0..4)
        .map(|id| runtime.spawn(read_own_node(client.clone(), id)))
        .collect();
    runtime.block_on(read_through_a_window(client.clone(), 5_000, 200));
    runtime.block_on(async {
        for task in on_workers {
            task.await.expect("the calls on the workers");
        }
    });

    assert_eq!(client.state(), SessionState::Connected);
    let left = runtime.block_on(async {
        let left = changes.wait_for(|s| s != SessionState::Connected);
        tokio::time::timeout(Duration::ZERO, left).await
    });
    assert!(left.is_err(), "the connection broke: {left:?}");
}

/// The session's runtime stands still (a current-thread runtime nobody drives, as in a paused
/// process) while a thread elsewhere calls. The connection was idle, so the call writes itself:
/// the server applies it although the session task never ran. Nobody reads the reply, so the
/// call ends at its own deadline; once the runtime runs again, the late reply is matched and
/// dropped, and the session goes on without a disconnection.
#[test]
fn a_call_writes_itself_while_the_sessions_runtime_stands_still() {
    let home = common::current_thread();
    let connect = common::connect_string("callers_paused_home");
    let client = home.block_on(Client::connect(&connect)).unwrap();
    home.block_on(async {
        let create = client.create("/n", b"before", &CreateOptions::persistent());
        common::within("create", create).await.unwrap();
    });
    let mut changes = client.state_changes();

    // Only the stalled call has a short deadline: the calls the server does answer get the
    // default one, which a loaded machine cannot miss.
    let elsewhere = client
        .with_request_timeout(Some(Duration::from_millis(300)))
        .expect("a timeout in range");
    let outcome = std::thread::spawn(move || {
        common::current_thread().block_on(async {
            tokio::time::timeout(common::WAIT, elsewhere.set_data("/n", b"after", None)).await
        })
    })
    .join()
    .unwrap();
    let err = outcome.expect("the call ended").unwrap_err();
    assert_eq!(err.kind().clone(), zookeeper_tokio::ErrorKind::Timeout);

    // Another session sees the write the stalled one's caller made.
    let seen = std::thread::spawn(move || {
        common::current_thread().block_on(async {
            let observer = Client::connect(&connect).await.unwrap();
            let data = common::within("read", observer.get_data("/n")).await;
            observer.close().await;
            data.unwrap().0
        })
    })
    .join()
    .unwrap();
    assert_eq!(&seen[..], b"after");

    let (data, _) = home
        .block_on(common::within("read", client.get_data("/n")))
        .unwrap();
    assert_eq!(&data[..], b"after");
    let left = home.block_on(async {
        let left = changes.wait_for(|s| s != SessionState::Connected);
        tokio::time::timeout(Duration::ZERO, left).await
    });
    assert!(left.is_err(), "the connection broke: {left:?}");
}
