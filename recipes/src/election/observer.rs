//! Following who leads an election without taking part: etcd's `Observe` on ZooKeeper.
//!
//! The observer watches the election's children (a one-shot `getChildren` watch, or an
//! `exists` watch while the path does not exist) and the leader's node (`getData` with a
//! watch), orders the listing exactly as the layout's peer does (`naming`), and publishes the
//! first contender with its data. Every wakeup (either watch firing, or the session
//! reconnecting) reads both again, so a change made while the connection was down is found
//! on reconnecting even though no event for it arrives. Only the latest leader is kept: a
//! consumer that looks less often than the leader changes sees the newest one, never a
//! backlog, so the observer's memory is one leader's data however fast elections go.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, ReusableBoxFuture};
use tracing::{debug, warn};
use zookeeper_tokio::{
    Client, ErrorKind, OneshotWatcher, SessionState, StateChanges, WatchedEvent,
};

use crate::error::{Error, Result};
use crate::hold::FencingToken;
use crate::node::ensure_path::validate;
use crate::node::naming::{peer_queue, Layout, CURATOR_LATCH, CURATOR_LOCK, KAZOO_LOCK};
use crate::node::path::join;
use crate::session::sessions::Sessions;
use crate::session::wait::{reconnected_or_ended, terminal_error, watch_ended};

/// Which election an observer follows: how its participants name their nodes and order
/// themselves. Each is the layout of a recipe here and of the peers that share its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ElectionLayout {
    /// A [`LeaderLatch`](crate::LeaderLatch), and Curator's `LeaderLatch`:
    /// `_c_<uuid>-latch-<seq>`, data = the participant id (or what its leader proclaimed).
    Latch,
    /// A [`LeaderSelector`](crate::LeaderSelector), and Curator's `LeaderSelector` and
    /// `InterProcessMutex` (the selector is a mutex): `_c_<uuid>-lock-<seq>`, data = the
    /// participant id; the leader is the mutex's holder.
    Selector,
    /// kazoo's `Election` (a kazoo `Lock`) and a [`Mutex`](crate::Mutex) in
    /// [`Layout::Kazoo`]: `<hex uuid>__lock__<seq>`, data = the identifier.
    Kazoo,
}

impl ElectionLayout {
    fn order(self) -> (Layout, &'static str) {
        match self {
            ElectionLayout::Latch => (Layout::Curator, CURATOR_LATCH),
            ElectionLayout::Selector => (Layout::Curator, CURATOR_LOCK),
            ElectionLayout::Kazoo => (Layout::Kazoo, KAZOO_LOCK),
        }
    }
}

/// The leader of an election, as an observer last read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leader {
    /// Its node's name (no parent path).
    pub node: String,
    /// Its node's data: the participant id it joined with, or the value it last proclaimed
    /// ([`LeaderLatch::proclaim`](crate::LeaderLatch::proclaim),
    /// [`LeaderContext::proclaim`](crate::LeaderContext::proclaim)).
    pub data: Bytes,
    /// Its node's czxid: the leader's fencing token; a later leader's is larger.
    pub fencing_token: FencingToken,
    /// Its node's data version: 0 as it joined, one more with each proclamation.
    pub version: i32,
}

impl Leader {
    /// The data as text (invalid UTF-8 replaced): the participant id, for the peers that
    /// write one.
    pub fn id(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.data)
    }
}

/// A follower of an election's leader that does not take part: the current leader (its
/// node, data and fencing token), then each change, for any process. Built on the client's
/// watches; after a reconnect it reads the election again, so a change that happened while
/// the connection was down is seen as soon as it is back. On renewing [`Sessions`] it carries
/// on in the next session when its session expires.
///
/// It keeps only the latest leader ([`leader`](Self::leader)): a consumer of
/// [`changes`](Self::changes) that falls behind sees the newest, not every one in between
/// (changes may also fold while the connection is down). Whatever it reports was the leader
/// at some moment, in the order the server applied the changes.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::{ElectionLayout, LeaderLatch, LeaderObserver};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_leader_observer"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let observer = LeaderObserver::start(&client, "/election/indexer", ElectionLayout::Latch).await?;
/// let mut leaders = observer.changes();
/// assert_eq!(leaders.next().await, Some(None)); // nobody leads yet
///
/// let latch = LeaderLatch::start(&client, "/election/indexer", "node-a").await?;
/// latch.await_leadership().await?;
/// latch.proclaim(b"node-a serving shard 7").await?;
/// // Latest value: an observer that looks late sees the proclamation at once.
/// let mut leader = leaders.next().await.flatten().unwrap();
/// while leader.data.as_ref() != b"node-a serving shard 7" {
///     leader = leaders.next().await.flatten().unwrap();
/// }
/// assert_eq!(leader.fencing_token, latch.fencing_token());
/// latch.resign().await?;
/// # Ok(())
/// # }
/// ```
pub struct LeaderObserver {
    path: String,
    layout: ElectionLayout,
    rx: watch::Receiver<Option<Leader>>,
    ended: Arc<StdMutex<Option<Error>>>,
    stop: CancellationToken,
}

impl std::fmt::Debug for LeaderObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderObserver")
            .field("path", &self.path)
            .field("layout", &self.layout)
            .field("leader", &*self.rx.borrow())
            .finish()
    }
}

impl LeaderObserver {
    /// Starts observing the election on `path` in `layout`, on `sessions` (a `&Client`, or
    /// renewing [`Sessions`]). Returns once the leader has been read a first time (the path
    /// need not exist: nobody leads then), so [`leader`](Self::leader) is current from the
    /// start. On renewing `Sessions` that first read carries on across expiries, for as long
    /// as no server can be reached: bound it with `tokio::time::timeout` where the ensemble
    /// may be down. Must be called within a tokio runtime.
    pub async fn start(
        sessions: impl Into<Sessions>,
        path: &str,
        layout: ElectionLayout,
    ) -> Result<LeaderObserver> {
        validate(path)?;
        let sessions = sessions.into();
        let follow = Follow {
            path: path.to_owned(),
            layout,
        };
        // On renewing sessions the first read carries on in the next session, as everything
        // after it does.
        let (client, states, (leader, watches)) = sessions
            .each_session(|client| {
                let follow = &follow;
                async move {
                    let states = client.state_changes();
                    let read = follow.read(&client).await?;
                    Ok((client, states, read))
                }
            })
            .await?;
        let (tx, rx) = watch::channel(leader);
        let ended = Arc::new(StdMutex::new(None));
        let stop = CancellationToken::new();
        let task = follow.run(sessions, client, (watches, states), tx, ended.clone());
        let stopped = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                biased;
                _ = stopped.cancelled() => {}
                _ = task => {}
            }
        });
        Ok(LeaderObserver {
            path: path.to_owned(),
            layout,
            rx,
            ended,
            stop,
        })
    }

    /// The leader as last read; `None` while nobody leads.
    pub fn leader(&self) -> Option<Leader> {
        self.rx.borrow().clone()
    }

    /// The current leader first, then the leader after each change (`None` while nobody
    /// leads), keeping only the latest for a consumer that looks late. Ends once the
    /// observer has ended ([`error`](Self::error) says why) or is dropped. Does not borrow
    /// the observer. Also a [`futures_core::Stream`].
    pub fn changes(&self) -> LeaderChanges {
        let mut rx = self.rx.clone();
        rx.mark_changed();
        LeaderChanges {
            next: ReusableBoxFuture::new(next_leader(rx)),
            done: false,
        }
    }

    /// Why the observer stopped following, once it has: its session ended and no new one
    /// could be opened, or a read failed in a way retrying cannot mend (an ACL refusing us).
    pub fn error(&self) -> Option<Error> {
        self.ended.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The election's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Stops following; every [`changes`](Self::changes) stream ends. Dropping the observer
    /// does the same.
    pub fn close(&self) {
        self.stop.cancel();
    }
}

impl Drop for LeaderObserver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

type Next = (Option<Option<Leader>>, watch::Receiver<Option<Leader>>);

async fn next_leader(mut rx: watch::Receiver<Option<Leader>>) -> Next {
    let leader = match rx.changed().await {
        Ok(()) => Some(rx.borrow_and_update().clone()),
        Err(_) => None,
    };
    (leader, rx)
}

/// The leader of an election after each change, the current one first: see
/// [`LeaderObserver::changes`]. Also a [`futures_core::Stream`].
pub struct LeaderChanges {
    next: ReusableBoxFuture<'static, Next>,
    done: bool,
}

impl std::fmt::Debug for LeaderChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderChanges")
            .field("done", &self.done)
            .finish()
    }
}

impl LeaderChanges {
    /// The next leader (`Some(None)` while nobody leads), the current one on the first call;
    /// `None` once the observer has ended.
    pub async fn next(&mut self) -> Option<Option<Leader>> {
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut *self), cx)).await
    }
}

impl futures_core::Stream for LeaderChanges {
    type Item = Option<Leader>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let (leader, rx) = std::task::ready!(self.next.poll(cx));
        match leader {
            Some(leader) => {
                self.next.set(next_leader(rx));
                Poll::Ready(Some(leader))
            }
            None => {
                self.done = true;
                Poll::Ready(None)
            }
        }
    }
}

/// The watches one read left set: the election's children (or its creation), and the
/// leader's node.
struct Watches {
    election: OneshotWatcher,
    leader: Option<OneshotWatcher>,
}

impl Watches {
    /// The first event of either watch.
    async fn fired(self) -> WatchedEvent {
        match self.leader {
            Some(leader) => tokio::select! {
                biased;
                event = self.election => event,
                event = leader => event,
            },
            None => self.election.await,
        }
    }
}

/// What the observing task follows.
struct Follow {
    path: String,
    layout: ElectionLayout,
}

/// How following one session ended.
enum End {
    /// The session ended (expired, closed, authentication failed, or out of touch for
    /// longer than its timeout).
    Session(Error),
    /// A read failed for good.
    Failed(Error),
}

impl Follow {
    /// Reads the leader, leaving watches on the election and on the leader's node; retried
    /// across reconnects. The watches are set before the reads they guard are answered, so a
    /// change after a read fires one of them.
    async fn read(&self, client: &Client) -> Result<(Option<Leader>, Watches)> {
        loop {
            match self.read_once(client).await {
                Ok(Some(read)) => return Ok(read),
                // The leader went between the listing and its read: the listing is stale.
                Ok(None) => continue,
                Err(e) if e.is_retryable() => reconnected_or_ended(client).await?,
                Err(e) => return Err(Error::Client(e)),
            }
        }
    }

    /// One read; `None` when the listed leader was gone by the time it was read.
    async fn read_once(
        &self,
        client: &Client,
    ) -> zookeeper_tokio::Result<Option<(Option<Leader>, Watches)>> {
        let (children, election) = match client.get_children_and_watch(&self.path).await {
            Ok((children, _, watcher)) => (children, watcher),
            Err(e) if e == ErrorKind::NoNode => match client.exists_and_watch(&self.path).await? {
                (None, watcher) => {
                    return Ok(Some((
                        None,
                        Watches {
                            election: watcher,
                            leader: None,
                        },
                    )))
                }
                // Created in between: list it.
                (Some(_), _) => return Ok(None),
            },
            Err(e) => return Err(e),
        };
        let (layout, marker) = self.layout.order();
        let queue = peer_queue(layout, &children, &[marker], None);
        let Some(first) = queue.contenders.into_iter().next() else {
            return Ok(Some((
                None,
                Watches {
                    election,
                    leader: None,
                },
            )));
        };
        match client
            .get_data_and_watch(&join(&self.path, &first.name))
            .await
        {
            Ok((data, stat, watcher)) => Ok(Some((
                Some(Leader {
                    node: first.name,
                    data,
                    fencing_token: FencingToken(stat.czxid),
                    version: stat.version,
                }),
                Watches {
                    election,
                    leader: Some(watcher),
                },
            ))),
            Err(e) if e == ErrorKind::NoNode => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Follows the election until the session ends for good (on renewing sessions, through
    /// every next session) or a read fails for good; records why in `ended`. `first` is
    /// what the first session's first read left, and that session's states as of before it.
    async fn run(
        self,
        sessions: Sessions,
        mut client: Client,
        first: (Watches, StateChanges),
        tx: watch::Sender<Option<Leader>>,
        ended: Arc<StdMutex<Option<Error>>>,
    ) {
        let mut first = Some(first);
        let error = loop {
            let end = match first.take() {
                Some((watches, mut states)) => {
                    self.follow(&client, watches, &mut states, &tx).await
                }
                None => self.follow_anew(&client, &tx).await,
            };
            let e = match end {
                End::Session(e) if sessions.renews() => match sessions.replace(&client).await {
                    Ok(next) => {
                        client = next;
                        continue;
                    }
                    // Closed by its owner: no next session.
                    Err(_) => e,
                },
                End::Session(e) | End::Failed(e) => e,
            };
            break e.at("observe", &self.path);
        };
        warn!(path = %self.path, error = %error, "no longer observing the election");
        *ended.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
    }

    /// Follows the election on a session it has not read in yet: its first read, then
    /// [`follow`](Self::follow). A session that ends during that read ends like one that
    /// ends later, so renewing sessions go on to the next.
    async fn follow_anew(&self, client: &Client, tx: &watch::Sender<Option<Leader>>) -> End {
        // Its transitions from before its first read on.
        let mut states = client.state_changes();
        match self.read(client).await {
            Ok((leader, watches)) => {
                publish(tx, leader);
                self.follow(client, watches, &mut states, tx).await
            }
            Err(e) if e.is_session_terminal() => End::Session(e),
            Err(e) => End::Failed(e),
        }
    }

    /// Follows the election on one session: waits for a watch to fire, or for the connection
    /// to come back after a loss, then reads again. `states` was made before the last read,
    /// and hands out every transition in order, so a loss since then is seen here however
    /// quickly the connection came back.
    async fn follow(
        &self,
        client: &Client,
        mut watches: Watches,
        states: &mut StateChanges,
        tx: &watch::Sender<Option<Leader>>,
    ) -> End {
        // Out of touch since the last read: the next read finds what was missed.
        let mut lost = false;
        loop {
            let reconnected = async {
                loop {
                    match states.next().await {
                        None => return SessionState::Closed,
                        Some(state) if state.is_terminal() => return state,
                        Some(state) if state.is_connected() => {
                            if lost {
                                return state;
                            }
                        }
                        Some(_) => lost = true,
                    }
                }
            };
            tokio::select! {
                biased;
                event = watches.fired() => {
                    if event.state.is_terminal() {
                        return End::Session(watch_ended(&event));
                    }
                    debug!(path = %self.path, %event, "election changed: reading it again");
                }
                state = reconnected => {
                    if state.is_terminal() {
                        return End::Session(terminal_error(state));
                    }
                    debug!(path = %self.path, "reconnected: reading the election again");
                }
            }
            match self.read(client).await {
                Ok((leader, set)) => {
                    publish(tx, leader);
                    watches = set;
                    lost = false;
                }
                Err(e) if e.is_session_terminal() => return End::Session(e),
                Err(e) => return End::Failed(e),
            }
        }
    }
}

/// Publishes `leader` if it differs from what was published.
fn publish(tx: &watch::Sender<Option<Leader>>, leader: Option<Leader>) {
    tx.send_if_modified(|current| {
        if *current == leader {
            return false;
        }
        *current = leader;
        true
    });
}
