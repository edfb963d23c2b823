//! Sequence counters approaching their wrap: a warning while there is time, and a way to
//! restart an idle parent's counter.
//!
//! A sequential child's number is its parent's count of child creates, a signed 32-bit
//! counter that wraps to `-2147483648` after 2^31 creates (see `naming`): from then on the
//! peers' order is broken and the recipes refuse to grant ([`Error::SequenceWrapped`]). Every
//! contender node a recipe creates is checked here: past [`SEQUENCE_WARNING_THRESHOLD`] a
//! warning is logged (at most once a minute per parent, per process) and, with the `metrics`
//! feature, `zookeeper_sequence_near_wrap_total` counts the create. The remedy is to recreate
//! the parent while nobody is queued: [`recycle_idle_parent`].

use std::collections::BTreeMap;
use std::sync::Mutex as StdMutex;
use std::time::{Duration, Instant};

use tracing::warn;
use zookeeper_tokio::{Client, CreateOptions, ErrorKind, MultiOp, Stat};

use crate::error::{Error, Result};
use crate::metrics;
use crate::node::ensure_path::validate;
use crate::node::naming::parse_sequence;
use crate::node::path::child_name;

/// The sequence number from which a recipe warns that its parent's counter approaches the
/// wrap: 2^31 - 2^24, which leaves 16,777,216 creates (days at any lock's rate) to recycle
/// the parent ([`recycle_idle_parent`]).
pub const SEQUENCE_WARNING_THRESHOLD: i32 = i32::MAX - (1 << 24) + 1;

/// How often the warning for one parent is repeated by one process.
const WARN_EVERY: Duration = Duration::from_secs(60);
/// How many parents the warning remembers; past it, it forgets them all (and may warn again
/// sooner).
const WARNED_PARENTS: usize = 1024;

/// When each parent was last warned of.
static WARNED: StdMutex<BTreeMap<String, Instant>> = StdMutex::new(BTreeMap::new());

/// Checks the sequence of a contender node just created as `path` with the child-name
/// `prefix` (what precedes the server's sequence) under `dir`.
pub(crate) fn check_created(dir: &str, path: &str, prefix: &str) {
    let Some(sequence) = child_name(path)
        .strip_prefix(prefix)
        .and_then(parse_sequence)
    else {
        return;
    };
    if (0..SEQUENCE_WARNING_THRESHOLD).contains(&sequence) {
        return;
    }
    metrics::sequence_near_wrap();
    if !due(dir) {
        return;
    }
    let left = i64::from(i32::MAX) - i64::from(sequence) + 1;
    if sequence < 0 {
        warn!(
            path = %dir,
            sequence,
            "the sequence counter under the path has wrapped: the recipes refuse to grant \
             here until the parent is recreated while idle (recycle_idle_parent)"
        );
    } else {
        warn!(
            path = %dir,
            sequence,
            creates_left = left,
            "the sequence counter under the path approaches its wrap at 2^31, after which the \
             recipes refuse to grant: recreate the parent while idle (recycle_idle_parent)"
        );
    }
}

/// Whether a warning for `dir` is due, marking it given.
fn due(dir: &str) -> bool {
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    let now = Instant::now();
    if let Some(last) = warned.get(dir) {
        if now.duration_since(*last) < WARN_EVERY {
            return false;
        }
    }
    if warned.len() >= WARNED_PARENTS {
        warned.clear();
    }
    warned.insert(dir.to_owned(), now);
    true
}

/// The sequence number the next sequential child of a node with `stat` gets, from its stat:
/// the server counts child creates, and reports `cversion` as creates and deletes together
/// (`2 * creates - children`). Exact until the counter wraps; past it this reads the count
/// modulo 2^31 (the children's names then carry the sign).
pub fn next_sequence(stat: &Stat) -> i32 {
    let creates = (stat.cversion as u32).wrapping_add(stat.num_children as u32) / 2;
    creates as i32
}

/// What [`recycle_idle_parent`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recycled {
    /// The parent was deleted and created again, in one transaction, with the same data and
    /// ACL: its next child is numbered 0.
    Recycled {
        /// The sequence its next child would have had (see [`next_sequence`]).
        was: i32,
    },
    /// Left alone: it has children (a contender queued, or anything else).
    Busy {
        /// How many.
        children: i32,
    },
    /// There is no such node.
    Missing,
}

/// How many times a recycle reads the parent again when its data changed under it.
const RECYCLE_ATTEMPTS: usize = 5;

/// Restarts the sequence counter of `path`, the parent of a recipe's contenders, if nobody is
/// queued under it: deletes it and creates it again, empty, as `kind`, in one transaction,
/// with the same data and ACL. Contenders that come later start at sequence 0, and none of
/// them ever finds the parent missing.
///
/// Safe to call at any time, from any process: the server deletes a node only while it has
/// no children, and checks that within the transaction, so a contender that queued after our
/// look makes it fail ([`Recycled::Busy`]) rather than lose its node; the delete is also
/// guarded by the data version we read, so the data we copy is current. Container parents
/// (ours and Curator's) also restart by themselves when the server removes them empty, on its
/// own schedule (`znode.container.checkIntervalMs`, a minute by default) and only if nobody
/// queues meanwhile; kazoo's persistent parents restart only through this. Run it when the
/// recipes warn (see
/// [`SEQUENCE_WARNING_THRESHOLD`]) or once they refuse with [`Error::SequenceWrapped`],
/// during a quiet moment: it needs one instant with nobody queued.
///
/// Needs the rights to delete `path` and create it again (its parent's `DELETE` and
/// `CREATE`, and `READ` on its ACL).
pub async fn recycle_idle_parent(
    client: &Client,
    path: &str,
    kind: ParentKind,
) -> Result<Recycled> {
    validate(path)?;
    if path == "/" {
        return Err(Error::InvalidArgument("the root cannot be recycled"));
    }
    let mut attempts = 0;
    loop {
        attempts += 1;
        let (data, stat) = match client.get_data(path).await {
            Ok(read) => read,
            Err(e) if e == ErrorKind::NoNode => return Ok(Recycled::Missing),
            Err(e) => return Err(Error::Client(e)),
        };
        if stat.num_children > 0 {
            return Ok(Recycled::Busy {
                children: stat.num_children,
            });
        }
        let acl = match client.get_acl(path).await {
            Ok((acl, _)) => acl,
            Err(e) if e == ErrorKind::NoNode => return Ok(Recycled::Missing),
            Err(e) => return Err(Error::Client(e)),
        };
        let options = kind.options().acl(acl);
        let ops = vec![
            MultiOp::delete(path, Some(stat.version)),
            MultiOp::create(path, &data, &options),
        ];
        match client.multi(ops).await {
            Ok(_) => {
                let was = next_sequence(&stat);
                tracing::info!(
                    path,
                    was,
                    "recycled an idle parent: its sequence restarts at 0"
                );
                return Ok(Recycled::Recycled { was });
            }
            Err(e) => match e.multi_cause() {
                Some((0, cause)) if cause == ErrorKind::NotEmpty => {
                    let children = client
                        .exists(path)
                        .await
                        .ok()
                        .flatten()
                        .map_or(1, |s| s.num_children.max(1));
                    return Ok(Recycled::Busy { children });
                }
                Some((0, cause)) if cause == ErrorKind::NoNode => return Ok(Recycled::Missing),
                Some((0, cause))
                    if cause == ErrorKind::BadVersion && attempts < RECYCLE_ATTEMPTS =>
                {
                    continue
                }
                _ => return Err(Error::Client(e)),
            },
        }
    }
}

/// What a recycled parent is created as. The server does not tell a client which kind a
/// node is (a container's or TTL node's stat reads like a persistent node's), so the caller
/// says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParentKind {
    /// A container, which the server removes once it is empty again: the parents this
    /// crate's recipes and Curator's create.
    Container,
    /// A persistent node: the parents kazoo's `ensure_path` creates.
    Persistent,
}

impl ParentKind {
    fn options(self) -> CreateOptions {
        match self {
            ParentKind::Container => CreateOptions::container(),
            ParentKind::Persistent => CreateOptions::persistent(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(cversion: i32, num_children: i32) -> Stat {
        Stat {
            cversion,
            num_children,
            ..Stat::default()
        }
    }

    #[test]
    fn the_next_sequence_counts_creates_only() {
        // Three creates, one delete: cversion 4, two children; the next child is number 3.
        assert_eq!(next_sequence(&stat(4, 2)), 3);
        assert_eq!(next_sequence(&stat(0, 0)), 0);
        // Near the wrap the reported cversion has overflowed; the count has not.
        let creates = SEQUENCE_WARNING_THRESHOLD;
        assert_eq!(next_sequence(&stat(creates.wrapping_mul(2), 0)), creates);
        assert_eq!(
            next_sequence(&stat(i32::MAX.wrapping_mul(2) - 1, 1)),
            i32::MAX
        );
    }

    #[test]
    fn the_threshold_leaves_two_to_the_twenty_fourth_creates() {
        assert_eq!(
            i64::from(i32::MAX) + 1 - i64::from(SEQUENCE_WARNING_THRESHOLD),
            1 << 24
        );
    }

    #[test]
    fn warnings_for_one_parent_are_spaced() {
        assert!(due("/spaced/a"));
        assert!(!due("/spaced/a"));
        assert!(due("/spaced/b"));
    }
}
