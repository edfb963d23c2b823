//! Memory a client holds for what callers send: bounded by what is in flight, and given back
//! after a burst. These tests count the process's allocations, so they run one at a time, in
//! a binary of their own.

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

/// One test at a time: each reads the counts of the whole process.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// 3,000 segments: its ancestors' paths hold 9 MB together, and their creates were all encoded
/// and queued at once (1.3 GB at 20,000 segments). Now a window of them is.
#[tokio::test]
async fn a_deep_path_is_created_with_its_parents_in_bounded_memory() {
    let _alone = ONE_AT_A_TIME.lock().await;
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

/// 100 writes of 100 KB at once: the buffers they went through grew to hold them all, and kept
/// that size (about twice the burst) for the life of the session. They are given back once the
/// burst is written.
#[tokio::test]
async fn a_burst_of_large_writes_leaves_its_memory_behind() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let connect = common::connect_string("write_burst");
    let c = Client::connect(&connect).await.unwrap();
    c.create("/n", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let data = vec![7u8; 100 * 1024];
    c.set_data("/n", &data, None).await.unwrap();
    let before = NOW.load(Ordering::Relaxed);
    let writes: Vec<_> = (0..100).map(|_| c.set_data("/n", &data, None)).collect();
    for write in writes {
        common::within("a write", write).await.unwrap();
    }
    let held = NOW.load(Ordering::Relaxed).saturating_sub(before);
    assert!(held < 4 << 20, "{held} bytes held after the burst");
}
