//! Live heap bytes of this process, from glibc's allocator statistics: no counting allocator
//! in the way of the timed workloads, and exact enough to charge memory per waiter or watch.

/// Bytes currently allocated through malloc (arena chunks in use plus mmapped chunks).
pub fn live_bytes() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's own statistics.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as u64
}
