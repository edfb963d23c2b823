//! Our LeaderSelector beside Curator's on one path: they never lead at once.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::peers::Peer;
use common::resource::prepare;
use common::{bounded, chroot_connect, clients};
use tokio::sync::mpsc;
use zookeeper_recipes::{LeaderContext, LeaderSelector};
use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

const TERMS: usize = 12;
const HOLD: Duration = Duration::from_millis(5);

/// One term of our work inside the checked resource (the peers' protocol, see
/// `common::resource`), counting overlaps instead of panicking: a panic would only end the
/// term, and the selector would lead again.
async fn lead_once(c: &Client, tag: &str, violations: &AtomicUsize) {
    match c
        .create("/res/w", tag.as_bytes(), &CreateOptions::ephemeral())
        .await
    {
        Ok(_) => {}
        Err(e) if e == ErrorKind::NodeExists => {
            violations.fetch_add(1, Ordering::SeqCst);
            return;
        }
        Err(e) => panic!("enter: {e}"),
    }
    if c.get_children("/res").await.unwrap().0 != ["w"] {
        violations.fetch_add(1, Ordering::SeqCst);
    }
    tokio::time::sleep(HOLD).await;
    if c.delete("/res/w", None).await.is_err() {
        violations.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_selector_and_ours_never_lead_at_once() {
    let connect = chroot_connect("interop_curator_selector");
    let cs = clients(&connect, 2).await;
    prepare(&cs[0], "/res").await;
    let mut curator = Peer::curator_contention(&connect).await;
    curator
        .send(&format!("select /election java {TERMS} 5 /res"))
        .await;

    let violations = Arc::new(AtomicUsize::new(0));
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let mut selectors = Vec::new();
    for (i, c) in cs.iter().enumerate() {
        let (c2, violations, done_tx) = (c.clone(), violations.clone(), done_tx.clone());
        let selector = LeaderSelector::builder(c, "/election")
            .id(&format!("rust-{i}"))
            .auto_requeue(true)
            .start(move |ctx: LeaderContext| {
                let (c, violations, done_tx) = (c2.clone(), violations.clone(), done_tx.clone());
                async move {
                    let tag = format!("rust-{i}-{}", ctx.term());
                    lead_once(&c, &tag, &violations).await;
                    if ctx.term() == TERMS as u64 {
                        let _ = done_tx.send(i);
                    }
                }
            })
            .unwrap();
        selectors.push(selector);
    }
    // Curator's participants are ours to read, and ours Curator's (they share a layout).
    bounded("curator's participant seen", async {
        loop {
            let parts = selectors[0].participants().await.unwrap();
            if parts.iter().any(|p| p.id == "java") {
                assert!(parts.iter().all(|p| p.node.contains("-lock-")));
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;

    for _ in 0..cs.len() {
        bounded("our terms", done.recv()).await.unwrap();
    }
    curator.expect(&format!("done {TERMS}")).await;
    let curator_terms = curator
        .seen
        .iter()
        .filter(|l| l.starts_with("lead "))
        .count();
    assert_eq!(curator_terms, TERMS);
    assert_eq!(violations.load(Ordering::SeqCst), 0, "two leaders at once");
    for s in &selectors {
        s.close().await;
    }
}
