//! The read-write lock against a real server.

mod common;

use std::time::Duration;

use common::{bounded, children, chroot_connect, client, clients};
use zookeeper_recipes::{Error, ReadWriteLock};
use zookeeper_tokio::Client;

/// Waits until `path` has `n` children.
async fn wait_children(c: &Client, path: &str, n: usize) {
    bounded("queue to fill", async {
        loop {
            let (list, _, w) = c.get_children_and_watch(path).await.unwrap();
            if list.len() >= n {
                return;
            }
            w.await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_excludes_them() {
    let connect = chroot_connect("rw_share");
    let cs = clients(&connect, 3).await;
    let r1 = ReadWriteLock::new(&cs[0], "/rw").unwrap();
    let r2 = ReadWriteLock::new(&cs[1], "/rw").unwrap();
    let w = ReadWriteLock::new(&cs[2], "/rw").unwrap();
    let g1 = bounded("r1", r1.read()).await.unwrap();
    let g2 = bounded("r2", r2.read()).await.unwrap();
    assert!(g1.path().contains("-__READ__"));
    assert!(w.try_write().await.unwrap().is_none());
    assert!(w
        .write_timeout(Duration::from_millis(100))
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        children(&cs[0], "/rw").await.len(),
        2,
        "no writer node left behind"
    );
    g1.release().await.unwrap();
    g2.release().await.unwrap();
    let gw = bounded("writer", w.write()).await.unwrap();
    assert!(gw.path().contains("-__WRIT__"));
    assert!(r1.try_read().await.unwrap().is_none());
    gw.release().await.unwrap();
}

/// kazoo 2.8's read lock deadlocked here (kazoo #649): a writer holds, a reader queues, a
/// second writer queues behind the reader; when the first writer releases, the reader must
/// get the lock (the later writer does not block it), then the second writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_writer_does_not_deadlock_a_waiting_reader() {
    let connect = chroot_connect("rw_kazoo_649");
    let cs = clients(&connect, 3).await;
    let w1 = ReadWriteLock::new(&cs[0], "/rw").unwrap();
    let first = bounded("w1", w1.write()).await.unwrap();

    let c1 = cs[1].clone();
    let (reader_in, mut reader_in_rx) = tokio::sync::mpsc::channel(1);
    let (reader_out, reader_out_rx) = tokio::sync::oneshot::channel::<()>();
    let reader = tokio::spawn(async move {
        let r = ReadWriteLock::new(&c1, "/rw").unwrap();
        let g = r.read().await.unwrap();
        reader_in.send(g.fencing_token()).await.unwrap();
        let _ = reader_out_rx.await;
        g.release().await.unwrap();
    });
    wait_children(&cs[0], "/rw", 2).await;

    let c2 = cs[2].clone();
    let writer = tokio::spawn(async move {
        let w = ReadWriteLock::new(&c2, "/rw").unwrap();
        let g = w.write().await.unwrap();
        let token = g.fencing_token();
        g.release().await.unwrap();
        token
    });
    wait_children(&cs[0], "/rw", 3).await;

    first.release().await.unwrap();
    let reader_token = bounded("reader after first writer", reader_in_rx.recv())
        .await
        .unwrap();
    assert!(!writer.is_finished(), "second writer overlapped the reader");
    reader_out.send(()).unwrap();
    let writer_token = bounded("second writer after reader", writer).await.unwrap();
    assert!(writer_token > reader_token);
    bounded("reader task", reader).await.unwrap();
}

/// A reader watches the nearest writer before it, not the first: queue W1 R2 W3 R4, R4 is
/// granted by W3's release. W1's release tells W3 and R4 (which watch it as well: without
/// their nearest blocker, W1 is all in their way) that their next notification is the grant,
/// so neither lists again: R2 is woken once, W3 and R4 twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reader_watches_the_nearest_lower_writer() {
    let chroot = zookeeper_testkit::chroot_for("rw_nearest");
    let server = zookeeper_testkit::shared_server();
    let cs = clients(&server.connect_string_with_chroot(&chroot), 4).await;
    let w1 = ReadWriteLock::new(&cs[0], "/rw").unwrap();
    let g1 = bounded("w1", w1.write()).await.unwrap();
    let mut tasks = Vec::new();
    for (i, write) in [(1, false), (2, true), (3, false)] {
        let c = cs[i].clone();
        tasks.push(tokio::spawn(async move {
            let l = ReadWriteLock::new(&c, "/rw").unwrap();
            let g = if write {
                l.write().await
            } else {
                l.read().await
            }
            .unwrap();
            let wakeups = g.wakeups();
            g.release().await.unwrap();
            wakeups
        }));
        wait_children(&cs[0], "/rw", i + 1).await;
    }
    // Release only once every watch is set (R2: W1; W3: R2, W1; R4: W3, W1): a contender whose
    // blocker went before its watch was set would find its way clear without being woken.
    let queued = format!("{chroot}/rw/");
    bounded("five watches set", async {
        loop {
            let wchc = server.wchc().await.unwrap();
            let watches = wchc
                .values()
                .flatten()
                .filter(|p| p.starts_with(&queued))
                .count();
            if watches == 5 {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    g1.release().await.unwrap();
    let mut wakeups = Vec::new();
    for t in tasks {
        wakeups.push(bounded("contender", t).await.unwrap());
    }
    assert_eq!(wakeups, vec![1, 2, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_holder_may_read_and_upgrade_is_refused() {
    let connect = chroot_connect("rw_reentrant");
    let (a, b) = (client(&connect).await, client(&connect).await);
    let l = ReadWriteLock::new(&a, "/rw").unwrap();
    let w = bounded("write", l.write()).await.unwrap();
    let r = w.reenter().unwrap();
    assert_eq!(r.fencing_token(), w.fencing_token());
    let other = ReadWriteLock::new(&b, "/rw").unwrap();
    w.release().await.unwrap();
    // Still exclusive while the read guard taken under the write lock lives.
    assert!(other.try_read().await.unwrap().is_none());
    r.release().await.unwrap();
    let r2 = bounded("other reads", other.read()).await.unwrap();
    assert!(matches!(
        other.write().await,
        Err(Error::UpgradeWouldDeadlock)
    ));
    r2.release().await.unwrap();
}
