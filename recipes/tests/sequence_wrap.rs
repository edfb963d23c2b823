//! Sequence counters near their wrap, against a real server whose counter is set there (the
//! testkit raises it in the stopped server's data: 2^31 creates would take days): the recipes
//! warn past the threshold, refuse once wrapped, and an idle parent recycled in one
//! transaction starts again at 0, keeping its kind; a busy one is left alone.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{bounded, client_with_session, wait_empty};
use zookeeper_recipes::{
    next_sequence, recycle_idle_parent, Error, Layout, Mutex, ParentKind, Recycled,
    SEQUENCE_WARNING_THRESHOLD,
};
use zookeeper_testkit::ZkServer;
use zookeeper_tokio::CreateOptions;

/// What the recipes logged, for the warnings.
#[derive(Clone, Default)]
struct Captured(Arc<StdMutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn take(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
    }
}

// Where the test seeds the counter: past the warning threshold.
const _: () = assert!(i32::MAX - 2 >= SEQUENCE_WARNING_THRESHOLD);

fn sequence_of(node: &str) -> i32 {
    let at = node.rfind("__lock__").unwrap() + "__lock__".len();
    node[at..].parse().unwrap()
}

// A current-thread runtime: the recipe's creates run on this thread, under the capturing
// subscriber set for it.
#[tokio::test]
async fn a_counter_near_the_wrap_warns_then_refuses_until_the_idle_parent_is_recycled() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let _capturing = tracing::subscriber::set_default(subscriber);

    // The server sweeps empty containers every second, so that the recycled one is seen to
    // be a container within the test's bound.
    let server = ZkServer::builder()
        .system_property("znode.container.checkIntervalMs", "1000")
        .start()
        .await
        .unwrap();
    // A session that outlives the restart the seeding takes.
    let c = client_with_session(&server.connect_string(), Duration::from_secs(60)).await;
    // kazoo's parents are persistent: the server never removes them, nothing restarts their
    // counter but recycling.
    c.create("/locks", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.create("/locks/jobs", b"kept", &CreateOptions::persistent())
        .await
        .unwrap();
    let mutex = Mutex::with_layout(&c, "/locks/jobs", Layout::Kazoo).unwrap();
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(sequence_of(guard.path()), 0);
    guard.release().await.unwrap();
    // The release's delete is applied before the server stops (a read on the same session
    // comes after it), so that no lock node of ours is in the seeded data.
    assert!(c.get_children("/locks/jobs").await.unwrap().0.is_empty());
    assert!(
        !logs.take().contains("wrap"),
        "no warning far from the wrap"
    );

    bounded(
        "seeding the counter",
        server.set_sequence_counter("/locks/jobs", i32::MAX - 2),
    )
    .await
    .unwrap();
    // A new session: whether the old one outlives the restart is not what this tests.
    drop(mutex);
    let c = client_with_session(&server.connect_string(), Duration::from_secs(60)).await;
    let mutex = Mutex::with_layout(&c, "/locks/jobs", Layout::Kazoo).unwrap();
    let (_, stat) = c.get_data("/locks/jobs").await.unwrap();
    assert_eq!(next_sequence(&stat), i32::MAX - 2);

    // Past the threshold: granted, with a warning (once a minute per parent).
    for expected in [i32::MAX - 2, i32::MAX - 1] {
        let guard = bounded("near the wrap", mutex.acquire()).await.unwrap();
        assert_eq!(sequence_of(guard.path()), expected);
        guard.release().await.unwrap();
    }
    let warned = logs.take();
    assert_eq!(
        warned.matches("approaches its wrap").count(),
        1,
        "one warning per parent and minute: {warned}"
    );
    assert!(warned.contains("/locks/jobs") && warned.contains("recycle_idle_parent"));

    // The counter's last number, which this server then hands out again and again: refused,
    // each time, and the refused nodes are gone.
    for _ in 0..2 {
        match bounded("exhausted", mutex.acquire()).await {
            Err(Error::SequenceWrapped { child, .. }) => assert!(
                child.ends_with("2147483647") || child.ends_with("-2147483648"),
                "{child}"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(wait_empty(&c, "/locks/jobs").await.is_empty());
    }
    let (data, _) = c.get_data("/locks/jobs").await.unwrap();
    assert_eq!(data.as_ref(), b"kept");

    // Busy while anyone is queued: a plain node under it stands for a contender.
    c.create("/locks/jobs/someone", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    assert_eq!(
        recycle_idle_parent(&c, "/locks/jobs", ParentKind::Persistent)
            .await
            .unwrap(),
        Recycled::Busy { children: 1 }
    );
    c.delete("/locks/jobs/someone", None).await.unwrap();

    // Idle: recycled, same data; the counter starts again and the lock grants.
    assert!(matches!(
        recycle_idle_parent(&c, "/locks/jobs", ParentKind::Persistent)
            .await
            .unwrap(),
        Recycled::Recycled { .. }
    ));
    let (data, stat) = c.get_data("/locks/jobs").await.unwrap();
    assert_eq!(
        (data.as_ref(), stat.ephemeral_owner, next_sequence(&stat)),
        (&b"kept"[..], 0, 0)
    );
    let guard = bounded("after recycling", mutex.acquire()).await.unwrap();
    assert_eq!(sequence_of(guard.path()), 0);
    guard.release().await.unwrap();

    // A container (Curator's parents, and ours) comes back a container: one never used is
    // no candidate for the server's sweep; once a child came and went, the sweep removes it.
    c.create("/locks/curator", b"", &CreateOptions::container())
        .await
        .unwrap();
    assert_eq!(
        recycle_idle_parent(&c, "/locks/curator", ParentKind::Container)
            .await
            .unwrap(),
        Recycled::Recycled { was: 0 }
    );
    c.create("/locks/curator/x", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    c.delete("/locks/curator/x", None).await.unwrap();
    bounded("the sweep removes the container", async {
        loop {
            match c.exists_and_watch("/locks/curator").await.unwrap() {
                (None, _) => break,
                (Some(_), gone) => {
                    gone.await;
                }
            }
        }
    })
    .await;
    assert_eq!(
        recycle_idle_parent(&c, "/locks/none", ParentKind::Container)
            .await
            .unwrap(),
        Recycled::Missing
    );
}
