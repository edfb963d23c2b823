//! What the client costs: CPU time of the calling thread. Tests run the client on a
//! current-thread runtime, so the session task runs on the test's own thread, while the scripted
//! server has a thread of its own.

use std::time::Duration;

/// CPU time this thread has used so far (Linux: `/proc/thread-self/schedstat`, in ns).
pub fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("/proc/thread-self/schedstat (Linux) to measure CPU time");
    let nanos: u64 = stat
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("schedstat starts with the time on CPU");
    Duration::from_nanos(nanos)
}
