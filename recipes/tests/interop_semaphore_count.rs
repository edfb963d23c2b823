//! Our semaphore and Curator's `InterProcessSemaphoreV2`, both driven by a `SharedCount` on one
//! count node: a count changed from Java is obeyed by Rust, one changed from Rust by Java, and
//! Rust and Java leases together never exceed the count.

mod common;

use common::peers::Peer;
use common::{bounded, chroot_connect, clients, until_children};
use zookeeper_recipes::{Semaphore, SharedCount};
use zookeeper_tokio::Client;

/// The leases held on `/sem`, Rust's and Java's alike.
async fn leases(c: &Client) -> usize {
    common::children(c, "/sem/leases").await.len()
}

/// Waits until `count` has read `n`.
async fn until_count(count: &SharedCount, n: i32) {
    let mut changes = count.changes();
    bounded(&format!("the count read as {n}"), async {
        while count.count() != n {
            changes.next().await.unwrap();
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_changed_from_java_is_obeyed_by_rust() {
    let connect = chroot_connect("interop_semaphore_count_java");
    let cs = clients(&connect, 2).await;
    let mut curator = Peer::curator_contention(&connect).await;
    curator.send("count-start /count 1").await;
    assert_eq!(curator.expect("count ").await, "1");
    let count = SharedCount::start(&cs[0], "/count", 1).await.unwrap();
    let sem = Semaphore::with_shared_count(&cs[0], "/sem", &count).unwrap();
    let first = bounded("the one lease", sem.acquire()).await.unwrap();
    assert!(sem.try_acquire().await.unwrap().is_none());

    // Raised from Java: a Rust waiter gets in, with no lease returned.
    let waiter = {
        let count = count.clone();
        let c = cs[1].clone();
        tokio::spawn(async move {
            Semaphore::with_shared_count(&c, "/sem", &count)
                .unwrap()
                .acquire()
                .await
                .unwrap()
        })
    };
    until_children(&cs[1], "/sem/leases", 2).await;
    curator.send("count-set 2").await;
    curator.expect("count-set 2").await;
    let second = bounded("admitted by Java's count", waiter).await.unwrap();
    assert_eq!(sem.max_leases(), 2);
    assert!(sem.try_acquire().await.unwrap().is_none(), "three of two");

    // Lowered from Java: both leases stay, and Rust takes no new one until both are back.
    curator.send("count-set 1").await;
    curator.expect("count-set 1").await;
    until_count(&count, 1).await;
    assert_eq!(leases(&cs[0]).await, 2);
    second.release().await.unwrap();
    assert!(sem.try_acquire().await.unwrap().is_none(), "two of one");
    first.release().await.unwrap();
    let again = bounded("a lease once all are back", sem.try_acquire())
        .await
        .unwrap()
        .expect("room for one");
    again.release().await.unwrap();
    curator.send("quit").await;
    curator.expect("bye").await;
}

/// Rust and Java take leases of one semaphore while the count moves both ways, each side
/// changing it: at every step the leases held on both sides number at most the count, and
/// each side's answer is the one the count and the other side's leases call for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_java_leases_together_never_exceed_the_count() {
    let connect = chroot_connect("interop_semaphore_count_both");
    let cs = clients(&connect, 2).await;
    let mut curator = Peer::curator_contention(&connect).await;
    curator.send("count-start /count 2").await;
    assert_eq!(curator.expect("count ").await, "2");
    let count = SharedCount::start(&cs[0], "/count", 2).await.unwrap();
    let sem = Semaphore::with_shared_count(&cs[0], "/sem", &count).unwrap();

    let mut ours = vec![bounded("a Rust lease", sem.acquire()).await.unwrap()];
    curator.send("sem-acquire /sem").await;
    curator.expect("leased").await;
    assert_eq!(leases(&cs[0]).await, 2);
    assert!(
        sem.try_acquire().await.unwrap().is_none(),
        "beside Java's lease"
    );

    // Java waits for a lease; Rust raises the count and Java gets it.
    curator.send("sem-acquire /sem").await;
    until_children(&cs[1], "/sem/leases", 3).await;
    count.set_count(3).await.unwrap();
    curator.expect("leased").await;
    assert_eq!(leases(&cs[0]).await, 3);
    assert!(sem.try_acquire().await.unwrap().is_none(), "four of three");

    // Java raises it; Rust gets the new room, and no more.
    curator.send("count-set 4").await;
    curator.expect("count-set 4").await;
    until_count(&count, 4).await;
    ours.push(bounded("the fourth lease", sem.acquire()).await.unwrap());
    assert_eq!(leases(&cs[0]).await, 4);
    assert!(sem.try_acquire().await.unwrap().is_none(), "five of four");

    // Java lowers it to one: nothing is taken back, and neither side gets a lease until
    // everything but one is returned, from both sides.
    curator.send("count-set 1").await;
    curator.expect("count-set 1").await;
    until_count(&count, 1).await;
    assert_eq!(leases(&cs[0]).await, 4);
    curator.send("sem-release").await;
    curator.expect("returned").await;
    ours.pop().unwrap().release().await.unwrap();
    assert!(sem.try_acquire().await.unwrap().is_none(), "three of one");
    ours.pop().unwrap().release().await.unwrap();
    assert_eq!(leases(&cs[0]).await, 1, "Java's last lease");
    assert!(
        sem.try_acquire().await.unwrap().is_none(),
        "beside Java's lease, count 1"
    );
    // Java returns its last; then Rust gets the one lease.
    curator.send("sem-release").await;
    curator.expect("returned").await;
    let last = bounded("the one lease", sem.acquire()).await.unwrap();
    assert_eq!(leases(&cs[0]).await, 1);
    last.release().await.unwrap();
    curator.send("quit").await;
    curator.expect("bye").await;
}
