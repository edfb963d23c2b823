//! Deadlines wherever the call is made. The session keeps the deadline of a call its runtime
//! bounds (one made on it, and for a multi-thread runtime also one made from outside its
//! workers); a call made elsewhere must still end when the session's runtime stands still or
//! is gone. The server is scripted: it grants the session and never answers a request, so
//! that only a deadline (or the end of the session) can end a call.

use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use zookeeper_tokio::{Client, ErrorKind};

use crate::common::{current_thread, multi_thread, SCHEDULING_SLACK};
use crate::server::FakeServer;

/// A session timeout so long that no ping or read timeout comes near the request deadline.
const HOUR_MS: i32 = 3_600_000;

const DEADLINE: Duration = Duration::from_millis(300);

/// Bounds each wait for a call's end, so that a call that hangs fails the test instead.
const BOUND: Duration = Duration::from_secs(10);

fn never_answers() -> FakeServer {
    FakeServer::start(|mut peer| async move {
        if peer.handshake_granting(HOUR_MS).await.is_some() {
            while peer.next_request().await.is_some() {}
        }
    })
}

fn connect_on(runtime: &Runtime, server: &FakeServer) -> Client {
    let connect = Client::builder(&server.connect_string())
        .request_timeout(DEADLINE)
        .connect();
    runtime
        .block_on(async { tokio::time::timeout(BOUND, connect).await })
        .expect("connected in time")
        .unwrap()
}

/// Runs one `get_data` on `runtime` and checks that it fails with `Timeout` at its deadline.
fn assert_times_out_on(runtime: &Runtime, client: &Client) {
    let started = Instant::now();
    let outcome =
        runtime.block_on(async { tokio::time::timeout(BOUND, client.get_data("/a")).await });
    let err = outcome.expect("the call ended").unwrap_err();
    assert_eq!(err.kind().clone(), ErrorKind::Timeout);
    assert_deadline(started.elapsed());
}

/// A call ends at its deadline: no sooner (the clock starts before the call is made), and
/// within `SCHEDULING_SLACK` (2 s) after it, what a loaded machine may take to run the timer
/// and then the caller; a call that ignored its deadline would run on to `BOUND` (or forever,
/// with the hour-long session here).
fn assert_deadline(took: Duration) {
    assert!(
        took >= DEADLINE && took <= DEADLINE + SCHEDULING_SLACK,
        "{took:?}"
    );
}

#[test]
fn a_call_on_the_sessions_own_runtime_ends_at_its_deadline() {
    let server = never_answers();
    let home = current_thread();
    let client = connect_on(&home, &server);
    assert_times_out_on(&home, &client);
}

/// The thread that connected drives another runtime while the session's stands still (it is
/// a current-thread runtime, driven only inside its `block_on`): the session cannot keep the
/// deadline, so the call must.
#[test]
fn a_call_on_another_runtime_of_the_same_thread_ends_while_the_sessions_stands_still() {
    let server = never_answers();
    let home = current_thread();
    let client = connect_on(&home, &server);
    let elsewhere = current_thread();
    assert_times_out_on(&elsewhere, &client);
}

#[test]
fn a_call_on_another_thread_ends_while_the_sessions_runtime_stands_still() {
    let server = never_answers();
    let home = current_thread();
    let client = connect_on(&home, &server);
    std::thread::spawn(move || assert_times_out_on(&current_thread(), &client))
        .join()
        .unwrap();
}

/// A call made from a thread outside a multi-thread runtime's workers (the body of
/// `#[tokio::main]`) and calls on the workers alike leave their deadline to the session,
/// which the workers drive whatever that thread does.
#[test]
fn calls_on_and_off_a_multi_thread_runtime_end_at_their_deadline() {
    let server = never_answers();
    let home = multi_thread();
    let client = connect_on(&home, &server);
    assert_times_out_on(&home, &client);

    // Each call is timed from just before it is made, on its own task: not from before all
    // 100 are spawned on the 2 workers, which a loaded machine may take a while to start.
    let on_workers = home.block_on(async {
        let calls: Vec<_> = (0..100)
            .map(|i| {
                let client = client.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let outcome = client.get_data(&format!("/n{i}")).await;
                    (outcome, started.elapsed())
                })
            })
            .collect();
        let mut ended = Vec::new();
        for call in calls {
            let outcome = tokio::time::timeout(BOUND, call).await;
            let (outcome, took) = outcome.expect("the call ended").unwrap();
            ended.push((outcome.unwrap_err().kind().clone(), took));
        }
        ended
    });
    assert!(
        on_workers.iter().all(|(k, _)| *k == ErrorKind::Timeout),
        "{on_workers:?}"
    );
    for (_, took) in on_workers {
        assert_deadline(took);
    }
}

/// The session's runtime is shut down with a call queued that it never took: the call fails
/// with `Closed` at once, as do later ones, without a deadline to end them.
#[test]
fn calls_fail_with_closed_once_the_sessions_runtime_is_gone() {
    let server = never_answers();
    let home = current_thread();
    let client = connect_on(&home, &server)
        .with_request_timeout(None)
        .expect("a timeout in range");
    let elsewhere = current_thread();
    let queued = client.get_data("/queued");
    drop(home);
    let outcome = elsewhere.block_on(async { tokio::time::timeout(BOUND, queued).await });
    assert_eq!(
        outcome.expect("the call ended").unwrap_err(),
        ErrorKind::Closed
    );
    let later =
        elsewhere.block_on(async { tokio::time::timeout(BOUND, client.get_data("/later")).await });
    assert_eq!(
        later.expect("the call ended").unwrap_err(),
        ErrorKind::Closed
    );
}
