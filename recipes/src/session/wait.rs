//! Waiting on the session: reconnection with a bound, calls repeated across reconnects, and
//! waits bounded by a deadline.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_tokio::{Client, ErrorKind, EventType, OneshotWatcher, SessionState, WatchedEvent};

use crate::error::{Error, Result};

/// How long to wait for a reconnection before treating the session as gone. The client marks
/// the session expired once its timeout passes without a server; twice the timeout is a
/// safety bound in case no server ever answers to say so.
pub(crate) fn reconnect_bound(client: &Client) -> Duration {
    client.session_timeout().max(Duration::from_millis(100)) * 2
}

/// Waits until the session is connected to a read-write server. Fails when the session ends,
/// or when the bound passes (the session is then gone on the server too).
pub(crate) async fn wait_connected(client: &Client) -> Result<()> {
    let mut states = client.state_watcher();
    let wait = async {
        loop {
            let state = *states.borrow_and_update();
            match state {
                SessionState::Connected => return Ok(()),
                s if s.is_terminal() => return Err(terminal_error(s)),
                _ => {}
            }
            if states.changed().await.is_err() {
                return Err(Error::Client(ErrorKind::Closed.into()));
            }
        }
    };
    match tokio::time::timeout(reconnect_bound(client), wait).await {
        Ok(r) => r,
        Err(_) => Err(Error::Disconnected),
    }
}

/// Waits out the lost connection that failed a call, before it is made again. When the
/// session ends meanwhile, the error names that call's operation and path, as the call made
/// again would have: `getData /lock/_c_..-0001: session expired`, not a bare expiry.
pub(crate) async fn reconnected_after(
    client: &Client,
    failed: &zookeeper_tokio::Error,
) -> Result<()> {
    wait_connected(client)
        .await
        .map_err(|e| match (failed.operation(), failed.path()) {
            (Some(operation), Some(path)) => e.at(operation, path),
            _ => e,
        })
}

/// Waits out a lost connection before a call is made again. When the session ends instead,
/// returns as if it had reconnected: the call made again then fails at once with the
/// session's end, naming its operation and path, which the wait alone cannot. Fails when the
/// bound passes.
pub(crate) async fn reconnected_or_ended(client: &Client) -> Result<()> {
    match wait_connected(client).await {
        Err(Error::Client(e)) if e.is_session_terminal() => Ok(()),
        other => other,
    }
}

/// Waits for a one-shot watch to fire: only a reason to look again. Fails when the session
/// ended it instead, naming the watch's path.
pub(crate) async fn fired(watcher: OneshotWatcher) -> Result<()> {
    let event = watcher.await;
    if event.event_type == EventType::None {
        return Err(watch_ended(&event));
    }
    Ok(())
}

/// The error of a watch that ended with its session: the session's end, naming the watch's
/// path.
pub(crate) fn watch_ended(event: &WatchedEvent) -> Error {
    terminal_error(event.state).at("watch", &event.path)
}

/// The client error that matches a terminal session state.
pub(crate) fn terminal_error(state: SessionState) -> Error {
    Error::Client(
        match state {
            SessionState::Expired => ErrorKind::SessionExpired,
            SessionState::AuthFailed => ErrorKind::AuthFailed,
            _ => ErrorKind::Closed,
        }
        .into(),
    )
}

/// Makes a call again after a lost connection, once connected again. Only for calls that
/// may safely be repeated: reads, and writes whose repetition the caller recognizes.
pub(crate) async fn retried<T, F, Fut>(client: &Client, call: F) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: Future<Output = zookeeper_tokio::Result<T>>,
{
    loop {
        match call().await {
            Ok(v) => return Ok(v),
            Err(e) if e.is_retryable() => reconnected_or_ended(client).await?,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Runs `f` to its end, or until `deadline` (`None`: no deadline); `None` when the deadline
/// came first, whatever `f` was waiting for.
pub(crate) async fn by_deadline<T>(
    deadline: Option<Instant>,
    f: impl Future<Output = T>,
) -> Option<T> {
    match deadline {
        None => Some(f.await),
        Some(deadline) => tokio::time::timeout_at(deadline, f).await.ok(),
    }
}
