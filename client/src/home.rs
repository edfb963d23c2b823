//! Where the session task runs, so that a call can tell whether the session will keep its
//! deadline.
//!
//! The session task answers a request with `Timeout` once its deadline passes (see the
//! session's `deadlines`), which spares each call a timer of its own — a quarter of a
//! request's CPU when the client is the bottleneck. That is a bound only for a caller whose
//! progress implies the session task's, or whose session runtime runs on its own:
//!
//! - Current-thread runtime: driven only inside its `block_on`, so the caller must be on it:
//!   the runtime it runs on has the session runtime's id (a thread may drive several
//!   current-thread runtimes in turn, so the thread alone says nothing). A caller elsewhere
//!   (another runtime, a thread blocking on the call) would wait forever if the session's
//!   runtime stopped being driven, so it keeps its own timer.
//! - Multi-thread runtime: its workers drive it whatever the caller does, so the session
//!   keeps the deadline of a call made on a worker, in the runtime's context from outside its
//!   workers (the body of `#[tokio::main]`, `Runtime::block_on`), or outside any runtime. A
//!   call made on another runtime keeps its own timer, as that runtime's timers would end it
//!   even if the session's runtime were wedged. The workers are told apart cheaply: the task
//!   records each thread it runs on (a handful), which costs one comparison per turn; other
//!   threads ask tokio which runtime they are in.
//!
//! Whether the session task runs on the caller's thread (telling it then costs no wake-up of
//! another thread) is a different question on a current-thread runtime: a thread may be in
//! its context without driving it (one that entered it, as the blocking API's callers do, or
//! one of its blocking-pool threads). So the task records its threads there too, and a
//! caller is the session's only on a thread that ran it, in its runtime.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::runtime::{Handle, RuntimeFlavor};

/// Threads remembered; past this (more threads than that have run the task), callers on the
/// others keep their own timers (multi-thread runtime) or count as elsewhere (current-thread).
const MAX_THREADS: usize = 32;

/// The session runtime, as seen by the calls.
#[derive(Debug)]
pub(crate) struct SessionHome {
    runtime: Runtime,
    /// Tokens of the threads the session task has run on.
    threads: [AtomicU64; MAX_THREADS],
    recorded: AtomicUsize,
}

#[derive(Debug)]
enum Runtime {
    CurrentThread(tokio::runtime::Id),
    MultiThread(tokio::runtime::Id),
    /// Not spawned on a tokio runtime (tests): every call keeps its own timer.
    Unknown,
}

impl SessionHome {
    /// The home of a session task about to be spawned on the current runtime.
    pub fn current() -> SessionHome {
        let runtime = match Handle::try_current() {
            Ok(handle) => match handle.runtime_flavor() {
                RuntimeFlavor::CurrentThread => Runtime::CurrentThread(handle.id()),
                RuntimeFlavor::MultiThread => Runtime::MultiThread(handle.id()),
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
        if matches!(self.runtime, Runtime::Unknown) {
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

    /// Where a call made on this thread now stands, the runtime asked once.
    pub fn caller(&self) -> Caller {
        match &self.runtime {
            Runtime::CurrentThread(id) => {
                let in_runtime = in_runtime(id);
                Caller {
                    session_here: in_runtime && self.ran_here(),
                    keeps_deadline: in_runtime,
                }
            }
            Runtime::MultiThread(id) => {
                let worker = self.ran_here();
                Caller {
                    session_here: worker,
                    keeps_deadline: worker || Handle::try_current().map_or(true, |h| h.id() == *id),
                }
            }
            Runtime::Unknown => Caller {
                session_here: false,
                keeps_deadline: false,
            },
        }
    }
}

/// Where a call stands with respect to the session task; see [`SessionHome::caller`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Caller {
    /// The session task runs on the calling thread (as
    /// [`SessionHome::runs_the_session_here`] says).
    pub session_here: bool,
    /// The session's deadline bounds the call: the session task runs whenever the caller
    /// does, or whatever it does.
    pub keeps_deadline: bool,
}

impl SessionHome {
    /// Whether the session task runs on the calling thread (one of the multi-thread runtime's
    /// workers it ran on, or the thread driving its current-thread runtime, in it): telling
    /// the task costs no wake-up of another thread there.
    pub fn runs_the_session_here(&self) -> bool {
        match &self.runtime {
            Runtime::CurrentThread(id) => in_runtime(id) && self.ran_here(),
            Runtime::MultiThread(_) => self.ran_here(),
            Runtime::Unknown => false,
        }
    }

    /// The calling thread is one the session task ran on.
    fn ran_here(&self) -> bool {
        let token = thread_token();
        let n = self.recorded.load(Ordering::Acquire);
        self.threads[..n]
            .iter()
            .any(|t| t.load(Ordering::Relaxed) == token)
    }
}

/// Whether the calling thread is in the context of the runtime `id` (driving it or not).
fn in_runtime(id: &tokio::runtime::Id) -> bool {
    Handle::try_current().is_ok_and(|h| h.id() == *id)
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
        assert!(home_rt.block_on(async { home.caller().keeps_deadline }));
        // The same thread, driving another runtime: the session's is not being driven.
        let other = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(!other.block_on(async { home.caller().keeps_deadline }));
        assert!(!home.caller().keeps_deadline, "outside any runtime");
    }

    #[test]
    fn a_multi_thread_home_keeps_deadlines_of_calls_from_its_workers_and_its_main_thread() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let home = std::sync::Arc::new(rt.block_on(async { SessionHome::current() }));
        let h = home.clone();
        let (on_worker, token) = rt.block_on(async move {
            tokio::spawn(async move {
                h.record_thread(thread_token());
                (h.caller().keeps_deadline, thread_token())
            })
            .await
            .unwrap()
        });
        assert!(on_worker);
        // The thread blocking on the runtime is not one of its workers, but the workers
        // drive the session whatever it does; as they do for a thread outside any runtime.
        assert_ne!(token, thread_token());
        assert!(rt.block_on(async { home.caller().keeps_deadline }));
        assert!(home.caller().keeps_deadline);
        // Another runtime's caller keeps its own timer.
        let other = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(!other.block_on(async { home.caller().keeps_deadline }));
        // Recording is idempotent.
        home.record_thread(token);
        assert_eq!(home.recorded.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_thread_in_a_current_thread_runtime_without_driving_it_is_not_the_sessions() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let home = std::sync::Arc::new(rt.block_on(async {
            let home = SessionHome::current();
            home.record_thread(thread_token());
            home
        }));
        let driving = rt.block_on(async { home.caller() });
        assert!(driving.session_here && driving.keeps_deadline);
        assert!(rt.block_on(async { home.runs_the_session_here() }));
        // A thread that entered the runtime (as a blocking caller does) is in its context but
        // does not run the session: telling the task would wake another thread. The thread
        // driving the runtime keeps the deadline whatever this one does.
        let handle = rt.handle().clone();
        let h = home.clone();
        let (entered, runs_here) = std::thread::spawn(move || {
            let _entered = handle.enter();
            (h.caller(), h.runs_the_session_here())
        })
        .join()
        .unwrap();
        assert!(!entered.session_here && entered.keeps_deadline);
        assert!(!runs_here);
        // Nor is one of its blocking-pool threads.
        let pool = rt.block_on(async {
            let h = home.clone();
            tokio::task::spawn_blocking(move || h.caller())
                .await
                .unwrap()
        });
        assert!(!pool.session_here);
    }

    #[test]
    fn thread_tokens_differ_between_threads() {
        let here = thread_token();
        assert_eq!(here, thread_token());
        let there = std::thread::spawn(thread_token).join().unwrap();
        assert_ne!(here, there);
    }
}
