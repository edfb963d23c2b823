//! The read-write lock, compatible with Curator's `InterProcessReadWriteLock`
//! (`_c_<uuid>-__READ__<seq>` and `_c_<uuid>-__WRIT__<seq>` under one path) or with kazoo's
//! `ReadLock` and `WriteLock` (`<hex>__rlock__<seq>` and `<hex>__lock__<seq>`).
//!
//! A writer waits for the contender just before it, whatever its kind. A reader waits only for the
//! nearest *lower* writer and watches that one (and, as every waiter does, the one it would wait
//! for next: here the writer before it): Curator's reader watches the lowest writer, so one
//! writer's release wakes readers queued behind any number of later writers. Only lower sequences
//! count, so a writer queued after a reader never blocks it: kazoo 2.8's read lock waited for the
//! highest writer, even one queued after it that waited for the reader (kazoo #649, both hung);
//! kazoo 2.9 keeps only lower sequences, as here.
//!
//! Which layouts exclude which on one path: Curator's readers and writers exclude ours in
//! Curator's layout; kazoo's `ReadLock` and `WriteLock` exclude ours in kazoo's layout (and a
//! kazoo `Lock` excludes our writers, whose nodes it shares the name of, but ignores our
//! readers as it ignores kazoo's own, while readers wait for it). The two layouts do not see
//! each other.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use zookeeper_tokio::Client;

use crate::contend::{deadline_after, predecessor, serialize, AheadRule, Patience, Rule, Verdict};
use crate::error::{Error, Result};
use crate::lock::acquisition::{acquire_call, queue_for_guard, Entry};
use crate::lock::guard::{reenter, HoldSlot, LockGuard};
use crate::metrics::Recipe;
use crate::node::ensure_path::validate;
use crate::node::naming::{
    peer_queue, Contender, Layout, CURATOR_READ, CURATOR_WRITE, KAZOO_LOCK, KAZOO_READ,
};
use crate::node::protection::list_children;
use crate::session::sessions::Sessions;

/// The kinds a read-write lock tells apart, readers first (Curator strips `__READ__` before
/// `__WRIT__` when it sorts).
pub(crate) const READ: usize = 0;
pub(crate) const WRITE: usize = 1;

pub(crate) fn markers(layout: Layout) -> [&'static str; 2] {
    match layout {
        Layout::Curator => [CURATOR_READ, CURATOR_WRITE],
        Layout::Kazoo => [KAZOO_READ, KAZOO_LOCK],
    }
}

/// A distributed read-write lock: many readers or one writer.
///
/// A write contends on its own, through the same handle too: tasks or threads sharing one
/// handle exclude each other's writes, and a read through the handle waits for its write as
/// any reader would. Reads through one handle share its read node. The holder of the write lock
/// may read under it with [`LockGuard::reenter`](crate::LockGuard::reenter): that guard shares
/// the write node, so exclusivity lasts until the last of the two guards goes (releasing the
/// write guard first does not let writers queued behind in between). Taking the write lock
/// through a handle that holds the read lock would wait for ourselves and fails with
/// [`Error::UpgradeWouldDeadlock`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zookeeper_recipes::ReadWriteLock;
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_rwlock"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// // Three participants (normally in three processes) on one lock.
/// let a = ReadWriteLock::new(&client, "/locks/catalog")?;
/// let b = ReadWriteLock::new(&client, "/locks/catalog")?;
/// let writer = ReadWriteLock::new(&client, "/locks/catalog")?;
///
/// // Readers share the lock; a writer waits for them all.
/// let read_a = a.read().await?;
/// let read_b = b.read().await?;
/// assert!(writer.try_write().await?.is_none());
/// read_a.release().await?;
/// read_b.release().await?;
///
/// let write = writer.write().await?;
/// assert!(a.try_read().await?.is_none());
/// write.release().await?;
/// # Ok(())
/// # }
/// ```
pub struct ReadWriteLock {
    sessions: Sessions,
    path: String,
    layout: Layout,
    data: Vec<u8>,
    read_slot: HoldSlot,
    serial: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for ReadWriteLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadWriteLock")
            .field("path", &self.path)
            .field("layout", &self.layout)
            .finish()
    }
}

/// Which half of the lock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Half {
    Read,
    Write,
}

impl Half {
    fn recipe(self) -> Recipe {
        match self {
            Half::Read => Recipe::ReadLock,
            Half::Write => Recipe::WriteLock,
        }
    }
}

impl ReadWriteLock {
    /// A read-write lock on `path` in Curator's layout (`InterProcessReadWriteLock`), on a
    /// `&Client` or on [`Sessions`] (which carry it across expiry, as for a
    /// [`Mutex`](crate::Mutex::new)).
    pub fn new(sessions: impl Into<Sessions>, path: &str) -> Result<ReadWriteLock> {
        ReadWriteLock::with_layout(sessions, path, Layout::Curator)
    }

    /// A read-write lock in the given layout. [`Layout::Kazoo`] interoperates with kazoo's
    /// `ReadLock` and `WriteLock` (readers `<hex>__rlock__<seq>`, writers
    /// `<hex>__lock__<seq>`), with kazoo 2.9's order: only lower sequences block, so a reader
    /// and a writer never wait for each other (kazoo 2.8's `ReadLock` still can, with a writer
    /// queued after it: its own bug, kazoo #649).
    pub fn with_layout(
        sessions: impl Into<Sessions>,
        path: &str,
        layout: Layout,
    ) -> Result<ReadWriteLock> {
        validate(path)?;
        Ok(ReadWriteLock {
            sessions: sessions.into(),
            path: path.to_owned(),
            layout,
            data: Vec::new(),
            read_slot: Arc::new(StdMutex::new(None)),
            serial: tokio::sync::Mutex::new(()),
        })
    }

    /// The data written into our nodes.
    pub fn with_data(mut self, data: &[u8]) -> ReadWriteLock {
        self.data = data.to_vec();
        self
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Waits for the read lock.
    pub async fn read(&self) -> Result<LockGuard> {
        Ok(self
            .acquire(Half::Read, Patience::Forever)
            .await?
            .expect("waits until granted"))
    }

    /// Takes the read lock only if no writer holds or waits before us. Returns within the
    /// session timeout whatever the connection does.
    pub async fn try_read(&self) -> Result<Option<LockGuard>> {
        self.acquire(Half::Read, Patience::NoWait).await
    }

    /// Waits at most `timeout` for the read lock; `None` on timeout, with our node deleted.
    /// Returns within `timeout` plus at most 50 ms whatever the connection does (a node it
    /// could not delete by then is deleted in the background).
    pub async fn read_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.acquire(Half::Read, deadline_after(timeout)).await
    }

    /// Waits for the write lock.
    pub async fn write(&self) -> Result<LockGuard> {
        Ok(self
            .acquire(Half::Write, Patience::Forever)
            .await?
            .expect("waits until granted"))
    }

    /// Takes the write lock only if nobody holds or waits for the lock. Returns within the
    /// session timeout whatever the connection does.
    pub async fn try_write(&self) -> Result<Option<LockGuard>> {
        self.acquire(Half::Write, Patience::NoWait).await
    }

    /// Waits at most `timeout` for the write lock; `None` on timeout, with our node deleted.
    /// Returns within `timeout` plus at most 50 ms whatever the connection does (a node it
    /// could not delete by then is deleted in the background).
    pub async fn write_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.acquire(Half::Write, deadline_after(timeout)).await
    }

    /// Readers through one handle share its read node (reads exclude nobody but writers);
    /// a write never re-enters: it contends like any other, so tasks sharing the handle
    /// exclude each other (a read under one's own write lock is `write_guard.reenter()`).
    fn reenter(&self, half: Half) -> Result<Option<LockGuard>> {
        match half {
            Half::Read => Ok(reenter(&self.read_slot)),
            Half::Write => {
                let holds_read = self
                    .read_slot
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .is_some_and(|n| !n.is_lost());
                if holds_read {
                    Err(Error::UpgradeWouldDeadlock)
                } else {
                    Ok(None)
                }
            }
        }
    }

    async fn acquire(&self, half: Half, patience: Patience) -> Result<Option<LockGuard>> {
        acquire_call(
            &self.sessions.client(),
            half.recipe(),
            &self.path,
            &patience,
            self.acquire_unbounded(half, patience.clone()),
        )
        .await
    }

    async fn acquire_unbounded(&self, half: Half, patience: Patience) -> Result<Option<LockGuard>> {
        if let Some(guard) = self.reenter(half)? {
            return Ok(Some(guard));
        }
        let Some(_serial) = serialize(&self.serial, &patience).await else {
            return Ok(None);
        };
        if let Some(guard) = self.reenter(half)? {
            return Ok(Some(guard));
        }
        self.sessions
            .each_session(|client| self.attempt(client, half, patience.clone()))
            .await
    }

    /// One acquisition of `half` on `client`'s session.
    async fn attempt(
        &self,
        client: Client,
        half: Half,
        patience: Patience,
    ) -> Result<Option<LockGuard>> {
        let markers = markers(self.layout);
        let (marker, slot, rule) = match half {
            Half::Read => (markers[READ], Some(&self.read_slot), READ_RULE),
            Half::Write => (markers[WRITE], None, WRITE_RULE),
        };
        let entry = Entry {
            recipe: half.recipe(),
            dir: &self.path,
            layout: self.layout,
            markers: &markers,
            marker,
            data: &self.data,
            slot,
        };
        queue_for_guard(&client, entry, patience, Rule::Ahead(rule)).await
    }

    /// The contenders' node names in queue order, as the layout's peer orders them.
    pub async fn participants(&self) -> Result<Vec<String>> {
        let client = self.sessions.live().await?;
        let children = list_children(&client, &self.path)
            .await?
            .unwrap_or_default();
        let queue = peer_queue(self.layout, &children, &markers(self.layout), None);
        Ok(queue.contenders.into_iter().map(|c| c.name).collect())
    }
}

/// The rule a reader hands the contention core.
pub(crate) const READ_RULE: AheadRule = reader;
/// The rule a writer hands the contention core: the contender just before it blocks it,
/// whatever its kind.
pub(crate) const WRITE_RULE: AheadRule = predecessor;

/// A reader holds unless a writer sorts before it; then it watches the nearest such writer.
fn reader(ahead: &[Contender]) -> Verdict {
    match ahead.iter().rposition(|c| c.kind == Some(WRITE)) {
        Some(writer) => Verdict::WaitFor(writer),
        None => Verdict::Granted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(kinds: &str) -> Vec<Contender> {
        kinds
            .chars()
            .enumerate()
            .map(|(i, k)| Contender {
                name: format!("{k}{i}"),
                kind: Some(if k == 'w' { WRITE } else { READ }),
            })
            .collect()
    }

    #[test]
    fn readers_share() {
        let queue = q("rrr");
        for i in 0..3 {
            assert_eq!(reader(&queue[..i]), Verdict::Granted);
        }
    }

    #[test]
    fn reader_watches_nearest_lower_writer_only() {
        let queue = q("wrwrr");
        assert_eq!(reader(&queue[..1]), Verdict::WaitFor(0));
        assert_eq!(reader(&queue[..3]), Verdict::WaitFor(2));
        assert_eq!(reader(&queue[..4]), Verdict::WaitFor(2));
    }

    #[test]
    fn later_writer_never_blocks_a_reader() {
        // The kazoo #649 interleaving: a writer queued after a waiting reader is not shown to
        // the reader's rule at all.
        assert_eq!(reader(&q("rw")[..0]), Verdict::Granted);
    }

    #[test]
    fn writer_watches_its_predecessor() {
        assert_eq!(predecessor(&q("rrw")[..2]), Verdict::WaitFor(1));
        assert_eq!(predecessor(&q("w")[..0]), Verdict::Granted);
    }
}
