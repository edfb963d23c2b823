//! Recipes opened straight from a connect string, with nothing but this crate: each owns its
//! session, which ends when the recipe and what it handed out are dropped.

mod common;

use std::time::Duration;

use common::{bounded, chroot_connect};
use zookeeper_recipes::{
    Client, ClientError, Error, ErrorKind, Layout, LeaderLatch, Mutex, ReadWriteLock, Semaphore,
};

#[tokio::test]
async fn mutexes_on_their_own_sessions_exclude_each_other() {
    let connect = chroot_connect("standalone_mutex");
    let a = Mutex::connect(&connect, "/locks/x").await.unwrap();
    let b = Mutex::connect_with(
        Client::builder(&connect).session_timeout(Duration::from_secs(30)),
        "/locks/x",
        Layout::Curator,
    )
    .await
    .unwrap();
    let held = a.acquire().await.unwrap();
    assert!(b.try_acquire().await.unwrap().is_none());
    // Dropping the handle and its guard without a release ends the session, whose node the
    // server deletes at once: b gets the lock long before b's own 30 s timeout would matter.
    let token = held.fencing_token();
    drop(held);
    drop(a);
    let next = bounded("b acquires", b.acquire()).await.unwrap();
    assert!(next.fencing_token() > token);
}

#[tokio::test]
async fn every_recipe_connects_by_itself() {
    let connect = chroot_connect("standalone_all");
    let rw = ReadWriteLock::connect(&connect, "/rw").await.unwrap();
    rw.write().await.unwrap().release().await.unwrap();
    let pool = Semaphore::connect(&connect, "/sem", 2).await.unwrap();
    pool.acquire().await.unwrap().release().await.unwrap();
    let mutex = zookeeper_recipes::SemaphoreMutex::connect(&connect, "/m")
        .await
        .unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    let latch = LeaderLatch::connect(&connect, "/election", "a")
        .await
        .unwrap();
    bounded("leadership", latch.await_leadership())
        .await
        .unwrap();
    latch.resign().await.unwrap();
}

#[tokio::test]
async fn bad_input_fails_before_connecting_and_connect_errors_are_the_clients() {
    // Nothing listens here: a path error must come first, without waiting for a server.
    let dead = "127.0.0.1:1";
    let err = Mutex::connect(dead, "no-slash").await.unwrap_err();
    assert!(matches!(err, Error::InvalidPath { .. }), "{err}");
    let err = Mutex::connect_with(
        Client::builder(dead).connect_timeout(Duration::from_millis(300)),
        "/locks/x",
        Layout::Kazoo,
    )
    .await
    .unwrap_err();
    match err {
        Error::Client(e) => {
            let e: ClientError = e;
            assert!(matches!(e.kind(), ErrorKind::Connect(_)), "{e}");
        }
        other => panic!("expected a connect error, got {other}"),
    }
}
