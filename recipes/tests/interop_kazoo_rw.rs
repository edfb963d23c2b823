//! Our read-write lock in kazoo's layout against kazoo's own `ReadLock`, `WriteLock` and `Lock`
//! (python3-kazoo, each peer a process with its own session, see `tests/peers/`): readers
//! share across implementations, writers exclude everyone, a kazoo `Lock` excludes our
//! writers but ignores our readers (as it ignores kazoo's own readers, which wait for it), and
//! our reader does not fall into kazoo #649 with a writer queued behind it.

mod common;

use std::time::Duration;

use common::peers::Peer;
use common::resource::{enter_exclusive, enter_shared, leave_exclusive, leave_shared, prepare};
use common::{bounded, chroot_connect, clients};
use zookeeper_recipes::{Layout, ReadWriteLock};
use zookeeper_tokio::Client;

const HOLD: Duration = Duration::from_millis(5);

fn kazoo_rw(c: &Client) -> ReadWriteLock {
    ReadWriteLock::with_layout(c, "/rw", Layout::Kazoo).unwrap()
}

/// Waits until `/rw` has `n` children.
async fn queued(c: &Client, n: usize) {
    bounded(&format!("{n} contenders queued"), async {
        loop {
            let (children, _, changed) = c.get_children_and_watch("/rw").await.unwrap();
            if children.len() >= n {
                return;
            }
            changed.await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_read_write_locks_and_ours_exclude_each_other() {
    let connect = chroot_connect("interop_kazoo_rw");
    let cs = clients(&connect, 3).await;
    prepare(&cs[0], "/res").await;
    let mut kazoo = Peer::kazoo(&connect).await;
    let ours = kazoo_rw(&cs[0]);

    // A kazoo writer excludes our readers and writers.
    kazoo.send("write-lock /rw").await;
    let kazoo_token: i64 = kazoo.expect("write-locked ").await.parse().unwrap();
    assert!(ours.try_read().await.unwrap().is_none());
    assert!(ours.try_write().await.unwrap().is_none());
    kazoo.send("write-unlock").await;
    kazoo.expect("write-unlocked").await;

    // Readers share across implementations; a writer of ours waits for both.
    let r = bounded("our read", ours.read()).await.unwrap();
    assert!(r.fencing_token().0 > kazoo_token);
    kazoo.send("read-lock /rw").await;
    kazoo.expect("read-locked ").await;
    assert!(kazoo_rw(&cs[1]).try_write().await.unwrap().is_none());
    r.release().await.unwrap();
    kazoo.send("read-unlock").await;
    kazoo.expect("read-unlocked").await;

    // Our writer excludes a kazoo reader until it lets go.
    let w = bounded("our write", ours.write()).await.unwrap();
    kazoo.send("read-lock /rw").await;
    queued(&cs[1], 2).await;
    w.release().await.unwrap();
    kazoo.expect("read-locked ").await;
    kazoo.send("read-unlock").await;
    kazoo.expect("read-unlocked").await;

    // A kazoo `Lock` shares our writers' names: it excludes them; it ignores readers (kazoo's
    // and ours), while readers wait for it as for any writer.
    let w = bounded("our write", ours.write()).await.unwrap();
    kazoo.send("lock /rw kazoo-mutex").await;
    queued(&cs[1], 2).await;
    w.release().await.unwrap();
    kazoo.expect("locked ").await;
    assert!(ours.try_read().await.unwrap().is_none());
    kazoo.send("unlock").await;
    kazoo.expect("unlocked").await;
    let r = bounded("our read", ours.read()).await.unwrap();
    kazoo.send("lock /rw kazoo-mutex").await;
    kazoo.expect("locked ").await;
    r.release().await.unwrap();
    kazoo.send("unlock").await;
    kazoo.expect("unlocked").await;

    // Contention: a kazoo writer looping against a writer and two readers of ours.
    kazoo.send("rw-loop /rw write 10 5 /res").await;
    let mut tasks = Vec::new();
    for (i, c) in cs.iter().enumerate() {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let l = kazoo_rw(&c);
            for round in 0..10 {
                let tag = format!("rust-{i}-{round}");
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
    kazoo.expect("done 10").await;
    for t in tasks {
        bounded("rust contender", t).await.unwrap();
    }
}

/// kazoo #649: a kazoo 2.8 reader waits for the *highest* writer, even one queued after it
/// that waits for the reader: both hang. Ours, queued between two kazoo writers, waits only
/// for the one before it, takes the lock when that one goes, and lets the later one in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_reader_between_two_kazoo_writers_does_not_deadlock() {
    let connect = chroot_connect("interop_kazoo_649");
    let cs = clients(&connect, 1).await;
    let mut first = Peer::kazoo(&connect).await;
    let mut second = Peer::kazoo(&connect).await;

    first.send("write-lock /rw").await;
    first.expect("write-locked ").await;
    let reader = kazoo_rw(&cs[0]);
    let reading = tokio::spawn(async move { reader.read().await });
    queued(&cs[0], 2).await;
    second.send("write-lock /rw").await;
    queued(&cs[0], 3).await;

    first.send("write-unlock").await;
    first.expect("write-unlocked").await;
    let r = bounded("our read between the writers", reading)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        cs[0].get_children("/rw").await.unwrap().0.len(),
        2,
        "the later writer still waits for us"
    );
    r.release().await.unwrap();
    second.expect("write-locked ").await;
    second.send("write-unlock").await;
    second.expect("write-unlocked").await;
}
