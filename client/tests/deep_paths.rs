//! A path of thousands of segments created with its parents, in memory bounded by the path's
//! length rather than by its square. Alone in its binary: it counts the process's allocations.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use zookeeper_tokio::{Client, CreateOptions};

/// The system allocator, counting the bytes allocated now and the most allocated at once.
struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = NOW.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// 3,000 segments: its ancestors' paths hold 9 MB together, and their creates were all encoded
/// and queued at once (1.3 GB at 20,000 segments). Now a window of them is.
#[tokio::test]
async fn a_deep_path_is_created_with_its_parents_in_bounded_memory() {
    let connect = common::connect_string("deep_path");
    let c = Client::connect(&connect).await.unwrap();
    let path = "/a".repeat(3_000);
    let before = NOW.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let (created, _) = common::within(
        "the deep create",
        c.create(&path, b"x", &CreateOptions::persistent().creating_parents()),
    )
    .await
    .unwrap();
    assert_eq!(created, path);
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert!(peak < 4 << 20, "{peak} bytes at once");
    assert_eq!(&c.get_data(&path).await.unwrap().0[..], b"x");
}
