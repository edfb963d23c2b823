//! An `i64` changed by compare-and-set, compatible with Curator's `DistributedAtomicLong`.

use std::time::Duration;

use tokio::time::Instant;

use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

use super::{decode_i64, encode_i64};
use crate::error::{Error, Result};
use crate::lock::mutex::Mutex;
use crate::metrics::Recipe;
use crate::node::ensure_path::{ensure_path, validate};
use crate::retry::RetryPolicy;
use crate::session::sessions::Sessions;

/// The outcome of an operation on a [`DistributedAtomicLong`] (Curator's `AtomicValue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicValue<T> {
    /// Whether the change was made. When `false`, nothing was written: the retries ran out
    /// (or the expected value did not match).
    pub succeeded: bool,
    /// The value before the change (the last one read).
    pub pre_value: T,
    /// The value after the change (the new one if it succeeded).
    pub post_value: T,
    /// How many tries it took.
    pub stats: AtomicStats,
}

/// How an operation went (Curator's `AtomicStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicStats {
    /// Optimistic tries: read, then write at the version read.
    pub optimistic_tries: u32,
    /// Tries made holding the promoted lock.
    pub promoted_tries: u32,
    /// Time spent on the optimistic tries.
    pub optimistic_time: Duration,
    /// Time spent holding, or waiting for, the promoted lock.
    pub promoted_time: Duration,
}

/// What to do when optimistic tries run out (Curator's `PromotedToLock`): take an
/// [`Mutex`] (Curator's `InterProcessMutex` layout) on `lock_path`, waiting at most
/// `max_lock_time`, and try again under it.
#[derive(Clone, Debug)]
pub struct PromotedToLock {
    lock_path: String,
    max_lock_time: Duration,
    retry: RetryPolicy,
}

impl PromotedToLock {
    /// The lock at `lock_path`, waited for at most `max_lock_time`, and tries under it paced
    /// by `retry`.
    pub fn new(lock_path: &str, max_lock_time: Duration, retry: RetryPolicy) -> Result<Self> {
        validate(lock_path)?;
        Ok(PromotedToLock {
            lock_path: lock_path.to_owned(),
            max_lock_time,
            retry,
        })
    }
}

/// A counter in a node: 8 bytes, big-endian (no data reads as 0), the node created on the
/// first write, as Curator's `DistributedAtomicLong`, so Java and Rust processes share it.
///
/// Each change reads the value and writes the new one at the version read; another writer in
/// between makes the write fail, and it is tried again as `retry` allows; then, if asked,
/// under a lock ([`PromotedToLock`]), so that contenders take turns. The result says whether
/// it succeeded, the values before and after, and the tries it took.
///
/// A write whose reply is lost with the connection may have been applied. If the node shows
/// it was not (its version did not move), the try counts as failed and is retried; if the node
/// cannot tell, the operation fails with [`Error::Indeterminate`], never counting twice.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zookeeper_recipes::{DistributedAtomicLong, PromotedToLock, RetryPolicy};
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_atomic_long"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let retry = RetryPolicy::n_times(10, Duration::from_millis(10));
/// let hits = DistributedAtomicLong::new(&client, "/stats/hits", retry)?.promote_to_lock(
///     PromotedToLock::new("/stats/hits-lock", Duration::from_secs(5), retry)?,
/// );
/// let result = hits.increment().await?;
/// assert!(result.succeeded);
/// assert_eq!((result.pre_value, result.post_value), (0, 1));
/// assert_eq!(hits.add(41).await?.post_value, 42);
/// assert!(hits.compare_and_set(42, 100).await?.succeeded);
/// assert_eq!(hits.get().await?.post_value, 100);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct DistributedAtomicLong {
    sessions: Sessions,
    path: String,
    retry: RetryPolicy,
    promoted: Option<PromotedToLock>,
}

/// One read of the node.
struct Current {
    value: i64,
    /// The version to write at; `None` when the node does not exist.
    version: Option<i32>,
}

impl DistributedAtomicLong {
    /// The counter at `path`, retrying lost races as `retry` allows.
    pub fn new(
        sessions: impl Into<Sessions>,
        path: &str,
        retry: RetryPolicy,
    ) -> Result<DistributedAtomicLong> {
        validate(path)?;
        Ok(DistributedAtomicLong {
            sessions: sessions.into(),
            path: path.to_owned(),
            retry,
            promoted: None,
        })
    }

    /// When the optimistic tries run out, take a lock and try again under it.
    pub fn promote_to_lock(mut self, promoted: PromotedToLock) -> DistributedAtomicLong {
        self.promoted = Some(promoted);
        self
    }

    /// The counter's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The current value (0 if the node does not exist): `pre_value` and `post_value` both.
    pub async fn get(&self) -> Result<AtomicValue<i64>> {
        let current = self.read(&self.sessions.live().await?).await?;
        Ok(AtomicValue {
            succeeded: true,
            pre_value: current.value,
            post_value: current.value,
            stats: AtomicStats::default(),
        })
    }

    /// Adds 1.
    pub async fn increment(&self) -> Result<AtomicValue<i64>> {
        self.add(1).await
    }

    /// Subtracts 1.
    pub async fn decrement(&self) -> Result<AtomicValue<i64>> {
        self.add(-1).await
    }

    /// Adds `delta` (wrapping, as Java's `long` does).
    pub async fn add(&self, delta: i64) -> Result<AtomicValue<i64>> {
        self.change(|value| Some(value.wrapping_add(delta))).await
    }

    /// Subtracts `delta`.
    pub async fn subtract(&self, delta: i64) -> Result<AtomicValue<i64>> {
        self.add(delta.wrapping_neg()).await
    }

    /// Sets `value`, whatever the value was, as the tries allow (Curator's `trySet`).
    pub async fn try_set(&self, value: i64) -> Result<AtomicValue<i64>> {
        self.change(|_| Some(value)).await
    }

    /// Sets `new` if the value is `expected`: one read, one write at the version read.
    /// A missing node counts as 0 (Curator's `compareAndSet` fails on a missing or empty
    /// node); it is then created.
    pub async fn compare_and_set(&self, expected: i64, new: i64) -> Result<AtomicValue<i64>> {
        let client = self.sessions.live().await?;
        let start = Instant::now();
        let current = self.read(&client).await?;
        let mut result = AtomicValue {
            succeeded: false,
            pre_value: current.value,
            post_value: current.value,
            stats: AtomicStats {
                optimistic_tries: 1,
                ..AtomicStats::default()
            },
        };
        if current.value == expected && self.write(&client, &current, new).await? {
            result.succeeded = true;
            result.post_value = new;
        }
        result.stats.optimistic_time = start.elapsed();
        Ok(result)
    }

    /// Sets `value` with no regard for what is there (Curator's `forceSet`).
    pub async fn force_set(&self, value: i64) -> Result<()> {
        let client = self.sessions.live().await?;
        match client.set_data(&self.path, &encode_i64(value), None).await {
            Ok(_) => Ok(()),
            Err(e) if e == ErrorKind::NoNode => {
                let current = Current {
                    value: 0,
                    version: None,
                };
                if self.write(&client, &current, value).await? {
                    Ok(())
                } else {
                    // Created by someone else meanwhile: overwrite it.
                    client
                        .set_data(&self.path, &encode_i64(value), None)
                        .await?;
                    Ok(())
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Creates the node with `value` if it does not exist; `false` if it did.
    pub async fn initialize(&self, value: i64) -> Result<bool> {
        let current = Current {
            value: 0,
            version: None,
        };
        self.write(&self.sessions.live().await?, &current, value)
            .await
    }

    /// Optimistic tries, then tries under the promoted lock.
    async fn change(&self, make: impl Fn(i64) -> Option<i64>) -> Result<AtomicValue<i64>> {
        let client = self.sessions.live().await?;
        let mut result = AtomicValue {
            succeeded: false,
            pre_value: 0,
            post_value: 0,
            stats: AtomicStats::default(),
        };
        let start = Instant::now();
        let won = self
            .tries(&client, &make, self.retry, &mut result, |s| {
                s.optimistic_tries += 1
            })
            .await;
        result.stats.optimistic_time = start.elapsed();
        if won? {
            return Ok(result);
        }
        let Some(promoted) = &self.promoted else {
            return Ok(result);
        };
        let start = Instant::now();
        let mutex = Mutex::new(&client, &promoted.lock_path)?.recorded_as(Recipe::AtomicLongLock);
        let won = match mutex.acquire_timeout(promoted.max_lock_time).await? {
            None => Ok(false),
            Some(guard) => {
                let won = self
                    .tries(&client, &make, promoted.retry, &mut result, |s| {
                        s.promoted_tries += 1
                    })
                    .await;
                guard.release().await?;
                won
            }
        };
        result.stats.promoted_time = start.elapsed();
        won?;
        Ok(result)
    }

    /// Tries as `retry` allows; true once a write succeeded.
    async fn tries(
        &self,
        client: &Client,
        make: &impl Fn(i64) -> Option<i64>,
        retry: RetryPolicy,
        result: &mut AtomicValue<i64>,
        count: impl Fn(&mut AtomicStats),
    ) -> Result<bool> {
        let mut failed = 0;
        loop {
            count(&mut result.stats);
            let current = self.read(client).await?;
            result.pre_value = current.value;
            result.post_value = current.value;
            let Some(new) = make(current.value) else {
                return Ok(false);
            };
            if self.write(client, &current, new).await? {
                result.succeeded = true;
                result.post_value = new;
                return Ok(true);
            }
            failed += 1;
            match retry.delay_drawn(failed, client.random_u64()) {
                Some(delay) => tokio::time::sleep(delay).await,
                None => return Ok(false),
            }
        }
    }

    async fn read(&self, client: &Client) -> Result<Current> {
        match client.get_data(&self.path).await {
            Ok((data, stat)) => Ok(Current {
                value: decode_i64(&self.path, &data)?,
                version: Some(stat.version),
            }),
            Err(e) if e == ErrorKind::NoNode => Ok(Current {
                value: 0,
                version: None,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes `new` over what `current` read: true if written, false if someone else wrote
    /// first.
    async fn write(&self, client: &Client, current: &Current, new: i64) -> Result<bool> {
        let data = encode_i64(new);
        let written = match current.version {
            Some(version) => client
                .set_data(&self.path, &data, Some(version))
                .await
                .map(drop),
            None => {
                if let Some(parent) = crate::node::path::parent(&self.path).filter(|p| *p != "/") {
                    ensure_path(client, parent).await?;
                }
                client
                    .create(&self.path, &data, &CreateOptions::persistent())
                    .await
                    .map(drop)
            }
        };
        match written {
            Ok(()) => Ok(true),
            Err(e) if e == ErrorKind::BadVersion || e == ErrorKind::NodeExists => Ok(false),
            Err(e) if e == ErrorKind::NoNode => Ok(false),
            Err(e) if e.is_outcome_unknown() && e.is_retryable() => {
                self.lost_reply(client, current, &e).await
            }
            // Not applied: the caller reads again and decides.
            Err(e) if e.is_retryable() => {
                crate::session::wait::reconnected_after(client, &e).await?;
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The reply of a write was lost: whether it was applied shows only if the node did not
    /// move (then it was not).
    async fn lost_reply(
        &self,
        client: &Client,
        current: &Current,
        failed: &zookeeper_tokio::Error,
    ) -> Result<bool> {
        crate::session::wait::reconnected_after(client, failed).await?;
        let now = self.read(client).await?;
        if now.version == current.version {
            return Ok(false);
        }
        Err(Error::Indeterminate {
            path: self.path.clone(),
        })
    }
}
