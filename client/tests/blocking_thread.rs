//! The blocking client's session thread ends with its last handle. A binary of its own: it
//! counts this process's threads by name, which other tests' clients would change.

mod common;

use std::time::{Duration, Instant};

use zookeeper_tokio::blocking::Client;
use zookeeper_tokio::CreateOptions;

/// Threads of this process named as the session threads are (`comm` keeps 15 bytes).
fn session_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("Linux /proc")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| {
            name.trim_end() == "zookeeper-sessi" || name.trim_end() == "zookeeper-session"
        })
        .count()
}

/// Waits until `pred` holds, looking every few milliseconds, for at most [`common::WAIT`]:
/// nothing announces a thread's end to another thread but its absence from `/proc`.
fn until(what: &str, pred: impl Fn() -> bool) {
    let give_up = Instant::now() + common::WAIT;
    while !pred() {
        assert!(Instant::now() < give_up, "{what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_session_thread_ends_once_the_last_handle_is_dropped_on_a_plain_thread() {
    assert_eq!(session_threads(), 0);
    let connect_string = common::connect_string("blocking_thread_end");
    let client = Client::connect_with(
        zookeeper_tokio::Client::builder(&connect_string).connect_timeout(Duration::from_secs(30)),
    )
    .unwrap();
    client
        .create("/n", b"", &CreateOptions::ephemeral())
        .unwrap();
    assert_eq!(session_threads(), 1);
    let clone = client.clone();
    std::thread::spawn(move || drop(clone)).join().unwrap();
    std::thread::spawn(move || drop(client)).join().unwrap();
    until("the session thread ended", || session_threads() == 0);

    // A failed connect leaves no thread behind either.
    let refused = Client::connect_with(
        zookeeper_tokio::Client::builder("127.0.0.1:1").connect_timeout(Duration::from_millis(200)),
    );
    assert!(refused.is_err());
    until("the failed connect's thread ended", || {
        session_threads() == 0
    });
}
