//! The blocking recipes from plain threads, against the shared server: a lock excludes
//! threads sharing a handle and threads on other sessions, a guard dropped on a plain thread
//! hands the lock on, a guard reads lost on its first look after a pause past its lease and
//! once the server ends its session, and the read-write lock, the semaphore, the latch and
//! the selector grant as their async forms do; a selector's term ends when its work, told to
//! stop, returns.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{chroot_connect, init_tracing, BOUND, CONNECT_TIMEOUT};
use zookeeper_recipes::blocking::{
    LeaderContext, LeaderLatch, LeaderSelector, Mutex, ReadWriteLock, Semaphore,
};
use zookeeper_recipes::{Holding, LossReason};
use zookeeper_tokio::blocking::Client;

fn connect(connect_string: &str, session: Duration) -> Client {
    init_tracing();
    Client::connect_with(
        zookeeper_tokio::Client::builder(connect_string)
            .session_timeout(session)
            .connect_timeout(CONNECT_TIMEOUT),
    )
    .expect("connect")
}

/// Runs `f` on a thread of its own, failing the test if it has not returned within
/// [`BOUND`] (a hang bound).
fn on_thread<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(BOUND) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => panic!("{what} did not return"),
        Err(RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

/// Threads sharing one handle, and threads on a second session, take turns: no two are ever
/// inside at once, and every turn is taken. Every guard is dropped (released) on the thread
/// that took it.
#[test]
fn a_lock_excludes_threads_sharing_a_handle_and_other_sessions() {
    let connect_string = chroot_connect("blocking_lock_threads");
    let sessions = [
        connect(&connect_string, Duration::from_secs(10)),
        connect(&connect_string, Duration::from_secs(10)),
    ];
    let mutexes: Vec<_> = sessions
        .iter()
        .map(|c| Arc::new(Mutex::new(c, "/lock").unwrap()))
        .collect();
    let inside = Arc::new(AtomicBool::new(false));
    let turns = Arc::new(AtomicUsize::new(0));
    const THREADS_PER_SESSION: usize = 3;
    const TURNS: usize = 5;
    let threads: Vec<_> = mutexes
        .iter()
        .flat_map(|m| std::iter::repeat(m).take(THREADS_PER_SESSION))
        .map(|mutex| {
            let (mutex, inside, turns) = (mutex.clone(), inside.clone(), turns.clone());
            std::thread::spawn(move || {
                for _ in 0..TURNS {
                    let guard = mutex.acquire().unwrap();
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    assert_eq!(guard.state(), Holding::Held);
                    // Let the others run while we hold.
                    std::thread::yield_now();
                    turns.fetch_add(1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                    drop(guard);
                }
            })
        })
        .collect();
    on_thread("every turn", move || {
        for t in threads {
            t.join().unwrap();
        }
    });
    assert_eq!(
        turns.load(Ordering::SeqCst),
        2 * THREADS_PER_SESSION * TURNS
    );
    assert_eq!(mutexes[0].participants().unwrap(), Vec::<String>::new());
}

/// A holder whose session's server stopped answering, and whose thread then stood still past
/// the lease, reads its lock lost on the first look, and `wait_lost` answers at once: the
/// guard reads the lease clock, as the async guard does.
#[test]
fn a_guard_reads_lost_on_its_first_look_after_a_pause_past_the_lease() {
    init_tracing();
    let proxy_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = zookeeper_testkit::shared_server();
    let proxy = proxy_runtime
        .block_on(zookeeper_testkit::Proxy::start(server.addr()))
        .unwrap();
    let chroot = zookeeper_testkit::chroot_for("blocking_guard_pause");
    let client = connect(&format!("{}{chroot}", proxy.addr()), Duration::from_secs(2));
    let mutex = Mutex::new(&client, "/lock").unwrap();
    let guard = mutex.acquire().unwrap();
    let watcher = guard.state_watcher();

    proxy.black_hole(true);
    // The pause: this thread stands still until past the lease, which no reply extends.
    let deadline = client.lease_deadline().expect("a lease while holding");
    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
    let lost = Holding::Lost(LossReason::LeaseExpired);
    assert_eq!(guard.state(), lost);
    assert_eq!(watcher.get(), lost);
    assert_eq!(
        guard.wait_lost_timeout(Duration::ZERO),
        Some(Holding::Lost(LossReason::LeaseExpired))
    );
    proxy.black_hole(false);
    // Still lost after the connection comes back: the session is expired, or at least
    // nothing can prove it was not.
    assert!(matches!(guard.state(), Holding::Lost(_)));
    let err = guard.guarded_multi(vec![]).unwrap_err();
    assert!(
        matches!(err, zookeeper_recipes::Error::NotHeld { .. }),
        "{err}"
    );
}

#[test]
fn readers_share_and_a_writer_waits_for_them() {
    let connect_string = chroot_connect("blocking_rwlock");
    let a = connect(&connect_string, Duration::from_secs(10));
    let b = connect(&connect_string, Duration::from_secs(10));
    let lock_a = ReadWriteLock::new(&a, "/rw").unwrap();
    let lock_b = Arc::new(ReadWriteLock::new(&b, "/rw").unwrap());
    let read_a = lock_a.read().unwrap();
    let read_b = lock_b.try_read().unwrap().expect("readers share");
    assert!(
        lock_a.try_write().is_err(),
        "a handle holding a read cannot wait to write"
    );
    drop(read_b);
    assert!(
        lock_b.try_write().unwrap().is_none(),
        "the other session reads"
    );
    let writer = {
        let lock_b = lock_b.clone();
        std::thread::spawn(move || {
            let guard = lock_b.write().unwrap();
            guard.fencing_token()
        })
    };
    read_a.release().unwrap();
    let token = on_thread("the writer", move || writer.join().unwrap());
    assert!(token > zookeeper_recipes::FencingToken(0));
}

#[test]
fn a_semaphore_grants_its_leases_and_no_more() {
    let connect_string = chroot_connect("blocking_semaphore");
    let c = connect(&connect_string, Duration::from_secs(10));
    let semaphore = Semaphore::new(&c, "/sem", 2).unwrap();
    let first = semaphore.acquire().unwrap();
    let _second = semaphore.acquire().unwrap();
    assert!(semaphore.try_acquire().unwrap().is_none(), "two leases out");
    std::thread::spawn(move || drop(first)).join().unwrap();
    let third = semaphore
        .acquire_timeout(BOUND)
        .unwrap()
        .expect("a lease returned on another thread is granted");
    assert_eq!(third.state(), Holding::Held);
}

#[test]
fn a_latch_hands_leadership_on_when_the_leader_drops_it_on_a_plain_thread() {
    let connect_string = chroot_connect("blocking_latch");
    let a = connect(&connect_string, Duration::from_secs(10));
    let b = connect(&connect_string, Duration::from_secs(10));
    let first = LeaderLatch::start(&a, "/leader", "a").unwrap();
    assert!(first.await_leadership_timeout(BOUND).unwrap());
    let second = LeaderLatch::start(&b, "/leader", "b").unwrap();
    let mut changes = second.changes();
    loop {
        match changes.recv_timeout(BOUND) {
            Ok(Holding::Waiting) => break,
            Ok(Holding::Joining) => continue,
            other => panic!("{other:?} before following"),
        }
    }
    assert_eq!(
        second
            .participants()
            .unwrap()
            .into_iter()
            .map(|p| p.id)
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    std::thread::spawn(move || drop(first)).join().unwrap();
    assert_eq!(changes.recv_timeout(BOUND), Ok(Holding::Held));
    assert!(second.has_leadership());
}

/// Two selectors requeueing on two sessions take turns: one term's work at a time, every
/// term with a larger fencing token than the one before.
#[test]
fn selectors_on_two_sessions_lead_one_at_a_time() {
    let connect_string = chroot_connect("blocking_selector_turns");
    let leading = Arc::new(AtomicBool::new(false));
    let (terms_tx, terms) = std::sync::mpsc::channel();
    let selectors: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|id| {
            let client = connect(&connect_string, Duration::from_secs(10));
            let (leading, terms_tx) = (leading.clone(), terms_tx.clone());
            LeaderSelector::builder(&client, "/election")
                .id(id)
                .auto_requeue(true)
                .start(move |ctx: LeaderContext| {
                    assert!(!leading.swap(true, Ordering::SeqCst), "two leaders at once");
                    assert!(!ctx.is_cancelled());
                    let _ = terms_tx.send((ctx.id().to_owned(), ctx.fencing_token()));
                    leading.store(false, Ordering::SeqCst);
                })
                .unwrap()
        })
        .collect();
    let mut tokens = Vec::new();
    let mut ids = std::collections::HashSet::new();
    while tokens.len() < 6 {
        let (id, token) = terms.recv_timeout(BOUND).expect("another term");
        ids.insert(id);
        tokens.push(token);
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    assert_eq!(ids.len(), 2, "both led");
    for selector in &selectors {
        selector.close();
        assert_eq!(selector.state(), Holding::Released);
    }
}

/// A term's work, told to stop (interrupted, then closed), returns, and only then does the
/// term end: `close` returns after the work did.
#[test]
fn a_term_ends_when_its_work_told_to_stop_returns() {
    let connect_string = chroot_connect("blocking_selector_stop");
    let client = connect(&connect_string, Duration::from_secs(10));
    let (started_tx, started) = std::sync::mpsc::channel();
    let returned = Arc::new(AtomicUsize::new(0));
    let selector = {
        let returned = returned.clone();
        LeaderSelector::builder(&client, "/election")
            .id("only")
            .start(move |ctx: LeaderContext| {
                let _ = started_tx.send(ctx.term());
                while !ctx.wait_cancelled(BOUND) {}
                returned.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
    };
    assert_eq!(started.recv_timeout(BOUND), Ok(1));
    assert!(selector.has_leadership());
    assert_eq!(
        selector.leader().unwrap().map(|p| p.id).as_deref(),
        Some("only")
    );
    let mut changes = selector.changes();
    selector.interrupt_leadership();
    loop {
        match changes.recv_timeout(BOUND) {
            Ok(Holding::Idle) => break,
            Ok(Holding::Held) => continue,
            other => panic!("{other:?} before idle"),
        }
    }
    assert_eq!(returned.load(Ordering::SeqCst), 1);
    assert!(selector.requeue());
    assert_eq!(started.recv_timeout(BOUND), Ok(2));
    on_thread("close", move || {
        selector.close();
        assert_eq!(
            returned.load(Ordering::SeqCst),
            2,
            "close waits for the work"
        );
        assert_eq!(selector.participants().unwrap(), vec![]);
    });
}

/// A holder whose session the server ended (another client resumed it and closed it) reads
/// its lock lost, `wait_lost` returns, and another session is granted the lock.
#[test]
fn a_guard_reads_lost_once_its_session_is_ended_by_the_server() {
    let connect_string = chroot_connect("blocking_guard_session_end");
    let holder = connect(&connect_string, Duration::from_secs(10));
    let guard = Mutex::new(&holder, "/lock").unwrap().acquire().unwrap();
    let thief = Client::connect_with(
        zookeeper_tokio::Client::builder(&connect_string)
            .session(holder.session_id(), &holder.session_password())
            .connect_timeout(CONNECT_TIMEOUT),
    )
    .expect("resume the holder's session");
    thief.close();
    let (end, state) = on_thread("the loss", move || {
        let end = guard.wait_lost();
        (end, guard.state())
    });
    assert!(matches!(end, Holding::Lost(_)), "{end:?}");
    assert_eq!(state, end);
    let other = connect(&connect_string, Duration::from_secs(10));
    let granted = Mutex::new(&other, "/lock")
        .unwrap()
        .acquire_timeout(BOUND)
        .unwrap();
    assert!(granted.is_some(), "the ended session's node went with it");
}
