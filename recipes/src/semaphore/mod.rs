//! The counting semaphore ([`Semaphore`], its [`Lease`]) and the mutex made of it
//! ([`SemaphoreMutex`]).
//!
//! A folder of its own, above the locks and the counters: the semaphore takes a [`Mutex`]
//! around its leases and may take its count from a [`SharedCount`], while a counter may take a
//! lock itself (`DistributedAtomicLong`'s promotion).
//!
//! [`Mutex`]: crate::Mutex
//! [`SharedCount`]: crate::SharedCount

pub(crate) mod counting;
pub(crate) mod mutex;
mod standalone;

pub use counting::{Lease, Semaphore};
pub use mutex::SemaphoreMutex;
