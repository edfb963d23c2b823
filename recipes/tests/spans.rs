//! The recipes' operations as parent spans (feature `tracing-spans`): the requests an
//! acquisition, a release, a latch's join and election, and a selector's term make are
//! children of the operation's span, read back by the testkit's capturing subscriber.

mod common;

use common::{bounded, chroot_connect, client};
use tracing::Instrument;
use zookeeper_recipes::{LeaderContext, LeaderLatch, LeaderSelector, Mutex};
use zookeeper_testkit::spans::{capture, Seen};

/// The request spans (those with `db.operation.name`) under a span named `parent`.
fn requests_under(spans: &[Seen], parent: &str) -> Vec<&'static str> {
    spans
        .iter()
        .filter(|s| s.parent == Some(parent) && s.field("db.operation.name").is_some())
        .map(|s| s.name)
        .collect()
}

#[tokio::test]
async fn an_acquisition_and_a_release_are_the_parents_of_their_requests() {
    let (spans, _guard) = capture();
    let c = client(&chroot_connect("spans_mutex")).await;
    let m = Mutex::new(&c, "/lock").unwrap();
    async {
        let guard = bounded("acquire", m.acquire()).await.unwrap();
        bounded("release", guard.release()).await.unwrap();
    }
    .instrument(tracing::info_span!("caller"))
    .await;

    let acquire = spans.named("acquire");
    assert_eq!(acquire.len(), 1, "{acquire:?}");
    assert_eq!(acquire[0].parent, Some("caller"));
    assert_eq!(acquire[0].field("zookeeper.recipe"), Some("mutex"));
    assert_eq!(acquire[0].field("zookeeper.path"), Some("/lock"));
    assert!(acquire[0].closed);
    let under = requests_under(&spans.all(), "acquire");
    assert!(under.contains(&"create"), "{under:?}");
    assert!(under.contains(&"get_children"), "{under:?}");

    let release = spans.named("release");
    assert_eq!(release.len(), 1, "{release:?}");
    assert_eq!(release[0].parent, Some("caller"));
    assert!(release[0]
        .field("zookeeper.path")
        .unwrap()
        .starts_with("/lock/"));
    assert_eq!(requests_under(&spans.all(), "release"), ["delete"]);
}

#[tokio::test]
async fn a_latch_joins_and_is_elected_under_spans_of_its_own() {
    let (spans, _guard) = capture();
    let c = client(&chroot_connect("spans_latch")).await;
    let latch = bounded("start", LeaderLatch::start(&c, "/election", "a"))
        .await
        .unwrap();
    bounded("leadership", latch.await_leadership())
        .await
        .unwrap();
    let join = spans.named("join");
    assert_eq!(join.len(), 1, "{join:?}");
    assert_eq!(join[0].field("zookeeper.recipe"), Some("leader_latch"));
    assert!(requests_under(&spans.all(), "join").contains(&"create"));
    // The election runs in a task of its own: its span is a root.
    let elect = spans.named("elect");
    assert!(!elect.is_empty());
    assert_eq!(elect[0].parent, None);
    let under = requests_under(&spans.all(), "elect");
    assert!(under.contains(&"get_children"), "{under:?}");
    latch.resign().await.unwrap();
}

#[tokio::test]
async fn a_selectors_term_is_the_parent_of_the_leaders_work() {
    let (spans, _guard) = capture();
    let c = client(&chroot_connect("spans_selector")).await;
    let (led, mut leading) = tokio::sync::mpsc::unbounded_channel();
    let selector = LeaderSelector::builder(&c, "/election")
        .start(move |ctx: LeaderContext| {
            let led = led.clone();
            async move {
                ctx.client().exists("/").await.unwrap();
                let _ = led.send(());
                std::future::pending::<()>().await;
            }
        })
        .unwrap();
    bounded("leading", leading.recv()).await.unwrap();
    let acquire = spans.named("acquire");
    assert_eq!(
        acquire[0].field("zookeeper.recipe"),
        Some("leader_selector")
    );
    let lead = spans.named("lead");
    assert_eq!(lead.len(), 1, "{lead:?}");
    assert_eq!(lead[0].field("zookeeper.path"), Some("/election"));
    assert_eq!(requests_under(&spans.all(), "lead"), ["exists"]);
    selector.close().await;
}
