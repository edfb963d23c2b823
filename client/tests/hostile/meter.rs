//! What the client costs: CPU time and memory held by the calling thread. Tests run the client on a
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

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the bytes each thread holds: what a thread allocated minus what it freed. Freeing
/// on another thread what this one allocated moves the count between them, which the client
/// under test never does to a noticeable extent (its task runs on the test's thread).
struct Counting;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn count(delta: i64) {
    // `try_with`: the thread may be tearing its locals down.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are plain
// thread-locals without destructors, so touching them never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as i64);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size() as i64);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's pointer, layout and size.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        new
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The bytes this thread holds now.
pub fn live_bytes() -> i64 {
    LIVE.with(Cell::get)
}

/// Watches this thread's memory from now on.
pub struct MemoryWatch {
    start: i64,
}

impl MemoryWatch {
    pub fn start() -> MemoryWatch {
        let start = live_bytes();
        PEAK.with(|peak| peak.set(start));
        MemoryWatch { start }
    }

    /// The most this thread held at once since the start, beyond what it held then.
    pub fn peak_growth(&self) -> i64 {
        PEAK.with(Cell::get) - self.start
    }
}
