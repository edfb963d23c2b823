//! The blocking handle: the async client's operations, each waited for on the calling thread.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use zookeeper_jute::{Acl, AddWatchMode, ClientInfo, Stat, WatcherType};

use super::runtime::Runtime;
use super::watchers::{OneshotWatcher, PersistentWatcher, StateChanges};
use crate::builder::ClientBuilder;
use crate::connect_string::HostPort;
use crate::ensemble_config::EnsembleConfig;
use crate::error::{ErrorKind, Result};
use crate::ops::{MultiOp, MultiResult, ReadOp, ReadResult};
use crate::options::CreateOptions;
use crate::state::{SessionId, SessionState};

/// A blocking ZooKeeper client: one session, shared by every clone, usable from any thread.
///
/// Each operation is the async [`Client`](crate::Client)'s, with the same arguments, errors,
/// ordering and timeouts, and returns when its reply is in. Clones are cheap; threads sharing
/// one client pipeline their requests on the one connection. The session closes when the last
/// clone (and the last async handle taken from it with [`as_async`](Self::as_async)) is
/// dropped, from whatever thread, or when [`close`](Self::close) is called.
///
/// The session runs on a thread of its own that the client starts, so the caller needs no
/// runtime. Called from a task of a tokio runtime, an operation works too, but blocks that
/// runtime's thread until the reply: prefer the async client there.
#[derive(Clone)]
pub struct Client {
    client: crate::Client,
    runtime: Arc<Runtime>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session_id", &format_args!("{}", self.session_id()))
            .field("state", &self.state())
            .finish()
    }
}

impl Client {
    /// Connects with default settings (see [`Client::builder`](crate::Client::builder) and
    /// [`connect_with`](Self::connect_with)); `connect_string` is
    /// `host:port[,host:port...][/chroot]`.
    pub fn connect(connect_string: &str) -> Result<Client> {
        Client::connect_with(crate::Client::builder(connect_string))
    }

    /// Connects with the settings of `builder`: starts the session's thread, and returns once
    /// a server accepted the session, or fails as [`ClientBuilder::connect`] does.
    pub fn connect_with(builder: ClientBuilder) -> Result<Client> {
        let (runtime, session) = Runtime::start().map_err(|e| {
            ErrorKind::Connect(format!("could not start the session's thread: {e}"))
        })?;
        let client = runtime.block_on(builder.connect())?;
        let _ = session.send(client.state_watcher());
        Ok(Client { client, runtime })
    }

    /// The async handle on this session: for code that has a runtime, or for an async
    /// operation to run with [`block_on`](Self::block_on). Its session task keeps running on
    /// the session's thread for as long as a handle lives.
    pub fn as_async(&self) -> &crate::Client {
        &self.client
    }

    /// Runs `future` to completion on the calling thread, with the session's runtime as its
    /// context: its timers and the tasks it spawns run there. This is how every blocking
    /// operation runs an async one, and how callers run any other future of this crate (or
    /// of one built on it) without a runtime of their own.
    ///
    /// # Panics
    ///
    /// On the session's own thread (from a task spawned there), which the wait would stop.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Enters the session's runtime until the guard drops: `tokio::spawn` and timers then
    /// use it. For code that drops an async value whose `Drop` spawns a task (a recipe's
    /// guard queueing its node's delete) on a thread without a runtime.
    pub fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.runtime.enter()
    }

    /// The session id (see [`Client::session_id`](crate::Client::session_id)).
    pub fn session_id(&self) -> SessionId {
        self.client.session_id()
    }

    /// The session password (see
    /// [`Client::session_password`](crate::Client::session_password)); keep it secret.
    pub fn session_password(&self) -> Bytes {
        self.client.session_password()
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        self.client.session_timeout()
    }

    /// The instant before which no server can have expired this session, read from the
    /// monotonic clock on every call (see
    /// [`Client::lease_deadline`](crate::Client::lease_deadline)).
    pub fn lease_deadline(&self) -> Option<Instant> {
        self.client.lease_deadline()
    }

    /// The session state now.
    pub fn state(&self) -> SessionState {
        self.client.state()
    }

    /// Every state transition from now on, in order, as a blocking iterator.
    pub fn state_changes(&self) -> StateChanges {
        StateChanges::new(self.client.state_changes())
    }

    /// The chroot this client works under, if any.
    pub fn chroot(&self) -> Option<&str> {
        self.client.chroot()
    }

    /// A handle on the same session whose requests fail with [`ErrorKind::Timeout`] when no
    /// reply arrived within `timeout` of the call (`None`: wait as long as the session
    /// lives); see [`Client::with_request_timeout`](crate::Client::with_request_timeout),
    /// whose range it takes.
    pub fn with_request_timeout(&self, timeout: Option<Duration>) -> Result<Client> {
        Ok(Client {
            client: self.client.with_request_timeout(timeout)?,
            runtime: self.runtime.clone(),
        })
    }

    /// Replaces the server list (see
    /// [`Client::update_server_list`](crate::Client::update_server_list)).
    pub fn update_server_list(&self, connect_string: &str) -> Result<()> {
        self.client.update_server_list(connect_string)
    }

    /// The servers this session may use, in the order it tries them.
    pub fn servers(&self) -> Vec<HostPort> {
        self.client.servers()
    }

    /// The server of the current (or, while disconnected, the last) connection.
    pub fn connected_server(&self) -> Option<HostPort> {
        self.client.connected_server()
    }

    /// Closes the session (see [`Client::close`](crate::Client::close)): returns once the
    /// requests made before are answered and the session is closed.
    pub fn close(&self) {
        self.runtime.call(|| self.client.close())
    }

    /// Creates a node (see [`Client::create`](crate::Client::create)); returns its path (with
    /// the sequence suffix, for a sequential node) and stat. A create that failed with
    /// connection loss or a timeout may have been applied.
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
    ) -> Result<(String, Stat)> {
        self.runtime
            .call(|| self.client.create(path, data, options))
    }

    /// Deletes a node, if `version` matches when given (see
    /// [`Client::delete`](crate::Client::delete)). A delete that failed with connection loss
    /// or a timeout may have been applied.
    pub fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        self.runtime.call(|| self.client.delete(path, version))
    }

    /// Deletes a node and everything below it (see
    /// [`Client::delete_recursive`](crate::Client::delete_recursive)); returns how many nodes
    /// it deleted.
    pub fn delete_recursive(&self, path: &str) -> Result<usize> {
        self.runtime.call(|| self.client.delete_recursive(path))
    }

    /// The node's stat, or `None` if it does not exist.
    pub fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.runtime.call(|| self.client.exists(path))
    }

    /// Like [`exists`](Self::exists), and watches the node (see
    /// [`Client::exists_and_watch`](crate::Client::exists_and_watch)).
    pub fn exists_and_watch(&self, path: &str) -> Result<(Option<Stat>, OneshotWatcher)> {
        let (stat, watcher) = self.runtime.call(|| self.client.exists_and_watch(path))?;
        Ok((stat, OneshotWatcher::new(watcher)))
    }

    /// The node's data and stat.
    pub fn get_data(&self, path: &str) -> Result<(Bytes, Stat)> {
        self.runtime.call(|| self.client.get_data(path))
    }

    /// Like [`get_data`](Self::get_data), and watches the node (see
    /// [`Client::get_data_and_watch`](crate::Client::get_data_and_watch)).
    pub fn get_data_and_watch(&self, path: &str) -> Result<(Bytes, Stat, OneshotWatcher)> {
        let (data, stat, watcher) = self.runtime.call(|| self.client.get_data_and_watch(path))?;
        Ok((data, stat, OneshotWatcher::new(watcher)))
    }

    /// Writes the node's data, if `version` matches when given (see
    /// [`Client::set_data`](crate::Client::set_data)). A write that failed with connection
    /// loss or a timeout may have been applied.
    pub fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        self.runtime
            .call(|| self.client.set_data(path, data, version))
    }

    /// The node's ACL and stat.
    pub fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        self.runtime.call(|| self.client.get_acl(path))
    }

    /// Sets the node's ACL, if `version` (the ACL version) matches when given. A write that
    /// failed with connection loss or a timeout may have been applied.
    pub fn set_acl(&self, path: &str, acl: Vec<Acl>, version: Option<i32>) -> Result<Stat> {
        self.runtime
            .call(|| self.client.set_acl(path, acl, version))
    }

    /// The node's children (names, not paths) and its stat.
    pub fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        self.runtime.call(|| self.client.get_children(path))
    }

    /// Like [`get_children`](Self::get_children), and watches the child list (see
    /// [`Client::get_children_and_watch`](crate::Client::get_children_and_watch)).
    pub fn get_children_and_watch(
        &self,
        path: &str,
    ) -> Result<(Vec<String>, Stat, OneshotWatcher)> {
        let (children, stat, watcher) = self
            .runtime
            .call(|| self.client.get_children_and_watch(path))?;
        Ok((children, stat, OneshotWatcher::new(watcher)))
    }

    /// How many nodes are below `path`, at any depth.
    pub fn get_all_children_number(&self, path: &str) -> Result<i32> {
        self.runtime
            .call(|| self.client.get_all_children_number(path))
    }

    /// Several writes, all or nothing (see [`Client::multi`](crate::Client::multi)). A
    /// transaction that failed with connection loss or a timeout may have been applied.
    pub fn multi(&self, ops: Vec<MultiOp>) -> Result<Vec<MultiResult>> {
        self.runtime.call(|| self.client.multi(ops))
    }

    /// Several reads in one round trip (see [`Client::multi_read`](crate::Client::multi_read)).
    pub fn multi_read(&self, ops: Vec<ReadOp>) -> Result<Vec<ReadResult>> {
        self.runtime.call(|| self.client.multi_read(ops))
    }

    /// Waits until the server this client is connected to has caught up with the leader as
    /// of the call (see [`Client::sync`](crate::Client::sync)).
    pub fn sync(&self, path: &str) -> Result<()> {
        self.runtime.call(|| self.client.sync(path))
    }

    /// Adds an authentication (see [`Client::add_auth`](crate::Client::add_auth)).
    pub fn add_auth(&self, scheme: &str, auth: &[u8]) -> Result<()> {
        self.runtime.call(|| self.client.add_auth(scheme, auth))
    }

    /// The identities the server knows this session by.
    pub fn who_am_i(&self) -> Result<Vec<ClientInfo>> {
        self.runtime.call(|| self.client.who_am_i())
    }

    /// The paths of this session's ephemeral nodes under `prefix`.
    pub fn get_ephemerals(&self, prefix: &str) -> Result<Vec<String>> {
        self.runtime.call(|| self.client.get_ephemerals(prefix))
    }

    /// The ensemble's configuration (see [`Client::get_config`](crate::Client::get_config)).
    pub fn get_config(&self) -> Result<(EnsembleConfig, Stat)> {
        self.runtime.call(|| self.client.get_config())
    }

    /// Like [`get_config`](Self::get_config), and watches the configuration.
    pub fn get_config_and_watch(&self) -> Result<(EnsembleConfig, Stat, OneshotWatcher)> {
        let (config, stat, watcher) = self.runtime.call(|| self.client.get_config_and_watch())?;
        Ok((config, stat, OneshotWatcher::new(watcher)))
    }

    /// Adds and removes members (see
    /// [`Client::reconfig_incremental`](crate::Client::reconfig_incremental)).
    pub fn reconfig_incremental(
        &self,
        joining: &[&str],
        leaving: &[u64],
        from_config: Option<i64>,
    ) -> Result<(EnsembleConfig, Stat)> {
        self.runtime.call(|| {
            self.client
                .reconfig_incremental(joining, leaving, from_config)
        })
    }

    /// Replaces the members (see
    /// [`Client::reconfig_members`](crate::Client::reconfig_members)).
    pub fn reconfig_members(
        &self,
        members: &[&str],
        from_config: Option<i64>,
    ) -> Result<(EnsembleConfig, Stat)> {
        self.runtime
            .call(|| self.client.reconfig_members(members, from_config))
    }

    /// Sets a persistent watch (see [`Client::add_watch`](crate::Client::add_watch)): its
    /// events are a blocking iterator.
    pub fn add_watch(&self, path: &str, mode: AddWatchMode) -> Result<PersistentWatcher> {
        let watcher = self.runtime.call(|| self.client.add_watch(path, mode))?;
        Ok(PersistentWatcher::new(watcher))
    }

    /// Removes watches of `watcher_type` on `path`, on the server and here (see
    /// [`Client::remove_watches`](crate::Client::remove_watches)).
    pub fn remove_watches(&self, path: &str, watcher_type: WatcherType) -> Result<()> {
        self.runtime
            .call(|| self.client.remove_watches(path, watcher_type))
    }
}
