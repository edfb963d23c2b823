//! The lock limits: what ZooKeeper itself requires for a lock, on raw sockets, with nothing a
//! recipe could skip. Every lock figure of our recipes has one of these beside it.
//!
//! * **Uncontended cycle**: an ephemeral sequential create and the listing of the lock's
//!   children that tells the creator it is first (the read every recipe on sequential nodes
//!   needs), then the delete. Everything legal is pipelined: the listing goes out with the
//!   create (the session's order makes it see the create), and a release's delete goes out
//!   with the next cycle's create and listing, so a cycle is one round trip of three requests.
//! * **Handoff chain**: nodes queued in advance over 8 sessions, each watching its
//!   predecessor with `exists`. The first is deleted; each notification of a deletion is the
//!   next owner's grant, and its owner deletes its own node at once. A handoff is the delete,
//!   the notification, and nothing else: no listing, no re-queueing.
//! * **Contention loop**: the same chain where each owner, with its delete, queues again at
//!   the tail (create, and `exists` on its predecessor): 8 contenders looping acquire and
//!   release with nothing but the requests a queue lock cannot do without.
//! * **Contention loop as ours**: the loop with the requests our mutex sends (a listing with
//!   the create, two watches, a listing when the farther watched contender goes), not a
//!   limit but a yardstick: beside the loop it prices the recipe's protocol, and beside our
//!   mutex it prices our client.
//! * **Contention loop as ours, released**: the same, with each owner's create and listing
//!   written once its delete is answered, as a loop of `acquire().await` and
//!   `release().await` sends them; the yardstick of that loop, where the loop as ours writes
//!   the release and the next entry together, as no confirmed release can.
//! * **Handoff chain as ours**: the queued chain with the requests our mutex's waiters send once
//!   queued (the second watch, and a listing when the farther contender goes), the same
//!   yardstick for a queue served.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use futures_util::future::try_join_all;

use crate::raw_socket::RawSession;
use crate::stats::Percentiles;
use crate::{wire, BenchError};

/// Sessions of the handoff chain, as many as our recipe's contended workload uses.
pub const CHAIN_SESSIONS: usize = 8;

/// `cycles` uncontended acquire+release cycles on a lock under `dir`; returns cycles per
/// second. `released`: each release's delete is answered before the next acquisition goes
/// out, as a caller's whose `release` returns once the node is gone (two round trips a
/// cycle); otherwise the delete goes with the next create and listing (one).
pub async fn uncontended(
    addr: std::net::SocketAddr,
    dir: &str,
    cycles: u64,
    released: bool,
) -> Result<f64, BenchError> {
    let mut raw = RawSession::connect(addr).await?;
    raw.ensure_path(dir).await?;
    let prefix = format!("{dir}/lock-");
    let acquire: Vec<u8> = [
        wire::create_request_with(1, &prefix, b"", wire::EPHEMERAL_SEQUENTIAL),
        wire::get_children2_request(2, dir),
    ]
    .concat();
    let start = Instant::now();
    raw.send(&acquire).await?;
    let mut held: Option<String> = None;
    for cycle in 0..cycles {
        // The previous cycle's delete (sent with this acquisition) answers first.
        if cycle > 0 && !released {
            expect_ok(&raw.next_frame().await?, "delete")?;
        }
        let created = raw.next_frame().await?;
        expect_ok(&created, "create")?;
        let node = wire::created_path(&created)
            .ok_or("create reply without a path")?
            .to_string();
        expect_ok(&raw.next_frame().await?, "getChildren2")?;
        // Held: nobody else uses this lock. Release, and acquire again in the same write
        // (or once the release is answered).
        let mut frames = wire::delete_request(3, &node);
        if released {
            raw.send(&frames).await?;
            expect_ok(&raw.next_frame().await?, "delete")?;
            frames.clear();
        }
        if cycle + 1 < cycles {
            frames.extend_from_slice(&acquire);
        }
        if !frames.is_empty() {
            raw.send(&frames).await?;
        }
        held = Some(node).filter(|_| !released);
    }
    if held.is_some() {
        expect_ok(&raw.next_frame().await?, "delete")?;
    }
    let per_s = cycles as f64 / start.elapsed().as_secs_f64();
    raw.close().await?;
    Ok(per_s)
}

/// What the owners of a handoff chain do besides deleting their node when granted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// Nothing: every node is queued before the clock starts, and a grant is followed by the
    /// delete alone.
    Queued,
    /// Each session has one node in the queue at a time, as in our contended workload: a grant
    /// is followed by the delete, the create of a new node at the tail and the watch on its
    /// predecessor, in one write; the 8 sessions contend for ever as 8 contenders looping
    /// acquire and release do.
    Loop,
    /// The loop with the requests our mutex sends: the create goes out with a listing of the
    /// lock's children; the listing's reply is followed by the watches on the predecessor and
    /// on the one before it, and that one's deletion by another listing. What our recipe asks
    /// of the server, without our client.
    AsOurs,
    /// [`Chain::AsOurs`] with each owner's create and listing written once its delete is
    /// answered rather than with it: what a loop of `acquire().await` and `release().await`
    /// sends, the release confirmed before the next acquisition starts.
    AsOursReleased,
    /// The queued chain with the requests our mutex's waiters send once queued: every node
    /// also watches the one before its predecessor, and that one's deletion is followed by a
    /// listing, whose reply the grant waits for. The yardstick of a queue served, as
    /// [`Chain::AsOurs`] is of the loop.
    QueuedAsOurs,
}

impl Chain {
    /// Whether every node is queued before the clock starts.
    fn queued(self) -> bool {
        matches!(self, Chain::Queued | Chain::QueuedAsOurs)
    }

    /// Whether the owners send the requests our mutex sends.
    fn as_ours(self) -> bool {
        matches!(
            self,
            Chain::AsOurs | Chain::AsOursReleased | Chain::QueuedAsOurs
        )
    }

    /// Whether an owner queues again only once its delete is answered.
    fn requeues_after_delete(self) -> bool {
        matches!(self, Chain::AsOursReleased)
    }
}

/// A handoff chain of `handoffs` handoffs over [`CHAIN_SESSIONS`] sessions under `dir`;
/// returns handoffs per second and the latency of each (the delete written to the
/// notification read by the next owner).
pub async fn handoff_chain(
    addr: std::net::SocketAddr,
    dir: &str,
    handoffs: usize,
    chain: Chain,
) -> Result<(f64, Percentiles), BenchError> {
    let nodes = handoffs + 1;
    let name = |k: usize| format!("{dir}/n{k:07}");
    let mut sessions = try_join_all((0..CHAIN_SESSIONS).map(|_| RawSession::connect(addr))).await?;
    sessions[0].ensure_path(dir).await?;
    let queued_first = if chain.queued() {
        nodes
    } else {
        CHAIN_SESSIONS.min(nodes)
    };
    let as_ours = chain.as_ours();
    // Setup, not timed: the first nodes, then every watch on a predecessor (and, as our
    // recipe does, on the one before it).
    for (s, raw) in sessions.iter_mut().enumerate() {
        let mine: Vec<usize> = (s..queued_first).step_by(CHAIN_SESSIONS).collect();
        let creates: Vec<u8> = mine
            .iter()
            .flat_map(|&k| wire::create_request_with(1, &name(k), b"", wire::EPHEMERAL))
            .collect();
        raw.send(&creates).await?;
        for _ in &mine {
            expect_ok(&raw.next_frame().await?, "create")?;
        }
    }
    for (s, raw) in sessions.iter_mut().enumerate() {
        let mut watched = Vec::new();
        for k in (s..queued_first).step_by(CHAIN_SESSIONS) {
            watched.extend(k.checked_sub(1));
            if as_ours {
                watched.extend(k.checked_sub(2));
            }
        }
        let watches: Vec<u8> = watched
            .iter()
            .flat_map(|&k| wire::exists_request(1, &name(k), true))
            .collect();
        raw.send(&watches).await?;
        for _ in &watched {
            expect_ok(&raw.next_frame().await?, "exists")?;
        }
    }
    let deleted_at: Vec<AtomicU64> = (0..nodes).map(|_| AtomicU64::new(0)).collect();
    let next_node = AtomicUsize::new(queued_first);
    let epoch = Instant::now();
    sessions[0]
        .send(&wire::delete_request(XID_DELETE, &name(0)))
        .await?;
    let chain = try_join_all(sessions.iter_mut().enumerate().map(|(s, raw)| {
        let (deleted_at, next_node, name) = (&deleted_at, &next_node, &name);
        async move {
            // Nodes of this session in the queue, and replies it still waits for.
            // Session 0's first node is being deleted already: the clock started with it.
            let mut queued =
                (s..queued_first).step_by(CHAIN_SESSIONS).count() - usize::from(s == 0);
            let mut replies = usize::from(s == 0);
            let mut latencies = Vec::new();
            // In a loop, the one node this session has queued.
            let mut mine = (!chain.queued() && s > 0 && s < queued_first).then_some(s);
            // Tails this session queued whose `exists` on the predecessor has not answered yet.
            let mut watching = std::collections::VecDeque::new();
            // The same for the `exists` on the one before the predecessor (`AsOurs`).
            let mut watching_far = std::collections::VecDeque::new();
            // As ours: listings sent since that one went, and a grant that waits for their
            // replies (our recipe takes no grant before it has the listing it asked for).
            let mut listing = 0usize;
            let mut grant_after_listing: Option<usize> = None;
            // `AsOursReleased`: the delete in flight is followed by queueing again.
            let mut requeue_on_delete = false;
            // Queues this session again at the tail, into `frames`, unless the chain is done.
            macro_rules! requeue {
                ($frames:ident) => {
                    let tail = next_node.fetch_add(1, Ordering::AcqRel);
                    if tail < nodes {
                        $frames.extend(wire::create_request_with(
                            XID_CREATE,
                            &name(tail),
                            b"",
                            wire::EPHEMERAL,
                        ));
                        if as_ours {
                            $frames.extend(wire::get_children2_request(XID_ENTRY_LIST, dir));
                        } else {
                            $frames.extend(wire::exists_request(XID_EXISTS, &name(tail - 1), true));
                            watching.push_back(tail);
                        }
                        mine = Some(tail);
                        queued += 1;
                        replies += 2;
                    }
                };
            }
            while queued > 0 || replies > 0 {
                let frame = raw.next_frame().await?;
                // The node this session now holds, once it is granted.
                let granted = match wire::reply_xid(&frame) {
                    Some(wire::XID_NOTIFICATION) => {
                        let path =
                            wire::notification_path(&frame).ok_or("notification without a path")?;
                        let k = path
                            .rsplit_once("/n")
                            .and_then(|(_, n)| n.parse::<usize>().ok())
                            .ok_or("notification of an unknown node")?;
                        // As ours, the one before the predecessor: list, as our recipe does.
                        // Queued, node k + 2 is this session's when k + 2 ≡ s (mod sessions).
                        let far = as_ours
                            && if chain.queued() {
                                k + 2 < nodes && (k + 2) % CHAIN_SESSIONS == s
                            } else {
                                mine == Some(k + 2)
                            };
                        match wire::notification_type(&frame) {
                            Some(wire::EVENT_NODE_DELETED) if far => {
                                raw.send(&wire::get_children2_request(XID_LIST, dir))
                                    .await?;
                                listing += 1;
                                replies += 1;
                                continue;
                            }
                            Some(wire::EVENT_NODE_DELETED) => k + 1,
                            // The node was not created yet when the watch was set (its
                            // session took its tail first but wrote later): watch it again, now
                            // that it exists.
                            Some(wire::EVENT_NODE_CREATED) => {
                                let (xid, waiting, tail) = if far {
                                    (XID_FAR, &mut watching_far, k + 2)
                                } else {
                                    (XID_EXISTS, &mut watching, k + 1)
                                };
                                raw.send(&wire::exists_request(xid, path, true)).await?;
                                waiting.push_back(tail);
                                replies += 1;
                                continue;
                            }
                            _ => return Err("unexpected notification".into()),
                        }
                    }
                    Some(XID_EXISTS) => {
                        replies -= 1;
                        let tail: usize = watching.pop_front().ok_or("unexpected exists reply")?;
                        match wire::reply_err(&frame) {
                            Some(0) => continue,
                            // The predecessor went before the watch was set: granted, as a
                            // lock recipe takes it. Its deletion time is stored before its
                            // delete is written, so a node not marked deleted was not created
                            // yet: the watch left behind reports its creation.
                            Some(wire::ERR_NO_NODE)
                                if deleted_at[tail - 1].load(Ordering::Acquire) != 0 =>
                            {
                                tail
                            }
                            Some(wire::ERR_NO_NODE) => continue,
                            _ => return Err("raw exists on the predecessor failed".into()),
                        }
                    }
                    Some(XID_FAR) => {
                        replies -= 1;
                        let tail = watching_far.pop_front().ok_or("unexpected exists reply")?;
                        match wire::reply_err(&frame) {
                            Some(0) => {}
                            // Gone already: our recipe lists again (unless granted meanwhile).
                            Some(wire::ERR_NO_NODE)
                                if deleted_at[tail - 2].load(Ordering::Acquire) != 0
                                    && mine == Some(tail) =>
                            {
                                raw.send(&wire::get_children2_request(XID_LIST, dir))
                                    .await?;
                                listing += 1;
                                replies += 1;
                            }
                            Some(wire::ERR_NO_NODE) => {}
                            _ => return Err("raw exists on the far contender failed".into()),
                        }
                        continue;
                    }
                    Some(XID_ENTRY_LIST) => {
                        // The entry listing answered: watch the one before the predecessor
                        // and the predecessor, in one write; in that order, so that whatever
                        // the far watch brings arrives before the grant can.
                        expect_ok(&frame, "listing")?;
                        replies -= 1;
                        let tail = mine.ok_or("listing without a node queued")?;
                        let mut frames = Vec::new();
                        if tail >= 2 {
                            frames.extend(wire::exists_request(XID_FAR, &name(tail - 2), true));
                            watching_far.push_back(tail);
                            replies += 1;
                        }
                        frames.extend(wire::exists_request(XID_EXISTS, &name(tail - 1), true));
                        watching.push_back(tail);
                        replies += 1;
                        raw.send(&frames).await?;
                        continue;
                    }
                    Some(XID_LIST) => {
                        expect_ok(&frame, "listing")?;
                        replies -= 1;
                        listing -= 1;
                        match grant_after_listing.take() {
                            Some(tail) if listing == 0 => tail,
                            waiting => {
                                grant_after_listing = waiting;
                                continue;
                            }
                        }
                    }
                    Some(XID_CREATE) => {
                        expect_ok(&frame, "create at the tail")?;
                        replies -= 1;
                        continue;
                    }
                    _ => {
                        expect_ok(&frame, "delete")?;
                        replies -= 1;
                        if std::mem::take(&mut requeue_on_delete) {
                            let mut frames = Vec::new();
                            requeue!(frames);
                            raw.send(&frames).await?;
                        }
                        continue;
                    }
                };
                if listing > 0 {
                    grant_after_listing = Some(granted);
                    continue;
                }
                latencies.push(
                    epoch.elapsed().as_nanos() as u64
                        - deleted_at[granted - 1].load(Ordering::Acquire),
                );
                // Granted: release at once, and queue again at the tail if asked to, with the
                // delete or once it is answered.
                let mut frames = wire::delete_request(XID_DELETE, &name(granted));
                queued -= 1;
                replies += 1;
                mine = None;
                if !chain.queued() {
                    if chain.requeues_after_delete() {
                        requeue_on_delete = true;
                    } else {
                        requeue!(frames);
                    }
                }
                deleted_at[granted].store(epoch.elapsed().as_nanos() as u64, Ordering::Release);
                raw.send(&frames).await?;
            }
            Ok::<_, BenchError>(latencies)
        }
    }));
    let latencies = tokio::time::timeout(std::time::Duration::from_secs(120), chain)
        .await
        .map_err(|_| "the raw handoff chain stalled")??;
    let per_s = handoffs as f64 / epoch.elapsed().as_secs_f64();
    for raw in sessions {
        raw.close().await?;
    }
    let mut all: Vec<u64> = latencies.into_iter().flatten().collect();
    Ok((per_s, Percentiles::of(&mut all)))
}

const XID_DELETE: i32 = 2;
const XID_CREATE: i32 = 3;
const XID_EXISTS: i32 = 4;
const XID_FAR: i32 = 5;
const XID_ENTRY_LIST: i32 = 6;
const XID_LIST: i32 = 7;

fn expect_ok(frame: &[u8], what: &str) -> Result<(), BenchError> {
    match wire::reply_err(frame) {
        Some(0) => Ok(()),
        Some(err) => Err(format!("raw {what} failed: error {err}").into()),
        None => Err(format!("raw {what}: short reply").into()),
    }
}
