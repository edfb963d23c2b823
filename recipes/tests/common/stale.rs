//! A compare-and-set made stale for certain, instead of by a race the scheduler may not run.

use zookeeper_recipes::{AtomicValue, DistributedAtomicLong, PromotedToLock, RetryPolicy};
use zookeeper_testkit::{shared_server, FrameEvent, Proxy};
use zookeeper_tokio::Client;

use super::{bounded, client};

const GET_DATA: i32 = 4;
const SET_DATA: i32 = 5;

/// One increment of the long at `path` (in `chroot` of the shared server) whose optimistic try
/// is stale for certain, so that it goes on to `promoted`'s lock: from a client behind a proxy
/// that holds the server's replies back while the increment's read, then a write of the same
/// value (which only moves the version on), are sent on that one session. The server answers
/// a session's requests in order, so the read sees the version before the write, and the
/// increment's compare-and-set at that version is refused. There is no optimistic retry: the
/// next try is under the lock. `observer` reads the value written back, so nobody else may
/// write the long meanwhile: the write would be lost.
pub async fn stale_increment(
    observer: &Client,
    chroot: &str,
    path: &str,
    promoted: PromotedToLock,
) -> AtomicValue<i64> {
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let behind = client(&format!("{}{chroot}", proxy.connect_string())).await;
    let stale = DistributedAtomicLong::new(&behind, path, RetryPolicy::never())
        .unwrap()
        .promote_to_lock(promoted);
    proxy.record_frames(true);
    proxy.hold_replies(true);
    let incrementing = tokio::spawn(async move { stale.increment().await });
    bounded(
        "the increment's read sent",
        proxy.wait_for_frames(sent(GET_DATA)),
    )
    .await;
    let (same, _) = observer.get_data(path).await.unwrap();
    let (bumper, bumped) = (behind.clone(), path.to_owned());
    let bump = tokio::spawn(async move { bumper.set_data(&bumped, &same, None).await });
    bounded("the bump sent", proxy.wait_for_frames(sent(SET_DATA))).await;
    proxy.hold_replies(false);
    bounded("the bump", bump).await.unwrap().unwrap();
    bounded("the stale increment", incrementing)
        .await
        .unwrap()
        .unwrap()
}

/// Whether a request with `opcode` went to the server.
fn sent(opcode: i32) -> impl FnMut(&[FrameEvent]) -> bool {
    move |log| {
        log.iter()
            .any(|e| matches!(*e, FrameEvent::ClientToServer { opcode: o, .. } if o == opcode))
    }
}
