//! Handoffs along a queue against a real server: a waiter watches the contender in its way and
//! the one before that, so the second waiter in line is granted with no listing, and a waiter
//! with more ahead is never granted early, whoever gives up (acquisition dropped, session
//! closed, session expired) and in whichever order, nor under connection drops.

mod common;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::faults::expire;
use common::{bounded, client, clients, until_children, GET_CHILDREN2};
use tokio::task::JoinHandle;
use zookeeper_recipes::{LockGuard, Mutex};
use zookeeper_testkit::{chroot_for, shared_server, FrameEvent, Proxy};
use zookeeper_tokio::Client;

/// getData, the request that sets a waiter's watch on a contender.
const GET_DATA: i32 = 4;

/// The opcodes of the requests the client behind the proxy sent (pings left out).
fn requests(log: &[FrameEvent]) -> Vec<i32> {
    log.iter()
        .filter_map(|e| match *e {
            FrameEvent::ClientToServer { xid, opcode, .. } if xid >= 0 => Some(opcode),
            _ => None,
        })
        .collect()
}

/// How many requests with `opcode` in the log were answered.
fn answered(log: &[FrameEvent], opcode: i32) -> usize {
    log.iter()
        .filter(|e| match **e {
            FrameEvent::ClientToServer {
                conn,
                xid,
                opcode: o,
            } if o == opcode => log.contains(&FrameEvent::ServerToClient { conn, xid }),
            _ => false,
        })
        .count()
}

/// A client on the shared server through a proxy of its own, in `chroot`.
async fn behind_proxy(chroot: &str) -> (Client, Proxy) {
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let c = client(&format!("{}{chroot}", proxy.connect_string())).await;
    (c, proxy)
}

/// Queue: holder, W1, W2. W2 watches W1 and the holder; the holder's release tells it that
/// W1's deletion is now its grant (W1 is all that is left ahead of it, and nobody can queue in
/// front), so when W1 releases, W2 holds the lock without a request: no listing on the
/// handoff path. Checked on W2's wire, from its watches set to its grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_waiter_is_granted_without_a_listing() {
    let chroot = chroot_for("handoff_second_waiter");
    let cs = clients(&shared_server().connect_string_with_chroot(&chroot), 2).await;
    let (c2, proxy) = behind_proxy(&chroot).await;
    let held = bounded("holder", Mutex::new(&cs[0], "/lock").unwrap().acquire())
        .await
        .unwrap();
    let w1 = Mutex::new(&cs[1], "/lock").unwrap();
    let first = tokio::spawn(async move {
        let g = w1.acquire().await.unwrap();
        let wakeups = g.wakeups();
        g.release().await.unwrap();
        wakeups
    });
    until_children(&cs[0], "/lock", 2).await;

    proxy.record_frames(true);
    let w2 = Mutex::new(&c2, "/lock").unwrap();
    let second = tokio::spawn(async move { w2.acquire().await });
    bounded(
        "W2 watching W1 and the holder",
        proxy.wait_for_frames(|log| answered(log, GET_DATA) == 2),
    )
    .await;
    proxy.take_frame_log();

    held.release().await.unwrap();
    assert_eq!(bounded("W1 acquires", first).await.unwrap(), 1);
    let g = bounded("W2 acquires", second).await.unwrap().unwrap();
    let log = proxy.take_frame_log();
    let asked = requests(&log);
    assert!(
        asked.is_empty(),
        "W2 sent {asked:?} between setting its watches and its grant: {log:?}"
    );
    assert_eq!(g.wakeups(), 2, "the holder's release, then W1's");
    g.release().await.unwrap();
}

/// How a contender stops waiting.
#[derive(Clone, Copy, Debug)]
enum GiveUp {
    /// Its acquisition is dropped (its node is deleted in the background).
    Drop,
    /// Its session is closed.
    Close,
    /// Its session is expired by the server.
    Expire,
}

/// A contender queued behind its own proxy.
struct Queued {
    client: Client,
    proxy: Proxy,
    acquiring: JoinHandle<()>,
}

impl Queued {
    async fn start(chroot: &str) -> Queued {
        let (client, proxy) = behind_proxy(chroot).await;
        let m = Mutex::new(&client, "/lock").unwrap();
        let acquiring = tokio::spawn(async move {
            // Never granted while the test's holder holds; what it returns once it gave up
            // does not matter.
            let _ = m.acquire().await;
        });
        Queued {
            client,
            proxy,
            acquiring,
        }
    }

    async fn give_up(self, how: GiveUp, direct: &str) {
        match how {
            GiveUp::Drop => self.acquiring.abort(),
            GiveUp::Close => self.client.close().await,
            GiveUp::Expire => expire(&self.proxy, direct, &self.client).await,
        }
    }
}

/// Queue: H (holding), A, B, C. C watches B and A; with either gone, the other and H are
/// still in its way, so neither deletion may be taken as the grant: C lists after each, and
/// is granted only once H releases. Both orders of A and B giving up, each in one of the ways
/// a contender stops waiting. C is checked by what it sees when granted: H must have released
/// by then. Before each next step the test waits until C either was granted or listed the
/// queue again (on its wire), so an early grant cannot hide behind a later one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_with_three_ahead_is_never_granted_early() {
    let cases = [
        ("a_then_b", [(0, GiveUp::Drop), (1, GiveUp::Close)]),
        ("b_then_a", [(1, GiveUp::Drop), (0, GiveUp::Expire)]),
        ("a_expires", [(0, GiveUp::Expire), (1, GiveUp::Drop)]),
        ("b_closes", [(1, GiveUp::Close), (0, GiveUp::Close)]),
    ];
    for (name, order) in cases {
        three_ahead(name, order).await;
    }
}

async fn three_ahead(name: &str, order: [(usize, GiveUp); 2]) {
    let chroot = chroot_for(&format!("handoff_three_ahead_{name}"));
    let direct = shared_server().connect_string_with_chroot(&chroot);
    let h = client(&direct).await;
    let held = bounded("H acquires", Mutex::new(&h, "/lock").unwrap().acquire())
        .await
        .unwrap();
    let holding = Arc::new(AtomicBool::new(true));
    let mut ahead = Vec::new();
    for n in 2..=3 {
        ahead.push(Some(Queued::start(&chroot).await));
        until_children(&h, "/lock", n).await;
    }

    let (c, proxy) = behind_proxy(&chroot).await;
    proxy.record_frames(true);
    let (granted_tx, mut granted) = tokio::sync::oneshot::channel();
    let m = Mutex::new(&c, "/lock").unwrap();
    let still_holding = holding.clone();
    let waiter = tokio::spawn(async move {
        let g = m.acquire().await.unwrap();
        let early = still_holding.load(Ordering::SeqCst);
        let _ = granted_tx.send(());
        (g, early)
    });
    bounded(
        "C watching B and A",
        proxy.wait_for_frames(|log| answered(log, GET_DATA) == 2),
    )
    .await;

    let mut left = 4;
    for (who, how) in order {
        proxy.take_frame_log();
        let queued = ahead[who].take().unwrap();
        queued.give_up(how, &direct).await;
        left -= 1;
        until_children(&h, "/lock", left).await;
        // C heard of the deletion: it was granted, or it listed the queue again.
        bounded(&format!("{name}: C looks again"), async {
            tokio::select! {
                () = proxy.wait_for_frames(|log| answered(log, GET_CHILDREN2) >= 1) => {}
                _ = &mut granted => {}
            }
        })
        .await;
        assert!(
            !waiter.is_finished(),
            "{name}: C was granted with H holding, after {how:?} of {}",
            ["A", "B"][who]
        );
    }

    holding.store(false, Ordering::SeqCst);
    let token = held.fencing_token();
    held.release().await.unwrap();
    let (g, early): (LockGuard, bool) = bounded("C acquires", waiter).await.unwrap();
    assert!(!early, "{name}: C was granted while H held");
    assert!(g.fencing_token() > token);
    g.release().await.unwrap();
}

/// Contenders that give up at random (short timeouts, dropped acquisitions) beside ones that
/// wait, half of them on sessions whose connections are dropped now and then: whoever is
/// deleted ahead of a waiter, and whenever, no two ever hold the lock at once, and every
/// patient contender is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contenders_giving_up_and_connections_dropping_keep_exclusion() {
    const SESSIONS: usize = 6;
    const PER_SESSION: usize = 2;
    const ROUNDS: usize = 12;
    let chroot = chroot_for("handoff_giving_up");
    let direct = shared_server().connect_string_with_chroot(&chroot);
    let proxy = Arc::new(Proxy::start(shared_server().addr()).await.unwrap());
    let flaky = format!("{}{chroot}", proxy.connect_string());
    let mut sessions = Vec::new();
    for s in 0..SESSIONS {
        sessions.push(client(if s % 2 == 0 { &direct } else { &flaky }).await);
    }
    let inside = Arc::new(AtomicBool::new(false));
    let (grants, mut grants_seen) = tokio::sync::watch::channel(0usize);
    let grants = Arc::new(grants);
    let mut tasks = Vec::new();
    for (s, c) in sessions.iter().enumerate() {
        for k in 0..PER_SESSION {
            let (c, inside, grants) = (c.clone(), inside.clone(), grants.clone());
            let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ ((s * PER_SESSION + k) as u64 + 1);
            tasks.push(tokio::spawn(async move {
                let m = Mutex::new(&c, "/lock").unwrap();
                let mut served = 0;
                for _ in 0..ROUNDS {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let guard = match seed % 4 {
                        0 => m
                            .acquire_timeout(Duration::from_millis(seed % 20))
                            .await
                            .unwrap(),
                        1 => {
                            // Dropped after a few polls: its node goes in the background.
                            let mut acquiring = std::pin::pin!(m.acquire());
                            let mut polls = seed % 5;
                            std::future::poll_fn(|cx| match acquiring.as_mut().poll(cx) {
                                std::task::Poll::Ready(g) => std::task::Poll::Ready(g.ok()),
                                std::task::Poll::Pending if polls == 0 => {
                                    std::task::Poll::Ready(None)
                                }
                                std::task::Poll::Pending => {
                                    polls -= 1;
                                    cx.waker().wake_by_ref();
                                    std::task::Poll::Pending
                                }
                            })
                            .await
                        }
                        _ => Some(m.acquire().await.unwrap()),
                    };
                    let Some(guard) = guard else { continue };
                    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                    grants.send_modify(|n| *n += 1);
                    tokio::task::yield_now().await;
                    inside.store(false, Ordering::SeqCst);
                    guard.release().await.unwrap();
                    served += 1;
                }
                served
            }));
        }
    }
    // Drop the flaky sessions' connections every few grants while the contenders run.
    let dropper = tokio::spawn({
        let proxy = proxy.clone();
        async move {
            for next in (5..=40).step_by(5) {
                if grants_seen.wait_for(|n| *n >= next).await.is_err() {
                    return;
                }
                proxy.drop_all();
            }
        }
    });
    let mut served = 0;
    for t in tasks {
        served += bounded("contender", t).await.unwrap();
    }
    dropper.abort();
    assert_eq!(served, *grants.borrow());
    assert!(served >= SESSIONS * PER_SESSION, "{served} grants");
    let c = client(&direct).await;
    assert!(common::wait_empty(&c, "/lock").await.is_empty());
}
