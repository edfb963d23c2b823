//! What someone chasing a two-holders incident can read: `info`/`warn` lines, each naming
//! the lock path, our node and the fencing token, for a grant after a wait, a suspension, the
//! lock held again after a reconnect, a loss with its reason, and leadership gained and lost.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex as StdMutex};

use common::{bounce_connection, bounded, client};
use tracing_subscriber::fmt::MakeWriter;
use zookeeper_recipes::{Holding, LeaderLatch, LossReason, Mutex};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};

/// Everything logged, as text.
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

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Captured {
    /// The line that says `message`, checked to name `fields`. A transition is published
    /// just before its line is written, so the line may come a moment after the state.
    async fn line(&self, message: &str, fields: &[&str]) -> String {
        let line = bounded(&format!("{message:?} logged"), async {
            loop {
                let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
                if let Some(line) = text.lines().find(|l| l.contains(message)) {
                    return line.to_owned();
                }
                tokio::task::yield_now().await;
            }
        })
        .await;
        for field in fields {
            assert!(line.contains(field), "{field:?} missing from {line:?}");
        }
        line
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_and_leadership_changes_are_logged_with_path_node_and_token() {
    let logs = Captured::default();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .finish(),
    )
    .unwrap();
    let chroot = chroot_for("observability");
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let a = client(&format!("{}{chroot}", proxy.connect_string())).await;
    let b = client(&shared_server().connect_string_with_chroot(&chroot)).await;

    // A grant after a wait.
    let first = bounded("b holds", Mutex::new(&b, "/lock").unwrap().acquire())
        .await
        .unwrap();
    let waiting = Mutex::new(&a, "/lock").unwrap();
    let waiting = tokio::spawn(async move { waiting.acquire().await });
    let watched = format!("{chroot}{}", first.path());
    bounded("a watching b's node", async {
        while !shared_server()
            .wchc()
            .await
            .unwrap()
            .values()
            .flatten()
            .any(|p| *p == watched)
        {
            tokio::task::yield_now().await;
        }
    })
    .await;
    first.release().await.unwrap();
    let g = bounded("a holds", waiting).await.unwrap().unwrap();
    let node = g.path().rsplit('/').next().unwrap().to_owned();
    let token = g.fencing_token().to_string();
    let ours = [
        "path=/lock".to_owned(),
        format!("node={node}"),
        format!("token={token}"),
    ];
    let ours: Vec<&str> = ours.iter().map(String::as_str).collect();
    logs.line("acquired after a wait", &ours).await;

    // Suspended, then held again.
    let mut states = g.state_changes();
    bounce_connection(&a, &proxy).await;
    while bounded("states", states.next()).await != Some(Holding::Suspended) {}
    while bounded("states", states.next()).await != Some(Holding::Held) {}
    logs.line("lock suspended", &ours).await;
    logs.line("lock held again", &ours).await;

    // Lost, with its reason.
    b.delete(g.path(), None).await.unwrap();
    assert_eq!(
        bounded("lost", g.lost()).await,
        Holding::Lost(LossReason::NodeDeleted)
    );
    assert!(logs
        .line("lock lost", &ours)
        .await
        .contains("deleted by someone else"));

    // Leadership gained and lost.
    let latch = LeaderLatch::start(&a, "/election", "a").await.unwrap();
    bounded("leads", latch.await_leadership()).await.unwrap();
    let node = latch.node().rsplit('/').next().unwrap().to_owned();
    let fields = [
        "path=/election".to_owned(),
        format!("node={node}"),
        format!("token={}", latch.fencing_token()),
    ];
    let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
    logs.line("leadership gained", &fields).await;
    b.delete(&latch.node(), None).await.unwrap();
    assert_eq!(
        bounded("leadership lost", latch.lost()).await,
        Holding::Lost(LossReason::NodeDeleted)
    );
    assert!(logs
        .line("leadership lost", &fields)
        .await
        .contains("deleted by someone else"));
}
