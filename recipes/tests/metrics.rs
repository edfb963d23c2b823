//! The recipes' metrics (cargo feature `metrics`), read from a recorder after known workloads
//! against a real server: lock waits and holds by recipe, acquisitions, timeouts, losses by
//! reason, leadership gained and lost, a leader selector's terms.
//!
//! Each test runs on a current-thread runtime with a recorder of its own on that thread
//! (`zookeeper_testkit::metrics::recorded`), background tasks included, so that tests
//! running in parallel never see each other's metrics.

mod common;

use std::time::Duration;

use common::{bounded, chroot_connect, client, clients};
use tokio::time::Instant;
use zookeeper_recipes::{
    Client, Holding, LeaderLatch, LeaderSelector, LossReason, Mutex, ReadWriteLock, Semaphore,
};
use zookeeper_testkit::metrics::recorded;

/// How long a holder keeps a lock while another waits for it, in the workload.
const HOLD: Duration = Duration::from_millis(300);

const WAIT: &str = "zookeeper_lock_wait_seconds";
const HELD: &str = "zookeeper_lock_hold_seconds";
const ACQUISITIONS: &str = "zookeeper_lock_acquisitions_total";
const TIMEOUTS: &str = "zookeeper_lock_timeouts_total";
const LOSSES: &str = "zookeeper_lock_losses_total";

/// Waits until `path` has `n` children, on watches.
async fn wait_children(client: &Client, path: &str, n: usize) {
    bounded("contenders queued", async {
        loop {
            let (children, _, changed) = client.get_children_and_watch(path).await.unwrap();
            if children.len() >= n {
                return;
            }
            changed.await;
        }
    })
    .await
}

#[test]
fn lock_waits_holds_acquisitions_and_timeouts_are_recorded_by_recipe() {
    let mut bounds = (Duration::ZERO, Duration::ZERO);
    let m = recorded(|| async {
        let cs = clients(&chroot_connect("metrics_mutex"), 2).await;
        let a = Mutex::new(&cs[0], "/lock").unwrap();
        let b = Mutex::new(&cs[1], "/lock").unwrap();
        let started = Instant::now();
        let held = bounded("a acquires", a.acquire()).await.unwrap();
        assert!(b.try_acquire().await.unwrap().is_none());
        let timeout = Duration::from_millis(100);
        assert!(b.acquire_timeout(timeout).await.unwrap().is_none());

        let waiting = Instant::now();
        let (granted, ()) = tokio::join!(bounded("b acquires", b.acquire()), async {
            wait_children(&cs[0], "/lock", 2).await;
            tokio::time::sleep(HOLD).await;
            held.release().await.unwrap();
        });
        let b_waited = waiting.elapsed();
        granted.unwrap().release().await.unwrap();
        bounds = (b_waited, started.elapsed());
    });
    let (b_waited, everything) = bounds;
    let mutex = [("recipe", "mutex")];

    assert_eq!(m.counter(ACQUISITIONS, &mutex), 2);
    assert_eq!(
        m.counter(TIMEOUTS, &mutex),
        2,
        "try_acquire and acquire_timeout"
    );
    let waits = m.histogram(WAIT, &mutex);
    assert_eq!(waits.len(), 2, "{waits:?}");
    // b waited at least as long as a kept the lock after b queued, and no longer than the
    // test saw it wait.
    assert!(
        waits[1] >= HOLD.as_secs_f64() && waits[1] <= b_waited.as_secs_f64(),
        "{waits:?}, b waited {b_waited:?}"
    );
    let holds = m.histogram(HELD, &mutex);
    assert_eq!(holds.len(), 2, "{holds:?}");
    assert!(
        holds[0] >= HOLD.as_secs_f64() && holds[0] <= everything.as_secs_f64(),
        "{holds:?}"
    );
    assert_eq!(m.label_sets(LOSSES), Vec::<Vec<(String, String)>>::new());
    // The client's own metrics come with the recipes' feature.
    assert!(m.counter("zookeeper_requests_total", &[("operation", "create")]) >= 4);
}

#[test]
fn a_lost_lock_is_recorded_with_its_reason_and_its_hold_ends_there() {
    let m = recorded(|| async {
        let c = client(&chroot_connect("metrics_lost")).await;
        let mutex = Mutex::new(&c, "/lock").unwrap();
        let guard = bounded("acquire", mutex.acquire()).await.unwrap();
        let lost = guard.lost();
        c.delete(guard.path(), None).await.unwrap();
        assert_eq!(
            bounded("lost", lost).await,
            Holding::Lost(LossReason::NodeDeleted)
        );
        // Released after the loss: the hold already ended.
        guard.release().await.unwrap();
    });
    assert_eq!(
        m.counter(LOSSES, &[("recipe", "mutex"), ("reason", "node_deleted")]),
        1
    );
    assert_eq!(m.label_sets(LOSSES).len(), 1);
    assert_eq!(m.histogram(HELD, &[("recipe", "mutex")]).len(), 1);
}

#[test]
fn read_write_locks_and_semaphores_are_recorded_as_their_own_recipes() {
    let m = recorded(|| async {
        let c = client(&chroot_connect("metrics_kinds")).await;
        let rw = ReadWriteLock::new(&c, "/rw").unwrap();
        bounded("read", rw.read())
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
        bounded("write", rw.write())
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
        let semaphore = Semaphore::new(&c, "/sem", 1).unwrap();
        let lease = bounded("lease", semaphore.acquire()).await.unwrap();
        assert!(semaphore.try_acquire().await.unwrap().is_none());
        lease.release().await.unwrap();
    });
    for recipe in ["read_lock", "write_lock"] {
        assert_eq!(
            m.counter(ACQUISITIONS, &[("recipe", recipe)]),
            1,
            "{recipe}"
        );
        assert_eq!(
            m.histogram(HELD, &[("recipe", recipe)]).len(),
            1,
            "{recipe}"
        );
    }
    let semaphore = [("recipe", "semaphore")];
    assert_eq!(m.counter(ACQUISITIONS, &semaphore), 1);
    assert_eq!(m.counter(TIMEOUTS, &semaphore), 1);
    assert_eq!(m.histogram(WAIT, &semaphore).len(), 1);
    assert_eq!(m.histogram(HELD, &semaphore).len(), 1);
    // The gate a semaphore takes around its leases is not counted as an application's mutex.
    assert_eq!(m.counter(ACQUISITIONS, &[("recipe", "semaphore_gate")]), 2);
    assert_eq!(m.counter(ACQUISITIONS, &[("recipe", "mutex")]), 0);
}

#[test]
fn leadership_gained_and_lost_are_counted() {
    let m = recorded(|| async {
        let cs = clients(&chroot_connect("metrics_leader"), 2).await;
        let first = bounded("start", LeaderLatch::start(&cs[0], "/election", "a"))
            .await
            .unwrap();
        bounded("a leads", first.await_leadership()).await.unwrap();
        let second = bounded("start", LeaderLatch::start(&cs[1], "/election", "b"))
            .await
            .unwrap();
        let mut changes = second.changes();
        bounded("b follows", async {
            while changes.next().await != Some(Holding::Waiting) {}
        })
        .await;
        first.resign().await.unwrap();
        bounded("b leads", second.await_leadership()).await.unwrap();
        let lost = second.lost();
        cs[0].delete(&second.node(), None).await.unwrap();
        assert_eq!(
            bounded("b lost", lost).await,
            Holding::Lost(LossReason::NodeDeleted)
        );
    });
    assert_eq!(m.counter("zookeeper_leadership_gained_total", &[]), 2);
    let lost = "zookeeper_leadership_lost_total";
    assert_eq!(m.counter(lost, &[("reason", "resigned")]), 1);
    assert_eq!(m.counter(lost, &[("reason", "node_deleted")]), 1);
    assert_eq!(m.label_sets(lost).len(), 2, "{:?}", m.label_sets(lost));
}

#[test]
fn a_leader_selector_is_recorded_as_its_own_recipe_and_a_close_in_the_queue_is_no_timeout() {
    let m = recorded(|| async {
        let cs = clients(&chroot_connect("metrics_selector"), 2).await;
        let (leading, mut led) = tokio::sync::mpsc::unbounded_channel();
        let (end_term, term_ends) = tokio::sync::oneshot::channel::<()>();
        let term_ends = std::sync::Arc::new(tokio::sync::Mutex::new(Some(term_ends)));
        let a = LeaderSelector::builder(&cs[0], "/election")
            .id("a")
            .start(move |_| {
                let (leading, term_ends) = (leading.clone(), term_ends.clone());
                async move {
                    let _ = leading.send(());
                    if let Some(ends) = term_ends.lock().await.take() {
                        let _ = ends.await;
                    }
                }
            })
            .unwrap();
        bounded("a leads", led.recv()).await.unwrap();
        let b = LeaderSelector::builder(&cs[1], "/election")
            .id("b")
            .start(|_| async {})
            .unwrap();
        wait_children(&cs[0], "/election", 2).await;
        // Closed while queued: its acquisition stops, which is not a timeout.
        bounded("b leaves the queue", b.close()).await;
        end_term.send(()).unwrap();
        let mut changes = a.changes();
        bounded("a's term ends", async {
            while changes.next().await != Some(Holding::Idle) {}
        })
        .await;
        bounded("a closes", a.close()).await;
    });
    let selector = [("recipe", "leader_selector")];
    assert_eq!(m.counter(ACQUISITIONS, &selector), 1);
    assert_eq!(m.histogram(WAIT, &selector).len(), 1);
    assert_eq!(m.histogram(HELD, &selector).len(), 1, "a's term");
    assert_eq!(m.counter(TIMEOUTS, &selector), 0, "b's close is no timeout");
    // Terms are not counted as the application's mutexes.
    assert_eq!(m.counter(ACQUISITIONS, &[("recipe", "mutex")]), 0);
    assert_eq!(m.label_sets(TIMEOUTS), Vec::<Vec<(String, String)>>::new());
}

#[test]
fn creates_past_the_sequence_warning_are_counted() {
    let m = recorded(|| async {
        let server = zookeeper_testkit::ZkServer::start().await.unwrap();
        let c = common::client(&server.connect_string()).await;
        let mutex = Mutex::new(&c, "/near").unwrap();
        mutex.acquire().await.unwrap().release().await.unwrap();
        // The release's delete is applied before the server stops (a read on the same session
        // comes after it), so that no lock node of ours is in the seeded data.
        assert!(c.get_children("/near").await.unwrap().0.is_empty());
        bounded(
            "seeding",
            server.set_sequence_counter("/near", zookeeper_recipes::SEQUENCE_WARNING_THRESHOLD),
        )
        .await
        .unwrap();
        // A new session: whether the old one outlives the restart is not what this counts.
        let c = common::client(&server.connect_string()).await;
        let mutex = Mutex::new(&c, "/near").unwrap();
        for _ in 0..2 {
            let guard = bounded("past the threshold", mutex.acquire())
                .await
                .unwrap();
            guard.release().await.unwrap();
        }
    });
    assert_eq!(m.counter("zookeeper_sequence_near_wrap_total", &[]), 2);
}
