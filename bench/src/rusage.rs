//! CPU time of this process, and of single threads, so that CPU per operation can be charged
//! to the client alone even when a scripted server runs inside the same process.

use std::time::Duration;

/// User + system CPU time consumed so far by the whole process (all threads).
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_SELF) failed");
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
}

/// A handle on one thread's CPU clock, readable from any thread.
#[derive(Clone, Copy, Debug)]
pub struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    /// The clock of the calling thread.
    pub fn current() -> ThreadClock {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: pthread_self is always valid for the calling thread.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        assert_eq!(rc, 0, "pthread_getcpuclockid failed");
        ThreadClock(clock)
    }

    /// CPU time the thread has consumed so far (zero once the thread has exited).
    pub fn elapsed(self) -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime only writes into `ts`.
        let rc = unsafe { libc::clock_gettime(self.0, &mut ts) };
        if rc != 0 {
            return Duration::ZERO;
        }
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}

/// CPU time of the process minus the CPU time of the excluded threads (the in-process scripted
/// server), and of those threads, sampled at the start and at the end of a measurement.
pub struct CpuMeter {
    excluded: Vec<ThreadClock>,
    start_ours: Duration,
    start_excluded: Duration,
}

/// CPU time spent during a measurement.
pub struct CpuSpent {
    /// Everything in the process but the excluded threads.
    pub ours: Duration,
    /// The excluded threads.
    pub excluded: Duration,
}

impl CpuMeter {
    pub fn start(excluded: &[ThreadClock]) -> CpuMeter {
        let excluded = excluded.to_vec();
        let (start_ours, start_excluded) = Self::sample(&excluded);
        CpuMeter {
            excluded,
            start_ours,
            start_excluded,
        }
    }

    fn sample(excluded: &[ThreadClock]) -> (Duration, Duration) {
        let others: Duration = excluded.iter().map(|c| c.elapsed()).sum();
        (process_cpu().saturating_sub(others), others)
    }

    pub fn stop(self) -> CpuSpent {
        let (ours, excluded) = Self::sample(&self.excluded);
        CpuSpent {
            ours: ours.saturating_sub(self.start_ours),
            excluded: excluded.saturating_sub(self.start_excluded),
        }
    }
}
