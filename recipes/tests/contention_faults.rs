//! The leader selector and the semaphore's leases through a session the server expires, and
//! through the death of the ensemble member serving the session.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::faults::{self, move_session};
use common::{bounded, client};
use tokio::sync::mpsc;
use zookeeper_recipes::{
    CancelOn, Holding, LeaderContext, LeaderSelector, LossReason, SemaphoreMutex,
};
use zookeeper_testkit::{Ensemble, Proxy};
use zookeeper_tokio::{Client, SessionState};

/// Set while a work runs; cleared when it is dropped (cancelled) or returns.
struct Running(Arc<AtomicBool>);

impl Running {
    fn start(flag: &Arc<AtomicBool>) -> Running {
        flag.store(true, Ordering::SeqCst);
        Running(flag.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// A selector whose work runs until cancelled, flagging `running` meanwhile and sending each
/// term's token to `terms`.
fn selector(
    c: &Client,
    path: &str,
    cancel_on: CancelOn,
    running: &Arc<AtomicBool>,
    terms: mpsc::UnboundedSender<i64>,
) -> LeaderSelector {
    let running = running.clone();
    LeaderSelector::builder(c, path)
        .cancel_on(cancel_on)
        .auto_requeue(true)
        .start(move |ctx: LeaderContext| {
            let (running, terms) = (running.clone(), terms.clone());
            async move {
                let _running = Running::start(&running);
                let _ = terms.send(ctx.fencing_token().0);
                std::future::pending::<()>().await;
            }
        })
        .unwrap()
}

/// Waits until `selector` reaches a final state; returns it.
async fn until_final(selector: &LeaderSelector) -> Holding {
    let mut changes = selector.changes();
    bounded("the selector ends", async {
        let mut last = None;
        while let Some(s) = changes.next().await {
            last = Some(s);
        }
        last.unwrap()
    })
    .await
}

/// The leader's session is ended at the server while the leader is cut off (closed through
/// another connection, so at once, not after the session timeout): with the default
/// `CancelOn::Suspended` its work stopped at the disconnect, before the other selector leads
/// (with a larger token); its selector, on a client whose session is gone, ends. The lease
/// holder on that session loses its lease, and a waiter gets one with a larger token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_stops_the_leader_and_frees_the_lease() {
    let server = zookeeper_testkit::shared_server();
    let chroot = zookeeper_testkit::chroot_for("contention_expiry");
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let victim = client(&format!("{}{}", proxy.connect_string(), chroot)).await;
    let direct = server.connect_string_with_chroot(&chroot);
    let other = client(&direct).await;

    let running = Arc::new(AtomicBool::new(false));
    let (a_tx, mut a_terms) = mpsc::unbounded_channel();
    let a = selector(&victim, "/election", CancelOn::Suspended, &running, a_tx);
    let a_token = bounded("a leads", a_terms.recv()).await.unwrap();
    let lease = bounded(
        "lease",
        SemaphoreMutex::new(&victim, "/m").unwrap().acquire(),
    )
    .await
    .unwrap();
    let lease_lost = lease.lost();

    let seen = running.clone();
    let (b_tx, mut b_terms) = mpsc::unbounded_channel();
    let b = LeaderSelector::builder(&other, "/election")
        .start(move |ctx: LeaderContext| {
            let (seen, b_tx) = (seen.clone(), b_tx.clone());
            async move {
                // Looked at the moment b leads.
                let _ = b_tx.send((ctx.fencing_token().0, seen.load(Ordering::SeqCst)));
                std::future::pending::<()>().await;
            }
        })
        .unwrap();
    let waiter = SemaphoreMutex::new(&other, "/m").unwrap();
    let waiting = tokio::spawn(async move {
        let l = waiter.acquire().await.unwrap();
        let token = l.fencing_token();
        l.release().await.unwrap();
        token
    });
    bounded("both queued", async {
        while common::children(&other, "/election").await.len() < 2
            || common::children(&other, "/m/leases").await.len() < 2
        {
            tokio::task::yield_now().await;
        }
    })
    .await;

    // `faults::expire`, with a look in between: the leader's work has stopped once its
    // client saw the disconnect, before the session is ended at the server.
    let mut states = victim.state_changes();
    proxy.refuse(true);
    proxy.drop_all();
    bounded(
        "disconnected",
        states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
    bounded("a's work stops", async {
        while running.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
    })
    .await;
    let twin = bounded(
        "resume",
        Client::builder(&direct)
            .session(victim.session_id(), &victim.session_password())
            .connect_timeout(common::CONNECT_TIMEOUT)
            .connect(),
    )
    .await
    .unwrap();
    twin.close().await;
    proxy.refuse(false);
    bounded("expired", states.wait_for(|s| s.is_terminal()))
        .await
        .unwrap();
    let (b_token, a_running) = bounded("b leads", b_terms.recv()).await.unwrap();
    assert!(!a_running, "b leads while a's work runs");
    assert!(b_token > a_token);
    let end = until_final(&a).await;
    assert!(matches!(end, Holding::Lost(_)), "{end:?}");
    let end = bounded("lease lost", lease_lost).await;
    assert!(
        matches!(
            end,
            Holding::Lost(
                LossReason::SessionExpired | LossReason::LeaseExpired | LossReason::SessionClosed
            )
        ),
        "{end:?}"
    );
    let token = bounded("waiter's lease", waiting).await.unwrap();
    assert!(token > lease.fencing_token());
    b.close().await;
}

/// The member serving the session dies and the session moves to another: a leader that cancels
/// only on loss leads on, untouched; one that cancels on suspension stops and leads again
/// under a new node; a lease is held again, and nobody else got it meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_kill_keeps_leadership_and_leases() {
    let ensemble = Ensemble::start(3).await.unwrap();
    bounded("ensemble serving", ensemble.wait_serving())
        .await
        .unwrap();
    // The session under test is kept off the leader, so that the kill is of a follower: no
    // election, and the session moves at once to the other follower, well within its 8 s
    // (a killed leader would make "leads on, untouched" depend on an election ending within
    // the lease). The bystander is on the members that survive: it sees no fault at all.
    let c = faults::client_off_the_leader(&ensemble, Duration::from_secs(8)).await;
    let member = ensemble
        .member_serving(c.session_id().0)
        .await
        .expect("a member serves the session");
    let other = client(&ensemble.connect_string_without(member).unwrap()).await;

    let steady_running = Arc::new(AtomicBool::new(false));
    let (steady_tx, mut steady_terms) = mpsc::unbounded_channel();
    let steady = selector(&c, "/steady", CancelOn::Lost, &steady_running, steady_tx);
    let steady_token = bounded("steady leads", steady_terms.recv()).await.unwrap();
    let careful_running = Arc::new(AtomicBool::new(false));
    let (careful_tx, mut careful_terms) = mpsc::unbounded_channel();
    let careful = selector(
        &c,
        "/careful",
        CancelOn::Suspended,
        &careful_running,
        careful_tx,
    );
    let careful_token = bounded("careful leads", careful_terms.recv())
        .await
        .unwrap();
    let lease = bounded("lease", SemaphoreMutex::new(&c, "/m").unwrap().acquire())
        .await
        .unwrap();
    let mut lease_states = lease.state_watcher();

    let killed = bounded("session moved", move_session(&ensemble, &c)).await;
    assert_eq!(killed, Some(member));

    let again = bounded("careful leads again", careful_terms.recv())
        .await
        .unwrap();
    assert!(again > careful_token, "a new term under a new node");
    bounded(
        "lease held again",
        lease_states.wait_for(|s| *s == Holding::Held),
    )
    .await
    .unwrap();
    assert!(
        SemaphoreMutex::new(&other, "/m")
            .unwrap()
            .try_acquire()
            .await
            .unwrap()
            .is_none(),
        "the lease was given to another"
    );
    assert!(steady.has_leadership());
    assert!(
        steady_running.load(Ordering::SeqCst),
        "steady's work was cancelled"
    );
    assert!(steady_terms.try_recv().is_err(), "steady led again");
    let parts = steady.participants().await.unwrap();
    assert_eq!(parts.len(), 1);
    assert!(steady_token > 0);
    lease.release().await.unwrap();
    steady.close().await;
    careful.close().await;
    assert!(!steady_running.load(Ordering::SeqCst));
}
