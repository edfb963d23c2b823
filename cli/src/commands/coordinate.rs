//! lock, rwlock, semaphore: acquire, run the command under supervision, release.

use std::ffi::OsString;
use std::future::Future;
use std::time::Duration;

use clap::{Args, ValueEnum};
use zookeeper_recipes::{Holding, Layout, LockGuard, Mutex, ReadWriteLock, Semaphore};
use zookeeper_tokio::Client;

use crate::connection::Connection;
use crate::exit::{self, Failure, Outcome};
use crate::exported::{self, Var};
use crate::interrupt::Interrupts;
use crate::output::Out;
use crate::supervise::{self, lost_message, status_code, stopped, End, Supervision, NOT_STARTED};
use crate::trust::until_untrusted;

/// Whose node names to use, to share the lock with Java or Python peers.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LayoutArg {
    /// Apache Curator (InterProcessMutex, LeaderLatch).
    #[default]
    Curator,
    /// kazoo (Lock, Election).
    Kazoo,
}

impl From<LayoutArg> for Layout {
    fn from(l: LayoutArg) -> Layout {
        match l {
            LayoutArg::Curator => Layout::Curator,
            LayoutArg::Kazoo => Layout::Kazoo,
        }
    }
}

/// `lock PATH -- CMD...`
#[derive(Args, Debug)]
pub struct Lock {
    /// The lock's path (created as a container if missing).
    path: String,
    /// Node layout, to share the lock with Curator or kazoo peers.
    #[arg(long, value_enum, default_value_t)]
    layout: LayoutArg,
    #[command(flatten)]
    supervision: Supervision,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// `rwlock --read|--write PATH -- CMD...`
#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("half").required(true).args(["read", "write"]))]
pub struct Rwlock {
    /// Share the lock with other readers.
    #[arg(long)]
    read: bool,
    /// Hold the lock alone.
    #[arg(long)]
    write: bool,
    path: String,
    #[command(flatten)]
    supervision: Supervision,
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// `semaphore --permits N PATH -- CMD...`
#[derive(Args, Debug)]
pub struct SemaphoreCmd {
    /// How many may hold a lease at once; every participant must give the same number.
    #[arg(long, short = 'n', value_parser = clap::value_parser!(u32).range(1..))]
    permits: u32,
    path: String,
    #[command(flatten)]
    supervision: Supervision,
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Who holds the node, shown by `ephemerals` and kept in the node's data (kazoo shows it).
pub fn identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".to_owned());
    format!("zk@{host}:{}", std::process::id())
}

pub async fn lock(client: &Client, conn: &Connection, args: Lock, _out: &mut Out) -> Outcome {
    let mut interrupts = Interrupts::catch()?;
    refuse_bad_timing(client, &args.supervision)?;
    let sessions = conn.renewing(client)?;
    let mutex = Mutex::with_layout(&sessions, &args.path, args.layout.into())?
        .with_data(identity().as_bytes());
    let guard = acquire(
        "lock",
        &args.path,
        conn.timeout,
        &mut interrupts,
        |t| mutex.acquire_timeout(t),
        mutex.acquire(),
    )
    .await?;
    let live = sessions.client();
    let outcome = hold(
        &live,
        conn,
        "lock",
        &args.path,
        guard,
        None,
        &args.command,
        &args.supervision,
        &mut interrupts,
    )
    .await;
    close_renewed(client, &live).await;
    outcome
}

pub async fn rwlock(client: &Client, conn: &Connection, args: Rwlock, _out: &mut Out) -> Outcome {
    let mut interrupts = Interrupts::catch()?;
    refuse_bad_timing(client, &args.supervision)?;
    let sessions = conn.renewing(client)?;
    let lock = ReadWriteLock::new(&sessions, &args.path)?.with_data(identity().as_bytes());
    let what = if args.read { "read lock" } else { "write lock" };
    let guard = if args.read {
        acquire(
            what,
            &args.path,
            conn.timeout,
            &mut interrupts,
            |t| lock.read_timeout(t),
            lock.read(),
        )
        .await?
    } else {
        acquire(
            what,
            &args.path,
            conn.timeout,
            &mut interrupts,
            |t| lock.write_timeout(t),
            lock.write(),
        )
        .await?
    };
    let live = sessions.client();
    let outcome = hold(
        &live,
        conn,
        what,
        &args.path,
        guard,
        None,
        &args.command,
        &args.supervision,
        &mut interrupts,
    )
    .await;
    close_renewed(client, &live).await;
    outcome
}

pub async fn semaphore(
    client: &Client,
    conn: &Connection,
    args: SemaphoreCmd,
    _out: &mut Out,
) -> Outcome {
    let mut interrupts = Interrupts::catch()?;
    refuse_bad_timing(client, &args.supervision)?;
    let sessions = conn.renewing(client)?;
    let pool = Semaphore::new(&sessions, &args.path, args.permits as usize)?
        .with_data(identity().as_bytes());
    let lease = acquire(
        "lease on",
        &args.path,
        conn.timeout,
        &mut interrupts,
        |t| pool.acquire_timeout(t),
        pool.acquire(),
    )
    .await?;
    let live = sessions.client();
    let outcome = hold(
        &live,
        conn,
        "lease on",
        &args.path,
        lease,
        None,
        &args.command,
        &args.supervision,
        &mut interrupts,
    )
    .await;
    close_renewed(client, &live).await;
    outcome
}

/// Refuses a `--grace` or `--suspend-limit` the session's timeout cannot hold before the wait
/// for the lock, which may be long, rather than once it is granted. Checked again on the
/// session the lock is granted on (a renewed one may have been given another timeout).
pub fn refuse_bad_timing(client: &Client, supervision: &Supervision) -> Result<(), Failure> {
    supervision.timing(client.session_timeout()).map(drop)
}

/// Closes `live`, the session a lock was granted on, when it is not `first` (which `zk`
/// closes in any case): the first expired while waiting, and the wait went on with a new one.
pub async fn close_renewed(first: &Client, live: &Client) {
    if live.session_id() != first.session_id() {
        let _ = tokio::time::timeout(Duration::from_secs(3), live.close()).await;
    }
}

/// Waits for `what` on `path`, within `timeout` if given, through expiries of the session
/// (the recipe queues again on a new one). Interrupted, the wait is dropped (which deletes our
/// waiting node) and `zk` exits as the signal would have it. Every failure names the lock.
pub async fn acquire<T, W, F>(
    what: &str,
    path: &str,
    timeout: Option<Duration>,
    interrupts: &mut Interrupts,
    within: impl FnOnce(Duration) -> W,
    forever: F,
) -> Result<T, Failure>
where
    W: Future<Output = zookeeper_recipes::Result<Option<T>>>,
    F: Future<Output = zookeeper_recipes::Result<T>>,
{
    let not_acquired = |e: zookeeper_recipes::Error| {
        let failure = Failure::from(e);
        Failure {
            message: failure
                .message
                .map(|m| format!("{what} {path} not acquired: {m}")),
            ..failure
        }
    };
    let wait = async {
        match timeout {
            Some(t) => within(t).await.map_err(not_acquired)?.ok_or_else(|| {
                Failure::new(
                    exit::TIMEOUT,
                    format!(
                        "{what} {path} not acquired within {}",
                        humantime::format_duration(t)
                    ),
                )
            }),
            None => forever.await.map_err(not_acquired),
        }
    };
    tokio::select! {
        acquired = wait => acquired,
        signal = interrupts.next() => Err(Failure::silent(exit::signalled(signal))),
    }
}

/// Runs the command while `guard` is trusted, with the lock's variables and `extra` in its
/// environment, then releases the lock.
#[allow(clippy::too_many_arguments)]
pub async fn hold(
    client: &Client,
    conn: &Connection,
    what: &str,
    path: &str,
    guard: LockGuard,
    extra: Option<(&'static str, String)>,
    command: &[OsString],
    supervision: &Supervision,
    interrupts: &mut Interrupts,
) -> Outcome {
    if let Holding::Lost(reason) = guard.state() {
        return Err(Failure::new(
            exit::LOST,
            lost_message(&format!("{what} {path}"), &reason.to_string(), NOT_STARTED),
        ));
    }
    let mut env = lock_env(conn, client, path, guard.path(), guard.fencing_token().0);
    env.extend(extra.map(|(name, value)| (name, value.into())));
    let timing = match supervision.timing(client.session_timeout()) {
        Ok(timing) => timing,
        Err(usage) => {
            let _ = tokio::time::timeout(Duration::from_secs(3), guard.release()).await;
            return Err(usage);
        }
    };
    let untrusted = until_untrusted(guard.state_changes(), timing.suspend_limit);
    let end = supervise::run(client, command, &env, untrusted, &timing, interrupts).await;
    // Bounded: with the connection down the delete goes on in the background, and closing the
    // session (or its expiry) removes the node anyway.
    let _ = tokio::time::timeout(Duration::from_secs(3), guard.release()).await;
    finish(&format!("{what} {path}"), end?)
}

/// The command's environment: the connection's settings (see `exported`), the lock's path as
/// given, its node's full path (chroot included) and the fencing token.
pub fn lock_env(
    conn: &Connection,
    client: &Client,
    path: &str,
    node: &str,
    token: i64,
) -> Vec<Var> {
    let mut env = exported::settings(conn);
    env.extend([
        ("ZK_LOCK_PATH", path.into()),
        (
            "ZK_LOCK_NODE",
            exported::full_path(client.chroot(), node).into(),
        ),
        ("ZK_FENCING_TOKEN", token.to_string().into()),
    ]);
    env
}

/// The exit of `zk` for how the command ended.
pub fn finish(what: &str, end: End) -> Outcome {
    match end {
        End::Exited(status) | End::Interrupted(status) => Ok(status_code(status)),
        End::Stopped {
            reason,
            signal,
            killed,
        } => Err(Failure::new(
            exit::LOST,
            lost_message(what, &reason, &stopped(signal, killed.as_deref())),
        )),
    }
}
