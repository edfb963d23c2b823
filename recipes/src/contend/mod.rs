//! The contention core: the one queue algorithm of every lock, read-write lock, semaphore and
//! leader latch. A recipe hands it where its contenders queue (a parent path, the peer's
//! layout) and its rule for judging a place in the queue (`rule`); the core does the rest:
//!
//! 1. Create our node (protected: see `protection`) and list the parent. Both are written
//!    back to back, so the listing already holds our node and an uncontended acquisition costs
//!    one round trip.
//! 2. Order the listing exactly as the layout's peer does (`naming`), refuse it if a sequence
//!    wrapped, and ask the rule: granted, or what to watch.
//! 3. Watch the contender in our way with `getData` (not `exists`, which would leave a
//!    creation watch behind when the node is already gone), and the one the rule would wait
//!    for after it, both asked for in one round trip; or, for a rule that counts, the listing.
//!    However long the queue is, a release notifies at most two waiters: the next, and the one
//!    after it.
//! 4. On a watch firing, list again, or take the deletion as the grant when the rule's kind
//!    makes that sound (see `rule`). The second watch moves that listing off the handoff path:
//!    its contender goes first, while the one ahead of us still holds, so the listing (or,
//!    when the rule allows, no listing at all) happens then, and the deletion of the one ahead
//!    is the grant.

mod rule;

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};
use zookeeper_tokio::{Client, ErrorKind, EventType, OneshotWatcher, Stat, WatchedEvent};

use crate::error::{Error, Result};
use crate::node::naming::Layout;
use crate::node::path::{child_name, join};
use crate::node::protection::{list_children, PendingNode};
use crate::session::wait::{reconnected_after, watch_ended};

pub(crate) use rule::{
    assess, predecessor, AheadRule, Assessment, Far, Rule, Verdict, Watch, WholeRule,
};

/// How long an acquisition may wait.
#[derive(Clone, Debug)]
pub(crate) enum Patience {
    /// Until granted.
    Forever,
    /// Until this instant; then give up, leaving nothing behind.
    Until(Instant),
    /// Until granted or this is cancelled; then give up, leaving nothing behind (returning
    /// once our node is deleted).
    UntilStopped(CancellationToken),
    /// Not at all: hold it now or give up.
    NoWait,
}

impl Patience {
    /// Whether an acquisition that gives up with this patience timed out: not when it was
    /// stopped (a close, not a timeout).
    pub(crate) fn times_out(&self) -> bool {
        !matches!(self, Patience::UntilStopped(_))
    }

    /// Resolves when the patience ran out; never for `Forever` and `NoWait`.
    async fn run_out(&self) {
        match self {
            Patience::Until(deadline) => tokio::time::sleep_until(*deadline).await,
            Patience::UntilStopped(stop) => stop.cancelled().await,
            Patience::Forever | Patience::NoWait => std::future::pending().await,
        }
    }
}

/// Where contenders queue, and how their peers order them.
#[derive(Clone, Copy)]
pub(crate) struct Line<'a> {
    pub client: &'a Client,
    /// The parent of the contenders' nodes.
    pub dir: &'a str,
    pub layout: Layout,
    /// The kinds of contender the recipe tells apart (see `naming::peer_queue`).
    pub markers: &'a [&'a str],
}

/// A granted contender node.
pub(crate) struct Won {
    pub path: String,
    pub stat: Stat,
    pub wakeups: u32,
}

/// One acquisition: creates our node (`prefix` + sequence under the line's parent, holding
/// `data`) and waits for `rule` to grant it. Our node is deleted on every way out that does
/// not hold it, including this future being dropped.
pub(crate) async fn enter(
    line: Line<'_>,
    prefix: String,
    data: &[u8],
    patience: Patience,
    rule: Rule<'_>,
) -> Result<Option<Won>> {
    let started = Instant::now();
    let mut pending = PendingNode::new(line.client, line.dir, prefix, data);
    pending.send_create();
    let first_listing = line.client.get_children(line.dir);
    let created = match &patience {
        // A stop while the create is under way (perhaps retried across a reconnect) is
        // heard at once; abandoning deletes whatever the create made.
        Patience::UntilStopped(stop) => tokio::select! {
            biased;
            _ = stop.cancelled() => None,
            created = pending.created() => Some(created),
        },
        _ => Some(pending.created().await),
    };
    let Some(created) = created else {
        // Boxed: the rare way out need not size the state every waiter keeps.
        Box::pin(pending.abandon()).await?;
        return Ok(None);
    };
    let (path, _) = created?;
    let ours = child_name(&path).to_owned();
    // The listing written right after the create is only useful if it was answered after
    // our (last) create.
    let first_listing = first_listing
        .await
        .ok()
        .map(|(children, _)| children)
        .filter(|children| children.contains(&ours));
    match wait_turn(line, &ours, first_listing, patience, rule, |_| {}).await? {
        Some(wakeups) => Ok(Some(won(pending, wakeups, started))),
        None => {
            Box::pin(pending.abandon()).await?;
            Ok(None)
        }
    }
}

/// Waits until `rule` grants our node `ours` (a child of the line's parent), judging
/// `listing` first when given. Returns the number of wakeups it took, or `None` when the
/// patience ran out. The node is the caller's: nothing here deletes it. `watching` is told
/// each time a watch is set and we wait.
///
/// The listing and the queue live in one round only: a waiter keeps nothing of them while it
/// waits (at most the two watchers it set), so the memory of N waiters grows with N, not with
/// N squared.
pub(crate) async fn wait_turn(
    line: Line<'_>,
    ours: &str,
    mut listing: Option<Vec<String>>,
    patience: Patience,
    mut rule: Rule<'_>,
    mut watching: impl FnMut(&Watch),
) -> Result<Option<u32>> {
    let Line {
        client,
        dir,
        layout,
        markers,
    } = line;
    let path = join(dir, ours);
    let mut wakeups = 0u32;
    // Watchers on nodes not heard of since they were set: still set on the server, so a later
    // round that watches the same node waits on them instead of asking again.
    let mut armed: Vec<(String, OneshotWatcher)> = Vec::new();
    loop {
        let children = match listing.take() {
            Some(children) => children,
            None => list_children(client, dir).await?.unwrap_or_default(),
        };
        let (watch, mut handoff, far) = match assess(layout, markers, &children, ours, &rule) {
            Assessment::Granted => return Ok(Some(wakeups)),
            Assessment::Gone => return Err(Error::NodeDeleted { path }),
            Assessment::Wrapped(child) => {
                warn!(
                    path = %dir,
                    node = %ours,
                    %child,
                    "sequence numbers wrapped past 2^31 under the path: the peers' order is broken, \
                     refusing the grant"
                );
                return Err(Error::SequenceWrapped {
                    path: dir.to_owned(),
                    child,
                });
            }
            Assessment::Wait {
                watch,
                handoff,
                far,
            } => (watch, handoff, far),
        };
        drop(children);
        if let Patience::NoWait = &patience {
            return Ok(None);
        }
        let (watcher, mut far) = match &watch {
            Watch::Node(blocker) => {
                match watch_nodes(client, dir, blocker, far, &mut armed).await {
                    Set::Watching(watcher, far) => (watcher, far),
                    Set::Retry(e) => {
                        again_after(client, e).await?;
                        continue;
                    }
                }
            }
            Watch::Listing => {
                armed.clear();
                match client.get_children_and_watch(dir).await {
                    Ok((children, _, watcher)) => {
                        // The watching listing may already say more than "wait".
                        if !matches!(
                            assess(layout, markers, &children, ours, &rule),
                            Assessment::Wait { .. }
                        ) {
                            listing = Some(children);
                            continue;
                        }
                        (watcher, None)
                    }
                    Err(e) => {
                        again_after(client, e).await?;
                        continue;
                    }
                }
            }
        };
        debug!(
            path,
            ?watch,
            far = far.as_ref().map(|(far, _)| far.name.as_str()),
            "waiting"
        );
        watching(&watch);
        let mut watcher = watcher;
        loop {
            // The far contender first: when both went, its deletion may make the other's
            // the grant, which saves the listing.
            let fired = tokio::select! {
                biased;
                event = far_event(&mut far) => Fired::Far(event),
                event = &mut watcher => Fired::Watched(event),
                () = rule.changed() => Fired::Changed,
                () = patience.run_out() => return Ok(None),
            };
            wakeups += 1;
            let event = match fired {
                Fired::Changed => break,
                Fired::Watched(event) | Fired::Far(event)
                    if event.event_type == EventType::None =>
                {
                    if event.state.is_terminal() {
                        return Err(watch_ended(&event));
                    }
                    break;
                }
                Fired::Watched(event) => {
                    // The rule judged that the watched contender was all that stood in our way
                    // (at once, or once the far one went), and nobody can queue in front of us:
                    // its deletion is the grant. No listing needed, which saves the next holder
                    // a round trip and a listing of the whole queue.
                    if handoff && event.event_type == EventType::NodeDeleted {
                        return Ok(Some(wakeups));
                    }
                    if let Some((far, far_watcher)) = far.take() {
                        armed.push((far.name, far_watcher));
                    }
                    event
                }
                Fired::Far(event) => {
                    let (far, _) = far.take().expect("fired, so set");
                    if far.upgrade && event.event_type == EventType::NodeDeleted {
                        // What is ahead of us now is a part of what the rule was shown without
                        // the far contender, and that leaves only the watched one in our way.
                        debug!(
                            path,
                            gone = %far.name,
                            "the watched contender's deletion is now the grant"
                        );
                        handoff = true;
                        continue;
                    }
                    if let Watch::Node(blocker) = &watch {
                        armed.push((blocker.clone(), watcher));
                    }
                    event
                }
            };
            debug!(path, %event, "woken: listing again");
            break;
        }
    }
}

/// What woke a waiter.
enum Fired {
    /// The watch of the assessment (a node, or the listing).
    Watched(WatchedEvent),
    /// The far contender's watch.
    Far(WatchedEvent),
    /// What a whole-queue rule holds besides the queue.
    Changed,
}

/// What asking for the watches of one assessment came to.
enum Set {
    /// The blocker is watched, and the far contender when there is one.
    Watching(OneshotWatcher, Option<(Far, OneshotWatcher)>),
    /// A watch could not be set: look again after this error (see [`again_after`]).
    Retry(zookeeper_tokio::Error),
}

/// Watches `blocker` and, when the rule names one, the far contender: both asked for before
/// either reply is awaited, one round trip. A watcher still armed from an earlier round is
/// waited on instead of asking again; one set while the other failed stays in `armed` for the
/// next round, so nothing is asked twice.
async fn watch_nodes(
    client: &Client,
    dir: &str,
    blocker: &str,
    far: Option<Far>,
    armed: &mut Vec<(String, OneshotWatcher)>,
) -> Set {
    let kept = take_armed(armed, blocker);
    let kept_far = far.as_ref().and_then(|f| take_armed(armed, &f.name));
    armed.clear();
    let set_blocker = kept
        .is_none()
        .then(|| client.get_data_and_watch(&join(dir, blocker)));
    let set_far = match (&far, &kept_far) {
        (Some(far), None) => Some(client.get_data_and_watch(&join(dir, &far.name))),
        _ => None,
    };
    let (blocker_set, far_set) = tokio::join!(
        async {
            match set_blocker {
                Some(set) => set.await.map(|(_, _, watcher)| watcher),
                None => Ok(kept.expect("kept when not asked for")),
            }
        },
        async {
            match set_far {
                Some(set) => Some(set.await.map(|(_, _, watcher)| watcher)),
                None => kept_far.map(Ok),
            }
        }
    );
    match (blocker_set, far.zip(far_set)) {
        (Ok(watcher), None) => Set::Watching(watcher, None),
        (Ok(watcher), Some((far, Ok(far_watcher)))) => {
            Set::Watching(watcher, Some((far, far_watcher)))
        }
        (Ok(watcher), Some((_, Err(e)))) => {
            armed.push((blocker.to_owned(), watcher));
            Set::Retry(e)
        }
        (Err(e), far) => {
            if let Some((far, Ok(far_watcher))) = far {
                armed.push((far.name, far_watcher));
            }
            Set::Retry(e)
        }
    }
}

/// The far contender's event; never when there is none.
async fn far_event(far: &mut Option<(Far, OneshotWatcher)>) -> WatchedEvent {
    match far {
        Some((_, watcher)) => watcher.await,
        None => std::future::pending().await,
    }
}

/// The watcher still set on `name`, taken out of `armed`.
fn take_armed(armed: &mut Vec<(String, OneshotWatcher)>, name: &str) -> Option<OneshotWatcher> {
    let at = armed.iter().position(|(armed, _)| armed == name)?;
    Some(armed.swap_remove(at).1)
}

/// After a watch could not be set: look again once that makes sense (at once if the node is
/// gone already, once connected again after a connection loss), or the error.
async fn again_after(client: &Client, e: zookeeper_tokio::Error) -> Result<()> {
    if e == ErrorKind::NoNode {
        Ok(())
    } else if e.is_retryable() {
        reconnected_after(client, &e).await
    } else {
        Err(Error::Client(e))
    }
}

/// Keeps our node: the acquisition is granted.
fn won(pending: PendingNode, wakeups: u32, started: Instant) -> Won {
    let (path, stat) = pending.keep();
    let token = crate::hold::FencingToken(stat.czxid);
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
///
/// The acquisition is boxed here: an async fn keeps a future passed to it by value beside the
/// copy it awaits, which doubled the state every waiter keeps for as long as it waits.
pub(crate) fn bounded<'a, T: 'a>(
    client: &Client,
    patience: &Patience,
    acquisition: impl Future<Output = Result<Option<T>>> + Send + 'a,
) -> impl Future<Output = Result<Option<T>>> + Send + 'a {
    let bound = match *patience {
        Patience::Forever | Patience::UntilStopped(_) => None,
        Patience::Until(deadline) => Some(deadline + CLEANUP_GRACE),
        Patience::NoWait => Some(Instant::now() + client.session_timeout()),
    };
    let acquisition = Box::pin(acquisition);
    async move {
        let Some(bound) = bound else {
            return acquisition.await;
        };
        match tokio::time::timeout_at(bound, acquisition).await {
            Ok(outcome) => outcome,
            Err(_) => {
                debug!("acquisition gave up at its deadline; cleanup goes on in the background");
                Ok(None)
            }
        }
    }
}

/// Takes a handle's own serialisation lock within the acquisition's patience.
pub(crate) async fn serialize<'a>(
    serial: &'a tokio::sync::Mutex<()>,
    patience: &Patience,
) -> Option<tokio::sync::MutexGuard<'a, ()>> {
    match patience {
        Patience::NoWait => serial.try_lock().ok(),
        Patience::Forever => Some(serial.lock().await),
        Patience::Until(deadline) => tokio::time::timeout_at(*deadline, serial.lock()).await.ok(),
        Patience::UntilStopped(stop) => tokio::select! {
            biased;
            _ = stop.cancelled() => None,
            serial = serial.lock() => Some(serial),
        },
    }
}
