//! Where the session task runs, so that a call can tell whether the session will keep its
//! deadline.
//!
//! The session task answers a request with `Timeout` once its deadline passes (see the
//! session's `deadlines`), which spares each call a timer of its own — a quarter of a
//! request's CPU when the client is the bottleneck. That is a bound only for a caller whose
//! own progress implies the session task's: a caller on the session's runtime. A caller
//! elsewhere (another runtime, a thread blocking on the call) would wait forever if the
//! session's runtime stopped being driven, so it keeps its own timer as before.
//!
//! - Current-thread runtime: the caller is on it when the runtime it runs on has the session
//!   runtime's id (a thread may drive several current-thread runtimes in turn, so the thread
//!   alone says nothing).
//! - Multi-thread runtime: its worker threads belong to it for their whole life, so a caller
//!   on a thread where the session task has run is on that runtime. The task records each
//!   thread it runs on (a handful: the workers), which costs one comparison per turn.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::runtime::{Handle, RuntimeFlavor};

/// Threads of a multi-thread runtime remembered; past this (more workers than that have run
/// the task), callers on the others keep their own timers.
const MAX_THREADS: usize = 32;

/// The session runtime, as seen by the calls.
#[derive(Debug)]
pub(crate) struct SessionHome {
    runtime: Runtime,
    /// Tokens of the threads the session task has run on (multi-thread runtime only).
    threads: [AtomicU64; MAX_THREADS],
    recorded: AtomicUsize,
}

#[derive(Debug)]
enum Runtime {
    CurrentThread(tokio::runtime::Id),
    MultiThread,
    /// Not spawned on a tokio runtime (tests): every call keeps its own timer.
    Unknown,
}

impl SessionHome {
    /// The home of a session task about to be spawned on the current runtime.
    pub fn current() -> SessionHome {
        let runtime = match Handle::try_current() {
            Ok(handle) => match handle.runtime_flavor() {
                RuntimeFlavor::CurrentThread => Runtime::CurrentThread(handle.id()),
                RuntimeFlavor::MultiThread => Runtime::MultiThread,
                _ => Runtime::Unknown,
            },
            Err(_) => Runtime::Unknown,
        };
        SessionHome {
            runtime,
            threads: std::array::from_fn(|_| AtomicU64::new(0)),
            recorded: AtomicUsize::new(0),
        }
    }

    /// The session task runs on the calling thread now (the task alone calls this).
    pub fn record_thread(&self, token: u64) {
        if !matches!(self.runtime, Runtime::MultiThread) {
            return;
        }
        let n = self.recorded.load(Ordering::Relaxed);
        if n >= MAX_THREADS
            || self.threads[..n]
                .iter()
                .any(|t| t.load(Ordering::Relaxed) == token)
        {
            return;
        }
        // One writer: store the token, then publish it by the count.
        self.threads[n].store(token, Ordering::Relaxed);
        self.recorded.store(n + 1, Ordering::Release);
    }

    /// Whether a caller on this thread now is on the session's runtime: if so, the session
    /// task runs whenever the caller does, and its deadline bounds the call.
    pub fn is_here(&self) -> bool {
        match &self.runtime {
            Runtime::CurrentThread(id) => Handle::try_current().is_ok_and(|h| h.id() == *id),
            Runtime::MultiThread => {
                let token = thread_token();
                let n = self.recorded.load(Ordering::Acquire);
                self.threads[..n]
                    .iter()
                    .any(|t| t.load(Ordering::Relaxed) == token)
            }
            Runtime::Unknown => false,
        }
    }
}

/// A number for the calling thread, unique for the life of the process (never 0).
pub(crate) fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: Cell<u64> = const { Cell::new(0) };
    }
    TOKEN.with(|token| match token.get() {
        0 => {
            let t = NEXT.fetch_add(1, Ordering::Relaxed);
            token.set(t);
            t
        }
        t => t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_current_thread_home_knows_its_runtime_and_no_other() {
        let home_rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let home = home_rt.block_on(async { SessionHome::current() });
        assert!(home_rt.block_on(async { home.is_here() }));
        // The same thread, driving another runtime: the session's is not being driven.
        let other = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(!other.block_on(async { home.is_here() }));
        assert!(!home.is_here(), "outside any runtime");
    }

    #[test]
    fn a_multi_thread_home_knows_the_threads_its_task_ran_on() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let home = std::sync::Arc::new(rt.block_on(async { SessionHome::current() }));
        let h = home.clone();
        let (on_worker, token) = rt.block_on(async move {
            tokio::spawn(async move {
                h.record_thread(thread_token());
                (h.is_here(), thread_token())
            })
            .await
            .unwrap()
        });
        assert!(on_worker);
        // The thread blocking on the runtime is not one of its workers.
        assert_ne!(token, thread_token());
        assert!(!home.is_here());
        // Recording is idempotent.
        home.record_thread(token);
        assert_eq!(home.recorded.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn thread_tokens_differ_between_threads() {
        let here = thread_token();
        assert_eq!(here, thread_token());
        let there = std::thread::spawn(thread_token).join().unwrap();
        assert_ne!(here, there);
    }
}
