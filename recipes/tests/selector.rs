//! The leader selector against a real server: terms in turn with growing tokens, requeue,
//! interruption, close, and its work cancelled on a disconnect (or not, as configured) and on
//! the session's loss before anyone else leads.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use common::{blip_rig, bounce_connection, bounded, children, chroot_connect, client, clients};
use tokio::sync::mpsc;
use zookeeper_recipes::{CancelOn, Holding, LeaderContext, LeaderSelector};
use zookeeper_testkit::{Proxy, ZkServer};

/// Waits until `selector` reaches `state`.
async fn until(selector: &LeaderSelector, state: Holding) {
    let mut changes = selector.changes();
    bounded(&format!("selector {state}"), async {
        while let Some(s) = changes.next().await {
            if s == state {
                return;
            }
        }
        panic!("the selector ended before {state}");
    })
    .await
}

/// A leader's work that tells `tx` it started (with its token), then runs until cancelled,
/// and tells `stopped` when it is dropped.
fn run_until_cancelled(
    tx: mpsc::UnboundedSender<i64>,
    stopped: mpsc::UnboundedSender<i64>,
) -> impl FnMut(LeaderContext) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
       + Send
       + 'static {
    move |ctx: LeaderContext| {
        let (tx, stopped) = (tx.clone(), stopped.clone());
        Box::pin(async move {
            let token = ctx.fencing_token().0;
            struct OnDrop(mpsc::UnboundedSender<i64>, i64);
            impl Drop for OnDrop {
                fn drop(&mut self) {
                    let _ = self.0.send(self.1);
                }
            }
            let _on_drop = OnDrop(stopped, token);
            let _ = tx.send(token);
            std::future::pending::<()>().await;
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn participants_lead_in_turn_with_growing_tokens_and_requeue() {
    let connect = chroot_connect("selector_turns");
    let cs = clients(&connect, 3).await;
    let inside = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(StdMutex::new(Vec::<(usize, u64, i64)>::new()));
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let mut selectors = Vec::new();
    for (i, c) in cs.iter().enumerate() {
        let (inside, log, done_tx) = (inside.clone(), log.clone(), done_tx.clone());
        let selector = LeaderSelector::builder(c, "/election")
            .id(&format!("p{i}"))
            .auto_requeue(true)
            .start(move |ctx: LeaderContext| {
                let (inside, log, done_tx) = (inside.clone(), log.clone(), done_tx.clone());
                async move {
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two leaders");
                    assert_eq!(ctx.state(), Holding::Held);
                    log.lock()
                        .unwrap()
                        .push((i, ctx.term(), ctx.fencing_token().0));
                    tokio::task::yield_now().await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    if ctx.term() == 4 {
                        let _ = done_tx.send(i);
                    }
                }
            })
            .unwrap();
        selectors.push(selector);
    }
    let mut finished = Vec::new();
    while finished.len() < 3 {
        finished.push(bounded("four terms each", done.recv()).await.unwrap());
    }
    for s in &selectors {
        s.close().await;
        assert_eq!(s.state(), Holding::Released);
    }
    let log = log.lock().unwrap().clone();
    for w in log.windows(2) {
        assert!(w[1].2 > w[0].2, "tokens do not grow: {log:?}");
    }
    for i in 0..3 {
        let terms: Vec<u64> = log.iter().filter(|e| e.0 == i).map(|e| e.1).collect();
        assert!(terms.starts_with(&[1, 2, 3, 4]), "p{i} led {terms:?}");
    }
    assert!(children(&cs[0], "/election").await.is_empty(), "nodes left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auto_requeue_a_selector_leads_once_until_requeued() {
    let connect = chroot_connect("selector_requeue");
    let c = client(&connect).await;
    let (tx, mut terms) = mpsc::unbounded_channel();
    let selector = LeaderSelector::builder(&c, "/election")
        .id("once")
        .start(move |ctx: LeaderContext| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(ctx.term());
            }
        })
        .unwrap();
    assert_eq!(bounded("first term", terms.recv()).await, Some(1));
    until(&selector, Holding::Idle).await;
    assert!(
        children(&c, "/election").await.is_empty(),
        "node kept while idle"
    );
    assert!(terms.try_recv().is_err(), "led again without a requeue");
    assert!(selector.requeue());
    assert_eq!(bounded("second term", terms.recv()).await, Some(2));
    until(&selector, Holding::Idle).await;
    selector.close().await;
    assert!(!selector.requeue(), "a closed selector does not queue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn participants_and_interruption_and_close() {
    let connect = chroot_connect("selector_participants");
    let cs = clients(&connect, 2).await;
    let (tx, mut started) = mpsc::unbounded_channel();
    let (stopped_tx, mut stopped) = mpsc::unbounded_channel();
    let a = LeaderSelector::builder(&cs[0], "/election")
        .id("a")
        .start(run_until_cancelled(tx.clone(), stopped_tx.clone()))
        .unwrap();
    let first = bounded("a leads", started.recv()).await.unwrap();
    let b = LeaderSelector::builder(&cs[1], "/election")
        .id("b")
        .auto_requeue(true)
        .start(run_until_cancelled(tx, stopped_tx))
        .unwrap();
    until(&b, Holding::Waiting).await;
    bounded("b queued", async {
        while children(&cs[0], "/election").await.len() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    let parts = b.participants().await.unwrap();
    let ids: Vec<(&str, bool)> = parts.iter().map(|p| (p.id.as_str(), p.is_leader)).collect();
    assert_eq!(ids, [("a", true), ("b", false)]);
    assert!(parts[0].node.starts_with("_c_") && parts[0].node.contains("-lock-"));
    assert_eq!(b.leader().await.unwrap().unwrap().id, "a");

    // Interrupting a's work ends its term: b leads, a (no auto-requeue) is idle.
    a.interrupt_leadership();
    assert_eq!(
        bounded("a's work stopped", stopped.recv()).await,
        Some(first)
    );
    let second = bounded("b leads", started.recv()).await.unwrap();
    assert!(second > first);
    until(&a, Holding::Idle).await;
    assert!(b.has_leadership());

    // Closing the leader stops its work before its node goes.
    b.close().await;
    assert_eq!(
        stopped.try_recv().ok(),
        Some(second),
        "work still running after close"
    );
    assert!(children(&cs[0], "/election").await.is_empty());
    a.close().await;
}

/// The default: a disconnect cancels the work (however quickly the connection comes back),
/// and with auto-requeue the selector leads again under a new node once connected.
#[test]
fn a_disconnect_cancels_the_work_and_auto_requeue_leads_again() {
    let rig = blip_rig("selector_suspended");
    let (tx, mut started) = mpsc::unbounded_channel();
    let (stopped_tx, mut stopped) = mpsc::unbounded_channel();
    let c = rig.client.clone();
    let (selector, first) = rig.app.block_on(async {
        let selector = LeaderSelector::builder(&c, "/election")
            .auto_requeue(true)
            .start(run_until_cancelled(tx, stopped_tx))
            .unwrap();
        let first = bounded("leads", started.recv()).await.unwrap();
        (selector, first)
    });
    // The selector's runtime stands still while the connection drops and comes back.
    rig.net
        .block_on(async { bounce_connection(&rig.client, &rig.proxy).await });
    rig.app.block_on(async {
        assert_eq!(bounded("work cancelled", stopped.recv()).await, Some(first));
        let second = bounded("leads again", started.recv()).await.unwrap();
        assert!(second > first, "a new term under a new node");
        selector.close().await;
    });
}

/// `CancelOn::Lost`: a disconnect that heals within the session timeout leaves the work
/// running and the leadership held.
#[test]
fn cancel_on_lost_keeps_leading_through_a_healed_disconnect() {
    let rig = blip_rig("selector_cancel_on_lost");
    let (tx, mut started) = mpsc::unbounded_channel();
    let (stopped_tx, mut stopped) = mpsc::unbounded_channel();
    let (states_tx, mut states) = mpsc::unbounded_channel();
    let c = rig.client.clone();
    let selector = rig.app.block_on(async {
        let selector = LeaderSelector::builder(&c, "/election")
            .cancel_on(CancelOn::Lost)
            .start(move |ctx: LeaderContext| {
                let (tx, stopped, states_tx) = (tx.clone(), stopped_tx.clone(), states_tx.clone());
                let mut changes = ctx.state_changes();
                async move {
                    tokio::spawn(async move {
                        while let Some(s) = changes.next().await {
                            let _ = states_tx.send(s);
                        }
                    });
                    run_until_cancelled(tx, stopped)(ctx).await
                }
            })
            .unwrap();
        bounded("leads", started.recv()).await.unwrap();
        assert_eq!(bounded("held", states.recv()).await, Some(Holding::Held));
        selector
    });
    rig.net
        .block_on(async { bounce_connection(&rig.client, &rig.proxy).await });
    rig.app.block_on(async {
        assert_eq!(
            bounded("suspended", states.recv()).await,
            Some(Holding::Suspended)
        );
        assert_eq!(
            bounded("held again", states.recv()).await,
            Some(Holding::Held)
        );
        assert!(stopped.try_recv().is_err(), "the work was cancelled");
        assert!(selector.has_leadership());
        selector.close().await;
        assert!(stopped.try_recv().is_ok(), "close cancels the work");
    });
}

/// A leader cut off from the server: its work is cancelled (the lease runs out) before the
/// other selector leads, which it does with a larger token. The cut-off selector's session
/// ends with it, and so does the selector.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_stops_before_the_next_leads() {
    use std::sync::atomic::AtomicBool;
    let server = ZkServer::start().await.unwrap();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    // A 4 s session (`common::client`): its lease, renewed every third of it, leaves a's work
    // well over 2 s to be seen running before the black hole, even on a starved machine; a
    // shorter one could run out and cancel it first.
    let cut_off = client(&proxy.connect_string()).await;
    let other = client(&server.connect_string()).await;

    /// Set while a's work runs; cleared when it is dropped.
    struct Running(Arc<AtomicBool>);
    impl Drop for Running {
        fn drop(&mut self) {
            self.0.store(false, Ordering::SeqCst);
        }
    }
    let running = Arc::new(AtomicBool::new(false));
    let (tx, mut started) = mpsc::unbounded_channel();
    let flag = running.clone();
    let a = LeaderSelector::builder(&cut_off, "/election")
        .id("a")
        .cancel_on(CancelOn::Lost)
        .auto_requeue(true)
        .start(move |ctx: LeaderContext| {
            let (tx, flag) = (tx.clone(), flag.clone());
            async move {
                flag.store(true, Ordering::SeqCst);
                let _running = Running(flag);
                let _ = tx.send(ctx.fencing_token().0);
                std::future::pending::<()>().await;
            }
        })
        .unwrap();
    let first = bounded("a leads", started.recv()).await.unwrap();
    assert!(running.load(Ordering::SeqCst));
    let (b_tx, mut b_started) = mpsc::unbounded_channel();
    let seen = running.clone();
    let b = LeaderSelector::builder(&other, "/election")
        .id("b")
        .start(move |ctx: LeaderContext| {
            let (b_tx, seen) = (b_tx.clone(), seen.clone());
            async move {
                // Looked at the moment b leads.
                let _ = b_tx.send((ctx.fencing_token().0, seen.load(Ordering::SeqCst)));
            }
        })
        .unwrap();
    bounded("b queued", async {
        while children(&other, "/election").await.len() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;

    proxy.black_hole(true);
    let (token, a_still_running) = bounded("b leads", b_started.recv()).await.unwrap();
    assert!(token > first);
    assert!(!a_still_running, "b leads while a's work still runs");
    let mut changes = a.changes();
    let end = bounded("a ends", async {
        loop {
            match changes.next().await {
                Some(s @ Holding::Lost(_)) => return s,
                Some(Holding::Released) | None => panic!("closed instead of ended"),
                Some(_) => {}
            }
        }
    })
    .await;
    assert!(matches!(end, Holding::Lost(_)), "{end:?}");
    b.close().await;
}

/// A work that panics ends its term like one that returns: the selector lets go and, with
/// auto-requeue, leads again. Dropping the selector deletes its node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_work_ends_its_term_and_a_dropped_selector_leaves_nothing() {
    let connect = chroot_connect("selector_panic");
    let c = client(&connect).await;
    let (tx, mut terms) = mpsc::unbounded_channel();
    let selector = LeaderSelector::builder(&c, "/election")
        .auto_requeue(true)
        .start(move |ctx: LeaderContext| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(ctx.term());
                if ctx.term() == 1 {
                    panic!("the first term's work fails");
                }
                std::future::pending::<()>().await;
            }
        })
        .unwrap();
    assert_eq!(bounded("first term", terms.recv()).await, Some(1));
    assert_eq!(bounded("second term", terms.recv()).await, Some(2));
    assert!(selector.has_leadership());
    assert_eq!(children(&c, "/election").await.len(), 1);
    drop(selector);
    assert!(common::wait_empty(&c, "/election").await.is_empty());
}
