//! A double barrier: members enter together once enough have come, and leave together once
//! all are done, compatible with Curator's `DistributedDoubleBarrier`.

use std::sync::Mutex as StdMutex;
use std::time::Duration;

use tokio::time::Instant;
use tracing::debug;
use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

use crate::error::{Error, Result};
use crate::node::ensure_path::{ensure_path, validate};
use crate::node::protection::list_children;
use crate::node::release::spawn_delete;
use crate::session::sessions::Sessions;
use crate::session::wait::{by_deadline, fired, retried};

/// The node the member that completes the count creates.
const READY: &str = "ready";

/// Members enter together once `member_count` of them have arrived, and leave together once
/// all are done (Curator's `DistributedDoubleBarrier`: each member an ephemeral
/// `<path>/<uuid>`, 36 characters with dashes, and `<path>/ready` created by the member that
/// completes the count; Java and Rust members mix).
///
/// Every wakeup is only a reason to look again: a member returns from [`enter`] only once
/// `ready` exists or it counted enough members itself, never because a watch fired (Curator
/// 5.4 returned after any wakeup, a reconnect included: GH-1290). Timed calls return by
/// their deadline whatever the connection does (Curator looped forever on a timed
/// [`leave`]: CURATOR-536), and a member that gives up removes its node, in the background if
/// the connection is down, so that nobody counts it.
///
/// [`enter`]: DistributedDoubleBarrier::enter
/// [`leave`]: DistributedDoubleBarrier::leave
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::DistributedDoubleBarrier;
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_double_barrier"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let members: Vec<_> = (0..3)
///     .map(|_| DistributedDoubleBarrier::new(&client, "/jobs/batch-7", 3))
///     .collect::<Result<_, _>>()?;
/// let tasks: Vec<_> = members
///     .into_iter()
///     .map(|m| {
///         tokio::spawn(async move {
///             m.enter().await?; // all three are in
///             // ... the computation ...
///             m.leave().await // all three are done
///         })
///     })
///     .collect();
/// for t in tasks {
///     t.await??;
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct DistributedDoubleBarrier {
    sessions: Sessions,
    path: String,
    member_count: usize,
    name: String,
    /// The session our node was created in.
    entered_with: StdMutex<Option<Client>>,
}

impl DistributedDoubleBarrier {
    /// A member of the barrier at `path` that lets members through once `member_count` (at
    /// least 1) have entered. Like Curator's, the count is a threshold, not a limit.
    pub fn new(
        sessions: impl Into<Sessions>,
        path: &str,
        member_count: usize,
    ) -> Result<DistributedDoubleBarrier> {
        validate(path)?;
        if member_count == 0 {
            return Err(Error::InvalidArgument(
                "a double barrier needs at least 1 member",
            ));
        }
        let sessions: Sessions = sessions.into();
        let client = sessions.client();
        Ok(DistributedDoubleBarrier {
            sessions,
            path: path.to_owned(),
            member_count,
            name: crate::node::naming::guid(client.random_u64(), client.random_u64()).to_string(),
            entered_with: StdMutex::new(None),
        })
    }

    /// Our member node's path.
    pub fn member_path(&self) -> String {
        format!("{}/{}", self.path, self.name)
    }

    fn ready_path(&self) -> String {
        format!("{}/{READY}", self.path)
    }

    /// Enters, and waits until enough members have.
    pub async fn enter(&self) -> Result<()> {
        self.enter_until(None).await.map(drop)
    }

    /// Enters, and waits at most `timeout` for enough members: `false` (our node removed) if
    /// they did not come.
    pub async fn enter_timeout(&self, timeout: Duration) -> Result<bool> {
        self.enter_until(Some(Instant::now() + timeout)).await
    }

    /// Leaves, and waits until every member has.
    pub async fn leave(&self) -> Result<()> {
        self.leave_until(None).await.map(drop)
    }

    /// Leaves, and waits at most `timeout` for the others: `false` if some are still there
    /// (our node is removed all the same).
    pub async fn leave_timeout(&self, timeout: Duration) -> Result<bool> {
        self.leave_until(Some(Instant::now() + timeout)).await
    }

    async fn enter_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let client = self.sessions.live().await?;
        *self.entered_with.lock().unwrap_or_else(|e| e.into_inner()) = Some(client.clone());
        let entering = async {
            self.create_ours(&client).await?;
            loop {
                let (ready, watcher) =
                    retried(&client, || client.exists_and_watch(&self.ready_path())).await?;
                if ready.is_some() {
                    return Ok(());
                }
                let members = self.members(&client).await?;
                if members.len() >= self.member_count {
                    match retried(&client, || {
                        client.create(&self.ready_path(), &[], &CreateOptions::persistent())
                    })
                    .await
                    {
                        Ok(_) => {}
                        Err(Error::Client(e)) if e == ErrorKind::NodeExists => {}
                        Err(e) => return Err(e),
                    }
                    return Ok(());
                }
                fired(watcher).await?;
            }
        };
        match by_deadline(deadline, entering).await {
            Some(Ok(())) => Ok(true),
            Some(Err(e)) => {
                self.abandon(&client);
                Err(e)
            }
            None => {
                debug!(path = self.path, "gave up entering: removing our node");
                self.abandon(&client);
                Ok(false)
            }
        }
    }

    async fn leave_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let client = self
            .entered_with
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let client = match client {
            Some(c) => c,
            None => self.sessions.live().await?,
        };
        let leaving = async {
            let ours = self.name.as_str();
            let mut ours_there = true;
            loop {
                let members = self.members(&client).await?;
                let Some(lowest) = members.first() else {
                    break;
                };
                let index = members.iter().position(|m| m == ours);
                if index.is_none() {
                    // Gone already (deleted below, or with an ended session).
                    ours_there = false;
                }
                if members.len() == 1 && index == Some(0) {
                    self.delete_ours(&client).await?;
                    break;
                }
                // The lowest waits for the highest to go; every other member removes itself
                // and waits for the lowest: no herd, and the lowest goes last.
                let watched = if index == Some(0) {
                    members.last().expect("more than one")
                } else {
                    if ours_there {
                        self.delete_ours(&client).await?;
                        ours_there = false;
                    }
                    lowest
                };
                let path = format!("{}/{watched}", self.path);
                let (stat, watcher) = retried(&client, || client.exists_and_watch(&path)).await?;
                if stat.is_some() {
                    fired(watcher).await?;
                }
            }
            retried(&client, || client.delete(&self.ready_path(), None))
                .await
                .or_else(|e| match e {
                    Error::Client(e) if e == ErrorKind::NoNode => Ok(()),
                    e => Err(e),
                })
        };
        let outcome = by_deadline(deadline, leaving).await;
        match outcome {
            Some(Ok(())) => Ok(true),
            Some(Err(e)) => {
                self.abandon(&client);
                Err(e)
            }
            None => {
                debug!(path = self.path, "gave up waiting for the others to leave");
                self.abandon(&client);
                Ok(false)
            }
        }
    }

    /// Creates our ephemeral node (its parents as containers); a create whose reply was lost
    /// is found again by its name.
    async fn create_ours(&self, client: &Client) -> Result<()> {
        ensure_path(client, &self.path).await?;
        let path = self.member_path();
        match retried(client, || {
            client.create(&path, &[], &CreateOptions::ephemeral())
        })
        .await
        {
            Ok(_) => Ok(()),
            Err(Error::Client(e)) if e == ErrorKind::NodeExists => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn delete_ours(&self, client: &Client) -> Result<()> {
        let path = self.member_path();
        match retried(client, || client.delete(&path, None)).await {
            Ok(()) => Ok(()),
            Err(Error::Client(e)) if e == ErrorKind::NoNode => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Removes our node in the background (retried until it or the session is gone).
    fn abandon(&self, client: &Client) {
        spawn_delete(client.clone(), self.member_path());
    }

    /// The members' names, sorted as Curator sorts them (`ready` left out).
    async fn members(&self, client: &Client) -> Result<Vec<String>> {
        let mut names = list_children(client, &self.path).await?.unwrap_or_default();
        names.retain(|n| n != READY);
        names.sort();
        Ok(names)
    }
}
