//! A release as a program's last act, and guards dropped where no runtime runs: the node goes
//! at once, not when the session ends (a session timeout later, or never while the client
//! lives).

mod common;

use std::time::Duration;

use common::{bounded, chroot_connect, client, client_with_session};
use zookeeper_recipes::{LeaderLatch, Mutex};
use zookeeper_tokio::EventType;

/// Longer than any test here: a node that goes cannot have gone with its session.
const LONG_SESSION: Duration = Duration::from_secs(30);

fn runtime(multi_thread: bool) -> tokio::runtime::Runtime {
    let mut builder = if multi_thread {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder.enable_all().build().unwrap()
}

/// A program that acquires, releases and returns from `main`: its runtime stops the moment
/// `release` returns, with the client dropped and never closed.
fn release_as_the_last_act(multi_thread: bool, test: &str) {
    let connect = chroot_connect(test);
    let program = runtime(multi_thread);
    let node = program.block_on(async {
        let c = client_with_session(&connect, LONG_SESSION).await;
        let guard = bounded("acquire", Mutex::new(&c, "/lock").unwrap().acquire())
            .await
            .unwrap();
        let node = guard.path().to_owned();
        bounded("release", guard.release()).await.unwrap();
        node
    });
    drop(program);

    runtime(false).block_on(async {
        let other = client(&connect).await;
        assert_eq!(
            other.exists(&node).await.unwrap(),
            None,
            "the node of a release that returned is gone"
        );
    });
}

#[test]
fn a_release_that_returned_has_deleted_the_node_current_thread() {
    release_as_the_last_act(false, "release_last_act_ct");
}

#[test]
fn a_release_that_returned_has_deleted_the_node_multi_thread() {
    release_as_the_last_act(true, "release_last_act_mt");
}

/// The guard outlives the `block_on` that acquired it and is dropped on the plain thread
/// after it: nothing of the runtime runs at the drop.
#[test]
fn a_guard_dropped_outside_any_runtime_deletes_its_node() {
    let connect = chroot_connect("release_dropped_outside");
    let program = runtime(false);
    let (mutex, guard, watching, deleted) = program.block_on(async {
        let c = client_with_session(&connect, LONG_SESSION).await;
        let mutex = Mutex::new(&c, "/lock").unwrap();
        let guard = bounded("acquire", mutex.acquire()).await.unwrap();
        let watching = client(&connect).await;
        let (stat, deleted) = watching.exists_and_watch(guard.path()).await.unwrap();
        assert!(stat.is_some());
        (mutex, guard, watching, deleted)
    });
    drop(guard);

    program.block_on(async {
        let event = bounded("the dropped guard's node deleted", deleted).await;
        assert_eq!(event.event_type, EventType::NodeDeleted, "{event}");
        // The same handle is not queued behind a node nobody holds.
        let again = bounded("acquire again", mutex.acquire()).await.unwrap();
        again.release().await.unwrap();
        drop(watching);
    });
}

#[test]
fn a_latch_dropped_outside_any_runtime_hands_the_leadership_on() {
    let connect = chroot_connect("release_latch_dropped_outside");
    let program = runtime(false);
    // The leader's client stays open: the node cannot go with a closed session.
    let (leader, next, _leaders_client) = program.block_on(async {
        let (a, b) = (
            client_with_session(&connect, LONG_SESSION).await,
            client(&connect).await,
        );
        let leader = bounded("start a", LeaderLatch::start(&a, "/election", "a"))
            .await
            .unwrap();
        bounded("a leads", leader.await_leadership()).await.unwrap();
        let next = bounded("start b", LeaderLatch::start(&b, "/election", "b"))
            .await
            .unwrap();
        (leader, next, a)
    });
    drop(leader);

    program.block_on(async {
        bounded("b leads", next.await_leadership()).await.unwrap();
    });
}

/// Threads of this process named for cleanups, alive now.
fn cleanup_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "zk-cleanup")
        .count()
}

/// A program that drops many guards where no runtime runs: their cleanups share one thread
/// (a thread each could run the system out of threads, and the node of a cleanup that got
/// none stayed), and every node goes.
#[test]
fn many_guards_dropped_outside_any_runtime_share_one_cleanup_thread() {
    const GUARDS: usize = 200;
    let connect = chroot_connect("release_many_dropped_outside");
    let program = runtime(false);
    let (guards, watchers, _clients) = program.block_on(async {
        let c = client_with_session(&connect, LONG_SESSION).await;
        let watching = client(&connect).await;
        let mut guards = Vec::new();
        let mut watchers = Vec::new();
        for i in 0..GUARDS {
            let mutex = Mutex::new(&c, &format!("/lock{i}")).unwrap();
            let guard = bounded("acquire", mutex.acquire()).await.unwrap();
            let (stat, deleted) = watching.exists_and_watch(guard.path()).await.unwrap();
            assert!(stat.is_some());
            guards.push(guard);
            watchers.push(deleted);
        }
        (guards, watchers, (c, watching))
    });
    drop(guards);
    let threads = cleanup_threads();
    assert!(threads <= 1, "{threads} cleanup threads for {GUARDS} drops");

    program.block_on(async {
        for deleted in watchers {
            let event = bounded("a dropped guard's node deleted", deleted).await;
            assert_eq!(event.event_type, EventType::NodeDeleted, "{event}");
        }
    });
}
