//! The server list at run time: replacing it (with rebalancing), reading it, and following
//! the ensemble's configuration so that it stays current by itself.

use std::sync::Weak;
use std::time::Duration;

use tracing::{debug, info};
use zookeeper_jute::EventType;

use crate::client::{Client, Inner};
use crate::connect_string::{ConnectString, HostPort};
use crate::error::{ErrorKind, Result};

/// Pauses between attempts to read the configuration while it fails (connection loss).
const FOLLOW_RETRY_MIN: Duration = Duration::from_millis(100);
const FOLLOW_RETRY_MAX: Duration = Duration::from_secs(5);

impl Client {
    /// Replaces the servers this session may use with those of `connect_string`
    /// (`host:port,...`; a chroot, if given, must be this client's), rebalancing clients the
    /// way ZooKeeper's reference client does: when servers are added, a connected client
    /// moves to one of the new ones only with the probability that evens the load (a
    /// fraction `1 − old/new` of the clients of each kept server), and a client whose server
    /// was removed always moves, to kept or new servers in the proportions that even the
    /// load. A move waits until the requests in flight are answered, holds new ones
    /// meanwhile, and resumes the same session on the chosen server (the state passes
    /// through `Disconnected`).
    ///
    /// Errors: [`ErrorKind::InvalidConnectString`], or [`ErrorKind::InvalidArgument`] for
    /// another chroot.
    pub fn update_server_list(&self, connect_string: &str) -> Result<()> {
        let parsed =
            ConnectString::parse(connect_string).map_err(|e| e.at("update_server_list", None))?;
        if parsed.chroot.is_some() && parsed.chroot.as_deref() != self.chroot() {
            let kind = ErrorKind::InvalidArgument(format!(
                "the connect string's chroot {:?} is not this client's {:?}",
                parsed.chroot,
                self.chroot()
            ));
            return Err(crate::Error::from(kind).at("update_server_list", None));
        }
        self.set_servers(parsed.hosts);
        Ok(())
    }

    pub(crate) fn set_servers(&self, hosts: Vec<HostPort>) {
        self.inner().queue.push_server_list(hosts);
    }

    /// The servers this session may use, in the order it tries them.
    pub fn servers(&self) -> Vec<HostPort> {
        self.inner()
            .info
            .servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// The server of the current (or, while disconnected, the last) connection.
    pub fn connected_server(&self) -> Option<HostPort> {
        self.inner()
            .info
            .servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }
}

/// Keeps the server list equal to the client addresses of `/zookeeper/config`: reads and
/// watches it, replaces the list whenever its members change. Holds the session only weakly,
/// so it ends with the last handle, and ends with the session.
pub(crate) fn follow_config(client: &Client) {
    let weak: Weak<Inner> = client.downgrade();
    let request_timeout = client.request_timeout();
    tokio::spawn(async move {
        let mut retry = FOLLOW_RETRY_MIN;
        loop {
            let Some(client) = Client::upgrade(&weak, request_timeout) else {
                return;
            };
            if client.state().is_terminal() {
                return;
            }
            let watcher = match client.get_config_and_watch().await {
                Ok((config, _, watcher)) => {
                    retry = FOLLOW_RETRY_MIN;
                    let mut wanted = config.client_hosts();
                    let mut have = client.servers();
                    wanted.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
                    have.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
                    if !wanted.is_empty() && wanted != have {
                        info!(servers = %config.connect_string(), version = config.version, "following the ensemble's configuration");
                        client.set_servers(wanted);
                    }
                    watcher
                }
                Err(e) if e.is_session_terminal() => return,
                Err(e) if matches!(e.kind(), ErrorKind::NoNode | ErrorKind::Unimplemented) => {
                    debug!("the server has no dynamic configuration to follow");
                    return;
                }
                Err(e) => {
                    debug!(error = %e, "reading the configuration failed; trying again");
                    drop(client);
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(FOLLOW_RETRY_MAX);
                    continue;
                }
            };
            drop(client);
            let event = watcher.await;
            if event.event_type == EventType::None && event.state.is_terminal() {
                return;
            }
        }
    });
}
