//! Tasks that share one lock handle (an `Arc`, as Rust code shares things) exclude each other
//! as separate processes do: nobody re-enters a lock by holding the same handle, only by
//! asking for it (`LockGuard::reenter`).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{bounded, chroot_connect, client};
use zookeeper_recipes::{LockGuard, Mutex, ReadWriteLock};
use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

/// Inside the critical section: a marker node only one holder can create, held a moment.
async fn inside(client: &Client, guard: &LockGuard, who: usize) {
    assert_eq!(
        guard.hold_count(),
        1,
        "task {who} re-entered someone's hold"
    );
    match client
        .create(
            "/inside",
            who.to_string().as_bytes(),
            &CreateOptions::ephemeral(),
        )
        .await
    {
        Ok(_) => {}
        Err(e) if e == ErrorKind::NodeExists => {
            let (other, _) = client.get_data("/inside").await.unwrap();
            panic!(
                "task {who} is inside beside task {}",
                String::from_utf8_lossy(&other)
            );
        }
        Err(e) => panic!("{e}"),
    }
    // Long enough for the other tasks to try their way in.
    tokio::time::sleep(Duration::from_millis(20)).await;
    client.delete("/inside", None).await.unwrap();
}

/// Three tasks sharing `handle`, five turns each: `take` acquires through the shared handle,
/// and the holder goes inside.
async fn three_tasks_share<H, F, Fut>(c: &Client, handle: H, take: F)
where
    H: Send + Sync + 'static,
    F: Fn(Arc<H>) -> Fut + Send + Sync + Copy + 'static,
    Fut: std::future::Future<Output = LockGuard> + Send,
{
    let handle = Arc::new(handle);
    let tasks: Vec<_> = (0..3)
        .map(|who| {
            let (handle, c) = (handle.clone(), c.clone());
            tokio::spawn(async move {
                for _ in 0..5 {
                    let guard = take(handle.clone()).await;
                    inside(&c, &guard, who).await;
                    guard.release().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        bounded("a task's turns", task).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_sharing_one_mutex_handle_never_overlap() {
    let c = client(&chroot_connect("shared_mutex_handle")).await;
    let mutex = Mutex::new(&c, "/lock").unwrap();
    three_tasks_share(&c, mutex, |m: Arc<Mutex>| async move {
        m.acquire().await.unwrap()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_sharing_one_read_write_lock_handle_never_write_together() {
    let c = client(&chroot_connect("shared_rwlock_handle")).await;
    let lock = ReadWriteLock::new(&c, "/rw").unwrap();
    three_tasks_share(&c, lock, |l: Arc<ReadWriteLock>| async move {
        l.write().await.unwrap()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentering_is_asked_for_and_ends_with_the_lock() {
    let connect = chroot_connect("shared_reenter");
    let c = client(&connect).await;
    let mutex = Mutex::new(&c, "/lock").unwrap();
    let guard = bounded("acquire", mutex.acquire()).await.unwrap();
    let again = guard.reenter().unwrap();
    assert_eq!((again.path(), guard.hold_count()), (guard.path(), 2));
    again.release().await.unwrap();
    c.delete(guard.path(), None).await.unwrap();
    bounded("lost", guard.lost()).await;
    assert!(matches!(
        guard.reenter(),
        Err(zookeeper_recipes::Error::NotHeld { .. })
    ));
}
