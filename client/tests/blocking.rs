//! The blocking client from plain threads (no runtime of the caller's), against the shared
//! server: operations, watches across a connection drop, request timeouts, calls from inside
//! a tokio runtime, and the end of the session when the last handle drops on a plain thread.

mod common;

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use zookeeper_tokio::blocking::Client;
use zookeeper_tokio::{AddWatchMode, CreateOptions, ErrorKind, EventType, MultiOp, SessionState};

use common::{SCHEDULING_SLACK, WAIT};

fn connect(test: &str) -> Client {
    connect_to(&common::connect_string(test))
}

fn connect_to(connect_string: &str) -> Client {
    Client::connect_with(
        zookeeper_tokio::Client::builder(connect_string)
            .session_timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(30)),
    )
    .expect("connect to the shared server")
}

/// Runs `f` on a thread of its own, failing the test if it has not returned within [`WAIT`]
/// (a hang bound: a blocking call that never returns would otherwise hang the suite).
fn on_thread<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    joined(what, on_thread_handle(f))
}

/// The result of a thread started by [`on_thread_handle`], failing the test if it has not
/// arrived within [`WAIT`] (three times over) or the thread panicked.
fn joined<T>(what: &str, result: std::sync::mpsc::Receiver<T>) -> T {
    match result.recv_timeout(WAIT * 3) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => panic!("{what} did not return"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

#[test]
fn every_kind_of_operation_works_from_a_plain_thread() {
    let c = connect("blocking_crud");
    let (path, stat) = c
        .create("/jobs", b"v1", &CreateOptions::persistent())
        .unwrap();
    assert_eq!((path.as_str(), stat.version), ("/jobs", 0));
    assert_eq!(
        c.create("/jobs", b"", &CreateOptions::persistent())
            .unwrap_err(),
        ErrorKind::NodeExists
    );
    let (data, stat) = c.get_data("/jobs").unwrap();
    assert_eq!(&data[..], b"v1");
    c.set_data("/jobs", b"v2", Some(stat.version)).unwrap();
    assert_eq!(
        c.set_data("/jobs", b"v3", Some(stat.version)).unwrap_err(),
        ErrorKind::BadVersion
    );
    let results = c
        .multi(vec![
            MultiOp::create("/jobs/a", b"", &CreateOptions::persistent()),
            MultiOp::create("/jobs/b", b"", &CreateOptions::ephemeral()),
        ])
        .unwrap();
    assert_eq!(results.len(), 2);
    let (mut children, _) = c.get_children("/jobs").unwrap();
    children.sort();
    assert_eq!(children, ["a", "b"]);
    assert_eq!(c.get_all_children_number("/jobs").unwrap(), 2);
    assert_eq!(c.get_ephemerals("/").unwrap(), ["/jobs/b"]);
    c.sync("/jobs").unwrap();
    assert!(c.exists("/jobs/a").unwrap().is_some());
    assert_eq!(c.delete_recursive("/jobs").unwrap(), 3);
    assert_eq!(c.exists("/jobs").unwrap(), None);
    assert_eq!(c.get_data("/jobs").unwrap_err(), ErrorKind::NoNode);
    c.close();
    assert_eq!(c.state(), SessionState::Closed);
    assert_eq!(c.exists("/").unwrap_err(), ErrorKind::Closed);
}

#[test]
fn threads_sharing_a_client_each_get_their_own_replies() {
    let c = connect("blocking_shared");
    c.create("/n", b"", &CreateOptions::persistent()).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let c = c.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let path = format!("/n/{t}-{i}");
                    let data = path.as_bytes();
                    c.create(&path, data, &CreateOptions::persistent()).unwrap();
                    assert_eq!(&c.get_data(&path).unwrap().0[..], data);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(c.get_children("/n").unwrap().0.len(), 200);
}

/// Threads sharing a client, each keeping a window of calls in flight through `block_on`,
/// write their requests themselves while replies are in flight (they are not the session's
/// thread): every reply still reaches its own caller.
#[test]
fn threads_pipelining_on_a_shared_client_each_get_their_own_replies() {
    let c = connect("blocking_pipelined");
    c.create("/p", b"", &CreateOptions::persistent()).unwrap();
    const THREADS: usize = 4;
    const NODES: usize = 50;
    const CALLS: usize = 2_000;
    const WINDOW: usize = 200;
    for t in 0..THREADS {
        for i in 0..NODES {
            let path = format!("/p/{t}-{i}");
            c.create(&path, path.as_bytes(), &CreateOptions::persistent())
                .unwrap();
        }
    }
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let c = c.clone();
            on_thread_handle(move || {
                let client = c.as_async().clone();
                c.block_on(async move {
                    let mut in_flight = std::collections::VecDeque::new();
                    let (mut sent, mut done) = (0, 0);
                    while done < CALLS {
                        while sent < CALLS && in_flight.len() < WINDOW {
                            let path = format!("/p/{t}-{}", sent % NODES);
                            in_flight.push_back((path.clone(), client.get_data(&path)));
                            sent += 1;
                        }
                        let (path, reply) = in_flight.pop_front().unwrap();
                        let (data, _) = reply.await.unwrap();
                        assert_eq!(&data[..], path.as_bytes(), "thread {t}, call {done}");
                        done += 1;
                    }
                    done
                })
            })
        })
        .collect();
    for (t, done) in threads.into_iter().enumerate() {
        assert_eq!(joined(&format!("pipelining thread {t}"), done), CALLS);
    }
}

/// Runs `f` on a thread of its own; its result arrives on the channel returned.
fn on_thread_handle<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> std::sync::mpsc::Receiver<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx
}

/// One-shot and persistent watches set before the connection drops fire for a change made
/// while it was down, once the client is back: the session's thread restores them by itself.
#[test]
fn watches_fire_for_changes_made_across_a_connection_drop() {
    let proxy_runtime = common::multi_thread();
    let server = zookeeper_testkit::shared_server();
    let proxy = proxy_runtime
        .block_on(zookeeper_testkit::Proxy::start(server.addr()))
        .unwrap();
    let chroot = zookeeper_testkit::chroot_for("blocking_watch_drop");
    let c = connect_to(&format!("{}{chroot}", proxy.addr()));
    // The writer goes straight to the server, outside the chroot.
    let other_path = |p: &str| format!("{chroot}{p}");
    let other_root = connect_to(&server.connect_string());

    c.create("/w", b"1", &CreateOptions::persistent()).unwrap();
    let (_, stat, changed) = c.get_data_and_watch("/w").unwrap();
    let (_, created) = c.exists_and_watch("/w/child").unwrap();
    let mut events = c
        .add_watch("/w", AddWatchMode::PersistentRecursive)
        .unwrap();
    let mut states = c.state_changes();

    proxy.refuse(true);
    proxy.drop_all();
    assert_eq!(
        states.recv_timeout(WAIT),
        Ok(SessionState::Disconnected),
        "the drop is noticed"
    );
    other_root
        .set_data(&other_path("/w"), b"2", Some(stat.version))
        .unwrap();
    other_root
        .create(&other_path("/w/child"), b"", &CreateOptions::persistent())
        .unwrap();
    proxy.refuse(false);

    let mut changed = changed;
    let event = changed.wait_timeout(WAIT).expect("data watch fired");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDataChanged, "/w")
    );
    let event = on_thread("exists watch", move || created.wait());
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeCreated, "/w/child")
    );
    let mut seen: Vec<_> = (0..2)
        .map(|_| {
            let e = events.recv_timeout(WAIT).expect("persistent event");
            (e.event_type, e.path)
        })
        .collect();
    seen.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        seen,
        [
            (EventType::NodeDataChanged, "/w".to_string()),
            (EventType::NodeCreated, "/w/child".to_string()),
        ]
    );
    assert_eq!(events.try_next(), None);
    // A watch ends with the session: the iterator stops.
    c.close();
    let rest: Vec<_> = on_thread("the end of the watch", move || events.collect::<Vec<_>>());
    assert!(
        rest.iter().all(|e| e.event_type == EventType::None),
        "{rest:?}"
    );
}

/// A request nobody answers ends at its timeout with `Timeout`, as an async call does.
#[test]
fn a_request_nobody_answers_times_out() {
    let proxy_runtime = common::multi_thread();
    let server = zookeeper_testkit::shared_server();
    let proxy = proxy_runtime
        .block_on(zookeeper_testkit::Proxy::start(server.addr()))
        .unwrap();
    let chroot = zookeeper_testkit::chroot_for("blocking_timeout");
    let c = connect_to(&format!("{}{chroot}", proxy.addr()));
    c.create("/n", b"", &CreateOptions::persistent()).unwrap();

    const TIMEOUT: Duration = Duration::from_millis(500);
    let short = c
        .with_request_timeout(Some(TIMEOUT))
        .expect("a timeout in range");
    proxy.hold_replies(true);
    let start = Instant::now();
    let err = on_thread("the held call", move || short.get_data("/n")).unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.kind().clone(), ErrorKind::Timeout, "{err}");
    assert!(err.to_string().contains("/n"), "names the path: {err}");
    assert!(
        took < TIMEOUT + SCHEDULING_SLACK,
        "ended {took:?} after the call, its timeout {TIMEOUT:?}"
    );
    proxy.hold_replies(false);
    // The handle with the default timeout still works once replies flow again.
    c.exists("/n").unwrap().expect("the node is there");
}

/// Called from a task of a current-thread runtime (the caller's own), every operation still
/// completes: the session does not run there. More calls than tokio's cooperative budget
/// grants one turn of a task (128) are made in that one turn: without running unconstrained
/// by it, a call past the budget would never see its reply.
#[test]
fn calls_from_inside_a_tokio_runtime_complete() {
    let connect_string = common::connect_string("blocking_in_runtime");
    on_thread("calls on a runtime's thread", move || {
        common::current_thread().block_on(async move {
            let c = connect_to(&connect_string);
            c.create("/n", b"", &CreateOptions::persistent()).unwrap();
            for i in 0..300 {
                c.set_data("/n", format!("{i}").as_bytes(), None).unwrap();
            }
            assert_eq!(&c.get_data("/n").unwrap().0[..], b"299");
            // Dropped inside the runtime too.
            drop(c);
        })
    });
}

/// The session's ephemerals go when the last handle is dropped on a plain thread: the drop
/// closes the session without the caller having a runtime.
#[test]
fn dropping_the_last_handle_on_a_plain_thread_closes_the_session() {
    let connect_string = common::connect_string("blocking_drop");
    let observer = connect_to(&connect_string);
    let owner = connect_to(&connect_string);
    owner
        .create("/mine", b"", &CreateOptions::ephemeral())
        .unwrap();
    let (stat, gone) = observer.exists_and_watch("/mine").unwrap();
    assert!(stat.is_some());
    let clone = owner.clone();
    std::thread::spawn(move || drop(clone)).join().unwrap();
    assert!(
        observer.exists("/mine").unwrap().is_some(),
        "a clone remains"
    );
    std::thread::spawn(move || drop(owner)).join().unwrap();
    let event = on_thread("the ephemeral's deletion", move || gone.wait());
    assert_eq!(event.event_type, EventType::NodeDeleted);
}

/// A blocking call from a task on the session's own thread would stop the session it waits
/// for: it panics with a message saying so instead of hanging.
#[test]
fn a_blocking_call_on_the_sessions_own_thread_refuses() {
    let c = connect("blocking_on_session_thread");
    let inner = c.clone();
    let joined = c.block_on(async move { tokio::spawn(async move { inner.exists("/") }).await });
    let panic = joined.expect_err("the call panicked").into_panic();
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(message.contains("session thread"), "{message}");
    // The session itself goes on.
    c.exists("/").unwrap();
}
