//! Faults the long-lived recipes are tested through: a session expired by the server, the
//! member serving a session killed.

use std::time::Duration;

use zookeeper_recipes::Sessions;
use zookeeper_testkit::{chroot_for, shared_server, Ensemble, Proxy};
use zookeeper_tokio::{Client, SessionState};

use super::bounded;

/// The rig of the session-expiry tests, in a chroot of the shared server: `sessions` behind
/// `proxy` (4 s session timeout, so that an expiry is quick), and the `direct` connect string
/// that [`expire`] and the test's other clients use.
pub struct ExpiryRig {
    pub proxy: Proxy,
    pub direct: String,
    pub sessions: Sessions,
}

pub async fn expiry_rig(test: &str) -> ExpiryRig {
    let chroot = chroot_for(test);
    let server = shared_server();
    let proxy = Proxy::start(server.addr()).await.unwrap();
    let direct = server.connect_string_with_chroot(&chroot);
    let builder = Client::builder(&format!("{}{}", proxy.connect_string(), chroot))
        .session_timeout(Duration::from_secs(4))
        .connect_timeout(super::CONNECT_TIMEOUT);
    let sessions = bounded("connect", Sessions::connect(builder))
        .await
        .unwrap();
    ExpiryRig {
        proxy,
        direct,
        sessions,
    }
}

/// Ends `victim`'s session from the server side: cut off behind its proxy, its session is
/// resumed and closed by another connection to `connect` (the same server, directly), so that
/// its next reconnect is told the session expired.
pub async fn expire(proxy: &Proxy, connect: &str, victim: &Client) {
    let mut states = victim.state_changes();
    proxy.refuse(true);
    proxy.drop_all();
    bounded(
        "disconnected",
        states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
    close_behind(proxy, connect, victim).await;
}

/// The end of [`expire`], for a `victim` already cut off behind a `proxy` that refuses new
/// connections: its session is resumed and closed through `connect`, then the proxy lets the
/// victim reconnect, to be told its session expired.
pub async fn close_behind(proxy: &Proxy, connect: &str, victim: &Client) {
    let mut states = victim.state_changes();
    let twin = bounded(
        "resume",
        Client::builder(connect)
            .session(victim.session_id(), &victim.session_password())
            .connect_timeout(super::CONNECT_TIMEOUT)
            .connect(),
    )
    .await
    .unwrap();
    twin.close().await;
    proxy.refuse(false);
    bounded("expired", states.wait_for(|s| s.is_terminal()))
        .await
        .unwrap();
}

/// A client on every member of `ensemble` but its leader, with `session_timeout`: killing the
/// member serving it is then never the leader's death, so no election runs and its session
/// moves to the remaining follower at once, well within the session timeout.
pub async fn client_off_the_leader(ensemble: &Ensemble, session_timeout: Duration) -> Client {
    let leader = bounded("a leader", ensemble.leader()).await.unwrap();
    bounded(
        "connect",
        Client::builder(&ensemble.connect_string_without(leader).unwrap())
            .session_timeout(session_timeout)
            .connect_timeout(super::CONNECT_TIMEOUT)
            .connect(),
    )
    .await
    .unwrap()
}

/// Kills the member serving `client`'s session and waits until the session is served by
/// another; returns the member killed (`None` if no member listed the session).
pub async fn move_session(ensemble: &Ensemble, client: &Client) -> Option<usize> {
    let member = ensemble.member_serving(client.session_id().0).await?;
    let mut states = client.state_changes();
    ensemble.kill(member).unwrap();
    bounded(
        "disconnected",
        states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
    bounded(
        "moved to another member",
        states.wait_for(|s| s == SessionState::Connected),
    )
    .await
    .unwrap();
    Some(member)
}
