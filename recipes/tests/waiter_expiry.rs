//! A lock waiter on a bare client (a session that is not renewed) ends when its session
//! expires: with a session-terminal error, not a wait past it.

mod common;

use std::time::Duration;

use common::{bounded, CONNECT_TIMEOUT};
use zookeeper_recipes::Mutex;
use zookeeper_testkit::{chroot_for, shared_server, Proxy};
use zookeeper_tokio::{Client, SessionState};

struct Rig {
    proxy: Proxy,
    direct: String,
    client: Client,
}

async fn rig(test: &str) -> Rig {
    let chroot = chroot_for(test);
    let server = shared_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let client = Client::builder(&format!("{}{}", proxy.connect_string(), chroot))
        .session_timeout(Duration::from_secs(4))
        .connect_timeout(CONNECT_TIMEOUT)
        .connect()
        .await
        .unwrap();
    Rig {
        proxy,
        direct: server.connect_string_with_chroot(&chroot),
        client,
    }
}

impl Rig {
    async fn cut(&self) {
        let mut states = self.client.state_changes();
        self.proxy.refuse(true);
        self.proxy.drop_all();
        bounded(
            "disconnected",
            states.wait_for(|s| s == SessionState::Disconnected),
        )
        .await
        .unwrap();
    }

    /// Closes the session from another connection, then lets the client back: its reconnect
    /// is told the session expired.
    async fn expire(&self) {
        let twin = bounded(
            "resume",
            Client::builder(&self.direct)
                .session(self.client.session_id(), &self.client.session_password())
                .connect_timeout(CONNECT_TIMEOUT)
                .connect(),
        )
        .await
        .unwrap();
        twin.close().await;
        self.proxy.refuse(false);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_session_expires_ends_with_the_expiry() {
    let rig = rig("waiter_expiry_queued").await;
    let holder = Client::builder(&rig.direct).connect().await.unwrap();
    let held = Mutex::new(&holder, "/l").unwrap().acquire().await.unwrap();
    let mutex = Mutex::new(&rig.client, "/l").unwrap();
    let waiter = tokio::spawn(async move { mutex.acquire().await });
    common::until_children(&holder, "/l", 2).await;
    rig.cut().await;
    rig.expire().await;
    let outcome = bounded("the waiter's end", waiter).await.unwrap();
    let error = outcome.expect_err("not granted: the lock is held");
    assert!(error.is_session_terminal(), "{error}");
    assert!(
        error.to_string().contains("/l"),
        "names the lock: {error} {error:?}"
    );
    held.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_begun_while_cut_off_ends_when_the_session_expires() {
    let rig = rig("waiter_expiry_cut").await;
    let mutex = Mutex::new(&rig.client, "/l").unwrap();
    rig.cut().await;
    let waiter = tokio::spawn(async move { mutex.acquire().await });
    rig.expire().await;
    let outcome = bounded("the acquire's end", waiter).await.unwrap();
    let error = outcome.expect_err("the session expired before any grant");
    assert!(error.is_session_terminal(), "{error}");
    assert!(
        error.to_string().contains("/l"),
        "names the lock: {error} {error:?}"
    );
}
