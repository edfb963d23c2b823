//! Interoperability with the real peers on the same paths: Curator 5.4 (`InterProcessMutex`,
//! `InterProcessReadWriteLock`, `LeaderLatch`) and kazoo (`Lock`), each a separate process
//! with its own session (see `tests/peers/`).

mod common;

use std::time::Duration;

use common::peers::Peer;
use common::resource::{enter_exclusive, enter_shared, leave_exclusive, leave_shared, prepare};
use common::{bounded, chroot_connect, client, clients};
use zookeeper_recipes::{Holding, Layout, LeaderLatch, Mutex, ReadWriteLock, Semaphore};
use zookeeper_tokio::Client;

const HOLD: Duration = Duration::from_millis(5);

/// Rust contenders on `cs` looping `rounds` times through the exclusive resource.
fn rust_mutex_loop(
    cs: &[Client],
    layout: Layout,
    rounds: usize,
) -> Vec<tokio::task::JoinHandle<Vec<i64>>> {
    cs.iter()
        .enumerate()
        .map(|(i, c)| {
            let c = c.clone();
            tokio::spawn(async move {
                let m = Mutex::with_layout(&c, "/lock", layout).unwrap();
                let mut tokens = Vec::new();
                for r in 0..rounds {
                    let g = m.acquire().await.unwrap();
                    let tag = format!("rust-{i}-{r}");
                    enter_exclusive(&c, "/res", &tag).await;
                    tokens.push(g.fencing_token().0);
                    tokio::time::sleep(HOLD).await;
                    leave_exclusive(&c, "/res").await;
                    g.release().await.unwrap();
                }
                tokens
            })
        })
        .collect()
}

async fn all_tokens(tasks: Vec<tokio::task::JoinHandle<Vec<i64>>>, peer: &Peer) -> Vec<i64> {
    let mut tokens = peer.tokens();
    for t in tasks {
        tokens.extend(bounded("rust contender", t).await.unwrap());
    }
    tokens
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_mutex_and_ours_exclude_each_other() {
    let connect = chroot_connect("interop_curator_mutex");
    let cs = clients(&connect, 3).await;
    prepare(&cs[0], "/res").await;
    let mut curator = Peer::curator(&connect).await;

    // Curator holds: we cannot; we see its node as the holder.
    curator.send("lock /lock").await;
    let curator_token: i64 = curator.expect("locked ").await.parse().unwrap();
    let ours = Mutex::new(&cs[0], "/lock").unwrap();
    assert!(ours.try_acquire().await.unwrap().is_none());
    let queue = ours.participants().await.unwrap();
    assert_eq!(queue.len(), 1);
    assert!(queue[0].starts_with("_c_") && queue[0].contains("-lock-"));
    // We queue behind it and get the lock when it lets go.
    let waiting = tokio::spawn(async move {
        let g = ours.acquire().await.unwrap();
        let t = g.fencing_token().0;
        (g, t)
    });
    curator.send("unlock").await;
    curator.expect("unlocked").await;
    let (g, token) = bounded("ours after curator", waiting).await.unwrap();
    assert!(token > curator_token);
    // Now Curator queues behind us.
    curator.send("lock /lock").await;
    bounded("curator queued", async {
        while cs[1].get_children("/lock").await.unwrap().0.len() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    g.release().await.unwrap();
    let next: i64 = curator.expect("locked ").await.parse().unwrap();
    assert!(next > token);
    curator.send("unlock").await;
    curator.expect("unlocked").await;

    // Contention: Curator and three sessions of ours through the checked resource.
    curator.send("mutex-loop /lock 15 5 /res").await;
    let tasks = rust_mutex_loop(&cs, Layout::Curator, 15);
    curator.expect("done 15").await;
    let tokens = all_tokens(tasks, &curator).await;
    assert_eq!(tokens.len(), 60);
    let distinct: std::collections::BTreeSet<_> = tokens.iter().collect();
    assert_eq!(distinct.len(), 60, "every grant has its own token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_read_write_lock_and_ours_agree() {
    let connect = chroot_connect("interop_curator_rw");
    let cs = clients(&connect, 3).await;
    prepare(&cs[0], "/res").await;
    let mut curator = Peer::curator(&connect).await;
    let ours = ReadWriteLock::new(&cs[0], "/rw").unwrap();

    curator.send("write-lock /rw").await;
    curator.expect("write-locked ").await;
    assert!(ours.try_read().await.unwrap().is_none());
    assert!(ours.try_write().await.unwrap().is_none());
    curator.send("write-unlock").await;
    curator.expect("write-unlocked").await;

    let r = bounded("our read", ours.read()).await.unwrap();
    curator.send("read-lock /rw").await; // readers share across implementations
    curator.expect("read-locked ").await;
    let other = ReadWriteLock::new(&cs[1], "/rw").unwrap();
    assert!(other.try_write().await.unwrap().is_none());
    r.release().await.unwrap();
    curator.send("read-unlock").await;
    curator.expect("read-unlocked").await;

    // Contention: a Curator writer against two readers and a writer of ours.
    curator.send("rw-loop /rw write 10 5 /res").await;
    let mut tasks = Vec::new();
    for (i, c) in cs.iter().enumerate() {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let l = ReadWriteLock::new(&c, "/rw").unwrap();
            for r in 0..10 {
                let tag = format!("rust-{i}-{r}");
                if i == 0 {
                    let g = l.write().await.unwrap();
                    enter_exclusive(&c, "/res", &tag).await;
                    tokio::time::sleep(HOLD).await;
                    leave_exclusive(&c, "/res").await;
                    g.release().await.unwrap();
                } else {
                    let g = l.read().await.unwrap();
                    enter_shared(&c, "/res", &tag).await;
                    tokio::time::sleep(HOLD).await;
                    leave_shared(&c, "/res", &tag).await;
                    g.release().await.unwrap();
                }
            }
        }));
    }
    curator.expect("done 10").await;
    for t in tasks {
        bounded("rust contender", t).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_leader_latch_and_ours_share_an_election() {
    let connect = chroot_connect("interop_curator_latch");
    let c = client(&connect).await;
    let mut curator = Peer::curator(&connect).await;
    curator.send("latch /election java").await;
    curator.expect("latch-started").await;
    curator.expect("leader java").await;

    let ours = bounded("start", LeaderLatch::start(&c, "/election", "rust"))
        .await
        .unwrap();
    let mut changes = ours.changes();
    bounded("we follow", async {
        while changes.next().await != Some(Holding::Waiting) {}
    })
    .await;
    let parts = ours.participants().await.unwrap();
    let ids: Vec<_> = parts.iter().map(|p| (p.id.as_str(), p.is_leader)).collect();
    assert_eq!(ids, [("java", true), ("rust", false)]);

    curator.send("latch-close").await;
    curator.expect("latch-closed").await;
    assert_eq!(
        bounded("we lead", changes.next()).await,
        Some(Holding::Held)
    );

    // Curator sees us as the leader, and follows us.
    curator.send("participants /election").await;
    assert_eq!(curator.expect("participant ").await, "rust true");
    curator.expect("end").await;
    curator.send("latch /election java2").await;
    curator.expect("latch-started").await;
    bounded("curator queued", async {
        while c.get_children("/election").await.unwrap().0.len() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(ours.has_leadership());
    ours.resign().await.unwrap();
    curator.expect("leader java2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_lock_and_ours_in_kazoo_layout_exclude_each_other() {
    let connect = chroot_connect("interop_kazoo_mutex");
    let cs = clients(&connect, 3).await;
    prepare(&cs[0], "/res").await;
    let mut kazoo = Peer::kazoo(&connect).await;

    kazoo.send("lock /lock py").await;
    let kazoo_token: i64 = kazoo.expect("locked ").await.parse().unwrap();
    let ours = Mutex::with_layout(&cs[0], "/lock", Layout::Kazoo)
        .unwrap()
        .with_data(b"rust");
    assert!(ours.try_acquire().await.unwrap().is_none());
    kazoo.send("unlock").await;
    kazoo.expect("unlocked").await;
    let g = bounded("ours", ours.acquire()).await.unwrap();
    assert!(g.fencing_token().0 > kazoo_token);
    kazoo.send("contenders /lock").await;
    assert_eq!(kazoo.expect("contender ").await, "rust");
    kazoo.expect("end").await;
    g.release().await.unwrap();

    kazoo.send("mutex-loop /lock 15 5 /res").await;
    let tasks = rust_mutex_loop(&cs, Layout::Kazoo, 15);
    kazoo.expect("done 15").await;
    let tokens = all_tokens(tasks, &kazoo).await;
    assert_eq!(tokens.len(), 60);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_semaphore_and_ours_share_the_leases() {
    let connect = chroot_connect("interop_curator_semaphore");
    let cs = clients(&connect, 2).await;
    let mut curator = Peer::curator(&connect).await;
    let ours: Vec<Semaphore> = cs
        .iter()
        .map(|c| Semaphore::new(c, "/sem", 2).unwrap())
        .collect();

    curator.send("sem-acquire /sem 2").await;
    let curator_token: i64 = curator.expect("leased ").await.parse().unwrap();
    let lease = bounded("our lease", ours[0].acquire()).await.unwrap();
    assert!(lease.fencing_token().0 > curator_token);
    // Full: neither side gets a third lease until one is returned.
    assert!(ours[1].try_acquire().await.unwrap().is_none());
    curator.send("sem-acquire /sem 2").await;
    bounded("curator waits", async {
        while cs[1].get_children("/sem/leases").await.unwrap().0.len() < 3 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    lease.release().await.unwrap();
    curator.expect("leased ").await;
    // Curator holds both; we get one when it returns one.
    let waiting = {
        let c = cs[1].clone();
        tokio::spawn(async move {
            let s = Semaphore::new(&c, "/sem", 2).unwrap();
            let l = s.acquire().await.unwrap();
            l.release().await.unwrap();
        })
    };
    bounded("we wait", async {
        while cs[1].get_children("/sem/leases").await.unwrap().0.len() < 3 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    curator.send("sem-release").await;
    curator.expect("returned").await;
    bounded("our lease after curator's", waiting).await.unwrap();
    curator.send("sem-release").await;
    curator.expect("returned").await;
}

/// Curator's `InterProcessSemaphoreMutex` is its semaphore with one lease: ours on the same
/// path excludes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_semaphore_mutex_and_ours_exclude_each_other() {
    let connect = chroot_connect("interop_curator_semaphore_mutex");
    let c = client(&connect).await;
    let mut curator = Peer::curator(&connect).await;
    let ours = zookeeper_recipes::SemaphoreMutex::new(&c, "/m").unwrap();

    curator.send("sem-acquire /m 1").await;
    let curator_token: i64 = curator.expect("leased ").await.parse().unwrap();
    assert!(ours.try_acquire().await.unwrap().is_none());
    let waiting = tokio::spawn(async move {
        let lease = ours.acquire().await.unwrap();
        let token = lease.fencing_token().0;
        (ours, lease, token)
    });
    bounded("we wait", async {
        while c.get_children("/m/leases").await.unwrap().0.len() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    curator.send("sem-release").await;
    curator.expect("returned").await;
    let (_ours, lease, token) = bounded("ours after curator's", waiting).await.unwrap();
    assert!(token > curator_token);
    // Now Curator waits for us.
    curator.send("sem-acquire /m 1").await;
    bounded("curator waits", async {
        while c.get_children("/m/leases").await.unwrap().0.len() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    lease.release().await.unwrap();
    let next: i64 = curator.expect("leased ").await.parse().unwrap();
    assert!(next > token);
    curator.send("sem-release").await;
    curator.expect("returned").await;
}
