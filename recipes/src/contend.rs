//! The queue every lock shares: create our node, list, and either hold or watch the one
//! contender that blocks us.
//!
//! The create and the first listing are written back to back, so the listing already holds
//! our node and an uncontended acquisition costs one round trip. A waiter watches exactly one
//! node with `getData` (not `exists`, which would leave a creation watch behind when the node
//! is already gone), so each release wakes one waiter however long the queue is.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, info, warn};
use zookeeper_tokio::{Client, ErrorKind, Stat};

use crate::error::{Error, Result};
use crate::naming::{child_name, join, peer_queue, sequence_of, Contender, Layout, Queue};
use crate::protection::{list_children, PendingNode};
use crate::session::{terminal_error, wait_connected};

/// What a recipe decides from the queue and our place in it.
pub(crate) enum Verdict {
    /// We hold it.
    Acquired,
    /// Wait for this contender (a child name) to go.
    WaitFor(String),
}

/// How long an acquisition may wait.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Patience {
    /// Until granted.
    Forever,
    /// Until this instant; then give up, leaving nothing behind.
    Until(Instant),
    /// Not at all: hold it now or give up.
    NoWait,
}

/// A granted contender node.
pub(crate) struct Won {
    pub path: String,
    pub stat: Stat,
    pub wakeups: u32,
}

/// Our sequences below this leave room for 2^30 more creations under the path before the
/// counter wraps: far more than can happen while one contender waits, so the deletion of its
/// only blocker is its grant without a listing. Above it, every grant is decided on a listing
/// (which shows a wrap).
const HANDOFF_BELOW: i32 = 1 << 30;

/// One acquisition: our node is named `prefix` + sequence under `dir`; `layout` and
/// `markers` say how the peers order the queue; `decide` judges our place in it, looking only
/// at the contenders ahead of us (the handoff without a listing relies on that).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn contend(
    client: &Client,
    dir: &str,
    layout: Layout,
    prefix: String,
    markers: &[&str],
    data: &[u8],
    patience: Patience,
    decide: impl Fn(&[Contender], usize) -> Verdict,
) -> Result<Option<Won>> {
    let started = Instant::now();
    let mut pending = PendingNode::new(client, dir, prefix, data);
    pending.send_create();
    let mut first_listing = Some(client.get_children(dir));
    let (path, _) = pending.created().await?;
    let ours = child_name(&path).to_owned();
    let mut wakeups = 0u32;
    loop {
        let piggybacked = match first_listing.take() {
            Some(listing) => listing.await.ok().map(|(children, _)| children),
            None => None,
        };
        // The listing and the queue live in this block only: a waiter keeps nothing of them
        // while it waits, so the memory of N waiters grows with N, not with N squared.
        let (blocker, ours_once_gone) = {
            // The first listing is only useful if it was answered after our (last) create.
            let children = match piggybacked {
                Some(children) if children.contains(&ours) => children,
                _ => list_children(client, dir).await?.unwrap_or_default(),
            };
            let Queue {
                contenders: mut queue,
                wrapped,
            } = peer_queue(layout, &children, markers, Some(&ours));
            if let Some(child) = wrapped {
                warn!(
                    path = %dir,
                    node = %ours,
                    %child,
                    "sequence numbers wrapped past 2^31 under the lock path: the peers' order is \
                     broken, refusing the lock"
                );
                return Err(Error::SequenceWrapped {
                    path: dir.to_owned(),
                    child,
                });
            }
            let Some(index) = queue.iter().position(|c| c.name == ours) else {
                return Err(Error::NodeDeleted { path });
            };
            match decide(&queue, index) {
                Verdict::Acquired => return Ok(Some(won(pending, wakeups, started))),
                Verdict::WaitFor(blocker) => {
                    let ours_once_gone = sequence_of(&ours, markers)
                        .is_some_and(|seq| (0..HANDOFF_BELOW).contains(&seq))
                        && granted_once_gone(&mut queue, index, &blocker, &decide);
                    (blocker, ours_once_gone)
                }
            }
        };
        if let Patience::NoWait = patience {
            pending.abandon().await?;
            return Ok(None);
        }
        let watched = match client.get_data_and_watch(&join(dir, &blocker)).await {
            Ok((_, _, watcher)) => watcher,
            // Gone already: look again.
            Err(e) if e == ErrorKind::NoNode => continue,
            Err(e) if e.is_retryable() => {
                wait_connected(client).await?;
                continue;
            }
            Err(e) => return Err(Error::Client(e)),
        };
        debug!(path, blocker, "waiting");
        let event = match patience {
            Patience::Until(deadline) => match tokio::time::timeout_at(deadline, watched).await {
                Ok(event) => event,
                Err(_) => {
                    pending.abandon().await?;
                    return Ok(None);
                }
            },
            _ => watched.await,
        };
        wakeups += 1;
        if event.event_type == zookeeper_tokio::EventType::None && event.state.is_terminal() {
            return Err(terminal_error(event.state));
        }
        // Nobody can queue in front of us (a later node sorts after ours), so if the blocker
        // was all that stood in our way, its deletion is the grant: no listing needed, which
        // saves the next holder a round trip and a listing of the whole queue.
        if ours_once_gone && event.event_type == zookeeper_tokio::EventType::NodeDeleted {
            return Ok(Some(won(pending, wakeups, started)));
        }
    }
}

/// Keeps our node: the acquisition is granted.
fn won(pending: PendingNode, wakeups: u32, started: Instant) -> Won {
    let (path, stat) = pending.keep();
    let token = crate::guard::FencingToken(stat.czxid);
    if wakeups == 0 {
        debug!(path, %token, "acquired");
    } else {
        let (dir, node) = path.rsplit_once('/').unwrap_or(("", &path));
        info!(
            path = %dir,
            node = %node,
            %token,
            wakeups,
            waited_ms = started.elapsed().as_millis() as u64,
            "acquired after a wait"
        );
    }
    Won {
        path,
        stat,
        wakeups,
    }
}

/// Whether `decide` grants us (at `ours`) once `blocker` is gone from `queue`. Verdicts depend
/// only on the contenders ahead of us, and none can be added there, so this is the verdict of
/// the listing that would follow the blocker's deletion.
fn granted_once_gone(
    queue: &mut Vec<Contender>,
    ours: usize,
    blocker: &str,
    decide: impl Fn(&[Contender], usize) -> Verdict,
) -> bool {
    let Some(at) = queue[..ours].iter().position(|c| c.name == blocker) else {
        return false;
    };
    queue.remove(at);
    matches!(decide(queue, ours - 1), Verdict::Acquired)
}

/// The deadline of a timed acquisition.
pub(crate) fn deadline_after(timeout: std::time::Duration) -> Patience {
    Patience::Until(Instant::now() + timeout)
}

/// How long after its deadline a timed acquisition may still be finishing the delete of its
/// node before it returns anyway, leaving the delete to the background.
const CLEANUP_GRACE: Duration = Duration::from_millis(50);

/// Runs `acquisition` so that it returns within its patience whatever the connection does
/// (a partition, refused connections, a slow server): an acquisition with a deadline
/// returns `None` by then (plus [`CLEANUP_GRACE`]), a `NoWait` one within the session
/// timeout. What it leaves unfinished is dropped, and dropping an acquisition deletes its
/// node in the background (see `protection`), retried until the node or the session is gone.
pub(crate) async fn bounded<T>(
    client: &Client,
    patience: Patience,
    acquisition: impl Future<Output = Result<Option<T>>>,
) -> Result<Option<T>> {
    let bound = match patience {
        Patience::Forever => return acquisition.await,
        Patience::Until(deadline) => deadline + CLEANUP_GRACE,
        Patience::NoWait => Instant::now() + client.session_timeout(),
    };
    match tokio::time::timeout_at(bound, acquisition).await {
        Ok(outcome) => outcome,
        Err(_) => {
            debug!("acquisition gave up at its deadline; cleanup goes on in the background");
            Ok(None)
        }
    }
}

/// Takes a handle's own serialisation lock within the acquisition's patience.
pub(crate) async fn serialize(
    serial: &tokio::sync::Mutex<()>,
    patience: Patience,
) -> Option<tokio::sync::MutexGuard<'_, ()>> {
    match patience {
        Patience::NoWait => serial.try_lock().ok(),
        Patience::Forever => Some(serial.lock().await),
        Patience::Until(deadline) => tokio::time::timeout_at(deadline, serial.lock()).await.ok(),
    }
}
