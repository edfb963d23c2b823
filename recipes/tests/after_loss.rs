//! What a recipe says once it knows its hold is gone: a guarded write on a guard that reads
//! lost fails at once with a typed error, nothing sent; a leader latch whose session expired
//! while it waited ends the wait with an error that says the session is gone.

mod common;

use common::faults::{expire, expiry_rig, ExpiryRig};
use common::{bounded, client};
use zookeeper_recipes::{Error, Holding, LeaderLatch, LossReason, Mutex};
use zookeeper_testkit::{shared_server, Proxy};
use zookeeper_tokio::{CreateOptions, MultiOp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_write_on_a_guard_known_lost_fails_at_once_with_not_held() {
    let chroot = zookeeper_testkit::chroot_for("after_loss_guarded");
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let holder = client(&format!("{}{chroot}", proxy.connect_string())).await;
    let m = Mutex::new(&holder, "/lock").unwrap();
    let guard = bounded("acquire", m.acquire()).await.unwrap();

    // Cut off for good: the lease runs out one session timeout after the last reply.
    proxy.refuse(true);
    proxy.drop_all();
    // The lease runs out first, unless a starved runtime saw the local expiry first.
    let end = bounded("the lease to run out", guard.lost()).await;
    assert!(
        matches!(
            end,
            Holding::Lost(LossReason::LeaseExpired | LossReason::SessionExpired)
        ),
        "{end:?}"
    );
    assert_eq!(guard.state(), end);

    // Still cut off: a write that was sent could only wait for the connection or fail as a
    // retryable connection loss. Refused before sending, it says the lock is not ours.
    let err = bounded(
        "the guarded write",
        guard.guarded_multi(vec![MultiOp::create(
            "/stale",
            b"",
            &CreateOptions::persistent(),
        )]),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, Error::NotHeld { ref path } if path == guard.path()),
        "{err:?}"
    );
    assert!(!err.is_retryable(), "{err:?}");
    proxy.refuse(false);
    let direct = client(&shared_server().connect_string_with_chroot(&chroot)).await;
    assert_eq!(
        direct.exists("/stale").await.unwrap(),
        None,
        "nothing written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_while_awaiting_leadership_is_session_terminal() {
    let ExpiryRig {
        proxy,
        direct,
        sessions,
    } = expiry_rig("after_loss_latch").await;
    let leader_client = client(&direct).await;
    let leader = bounded("join", LeaderLatch::start(&leader_client, "/e", "leader"))
        .await
        .unwrap();
    bounded("lead", leader.await_leadership()).await.unwrap();

    let waiter_client = sessions.client();
    let waiter = bounded("join", LeaderLatch::start(&waiter_client, "/e", "waiter"))
        .await
        .unwrap();
    let waiting = tokio::spawn(async move { waiter.await_leadership().await });
    expire(&proxy, &direct, &waiter_client).await;
    let err = bounded("the wait to end", waiting)
        .await
        .unwrap()
        .unwrap_err();
    // The lease may run out before the client hears of the expiry: either way the error
    // names why, and once the expiry is known it is session-terminal.
    match err {
        Error::LatchLost {
            reason: LossReason::SessionExpired,
        } => assert!(err.is_session_terminal(), "{err:?}"),
        Error::LatchLost {
            reason: LossReason::LeaseExpired,
        } => assert!(err.is_retryable(), "{err:?}"),
        other => panic!("{other:?}"),
    }
    assert!(
        waiter_client.state().is_terminal(),
        "the session is gone, and a new latch on it would say so"
    );
}
