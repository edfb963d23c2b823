//! One order with the peers. On hand-made listings (sequences wrapped past 2^31, foreign
//! children, kazoo names among Curator ones and the reverse), each layout orders contenders
//! exactly as its peer's own sorting code does: Curator's, run in the JVM
//! (`tests/peers/CuratorOrder.java`), and kazoo's, run in python3
//! (`tests/peers/kazoo_order.py`), on the same listing. Where the sequences wrapped, the peers
//! grant a newcomer beside the holder; ours refuses to grant at all. A server reaches the wrap
//! only after 2^31 creations under one parent, so the names are written by hand.

mod common;

use common::peers::{curator_order, kazoo_order};
use common::{bounded, chroot_connect, client};
use zookeeper_recipes::{
    leader_participants, Error, Holding, Layout, LeaderLatch, LossReason, Mutex, ReadWriteLock,
};
use zookeeper_tokio::{Client, CreateOptions};

const HEX_A: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const HEX_B: &str = "f9e8d7c6b5a4938271605f4e3d2c1b0a";
const HEX_C: &str = "00000000000000000000000000000000";

/// Creates each name under `dir` (persistent: they stand for contenders that stay).
async fn make(c: &Client, dir: &str, names: &[String]) {
    c.create(dir, b"", &CreateOptions::persistent())
        .await
        .unwrap();
    for name in names {
        c.create(
            &format!("{dir}/{name}"),
            name.as_bytes(),
            &CreateOptions::persistent(),
        )
        .await
        .unwrap();
    }
}

/// The children of `dir` in the server's listing order.
async fn listing(c: &Client, dir: &str) -> Vec<String> {
    c.get_children(dir).await.unwrap().0
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn curator_names(marker: &str) -> Vec<String> {
    let mut names: Vec<String> = [
        "2147483645",
        "2147483647",
        "-2147483648",
        "-2147483647",
        "-1000000000",
        "-999999999",
        "-000000001",
        "0000000000",
    ]
    .iter()
    .enumerate()
    .map(|(i, seq)| format!("_c_{i:02}-{marker}{seq}"))
    .collect();
    names.extend(owned(&[
        "0000000003",
        "leases",
        &format!("{HEX_A}__lock__0000000001"),
        &format!("{marker}{marker}0000000002"),
    ]));
    names
}

fn kazoo_names() -> Vec<String> {
    owned(&[
        &format!("{HEX_A}__lock__2147483646"),
        &format!("{HEX_B}__lock__-2147483648"),
        &format!("{HEX_C}__lock__-2147483647"),
        &format!("{HEX_A}__rlock__2147483647"),
        &format!("{HEX_B}__rlock__-1000000000"),
        &format!("{HEX_C}__lock__-999999999"),
        &format!("{HEX_A}__lock__0000000001"),
        "_c_00-lock-0000000000",
        "_c_01-__WRIT__0000000004",
        "junk__lock__12",
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_layout_orders_contenders_as_curators_own_code() {
    let c = client(&chroot_connect("order_curator")).await;

    make(&c, "/mutex", &curator_names("lock-")).await;
    let ours = Mutex::new(&c, "/mutex")
        .unwrap()
        .participants()
        .await
        .unwrap();
    assert_eq!(
        ours,
        curator_order("mutex", &listing(&c, "/mutex").await).await
    );
    // The peer's order, wrap and all: a wrapped name sorts before the pre-wrap holder.
    assert!(ours[0].contains("lock--"), "{ours:?}");

    let mut rw = curator_names("__READ__");
    rw.extend(
        curator_names("__WRIT__")
            .into_iter()
            .map(|n| format!("w{n}")),
    );
    make(&c, "/rw", &rw).await;
    let ours = ReadWriteLock::new(&c, "/rw")
        .unwrap()
        .participants()
        .await
        .unwrap();
    assert_eq!(ours, curator_order("rw", &listing(&c, "/rw").await).await);

    make(&c, "/latch", &curator_names("latch-")).await;
    let ours: Vec<String> = leader_participants(&c, "/latch")
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.node)
        .collect();
    assert_eq!(
        ours,
        curator_order("latch", &listing(&c, "/latch").await).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_layout_orders_contenders_as_kazoos_own_code() {
    let c = client(&chroot_connect("order_kazoo")).await;
    make(&c, "/k", &kazoo_names()).await;
    let names = listing(&c, "/k").await;

    let ours = Mutex::with_layout(&c, "/k", Layout::Kazoo)
        .unwrap()
        .participants()
        .await
        .unwrap();
    let (theirs, _) = kazoo_order("Lock", &names).await;
    assert_eq!(ours, theirs);
    // kazoo's pattern does not see the 10-character negatives, nor do we.
    assert!(!ours.iter().any(|n| n.ends_with("__lock__-999999999")));

    let ours = ReadWriteLock::with_layout(&c, "/k", Layout::Kazoo)
        .unwrap()
        .participants()
        .await
        .unwrap();
    let (theirs, _) = kazoo_order("WriteLock", &names).await;
    assert_eq!(ours, theirs);
}

/// A holder created just before the wrap, and a newcomer just after it. The peers' own code
/// grants the newcomer beside the holder; ours refuses, with a typed error, and leaves no
/// node behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_listing_is_refused_where_the_peers_grant_beside_the_holder() {
    let c = client(&chroot_connect("order_wrap_refused")).await;

    // Curator's layout.
    let holder = "_c_00-lock-2147483647".to_owned();
    let newcomer = "_c_01-lock--2147483648".to_owned();
    make(&c, "/c", &[holder.clone(), newcomer.clone()]).await;
    let theirs = curator_order("mutex", &listing(&c, "/c").await).await;
    assert_eq!(theirs[0], newcomer, "Curator grants the newcomer (index 0)");
    let m = Mutex::new(&c, "/c").unwrap();
    let refused = bounded("refusal", m.acquire()).await;
    assert!(
        matches!(&refused, Err(Error::SequenceWrapped { path, .. }) if path == "/c"),
        "{refused:?}"
    );
    assert!(matches!(
        bounded("try", m.try_acquire()).await,
        Err(Error::SequenceWrapped { .. })
    ));
    make(
        &c,
        "/l",
        &owned(&["_c_00-latch-2147483647", "_c_01-latch--2147483648"]),
    )
    .await;
    let latch = LeaderLatch::start(&c, "/l", "ours").await.unwrap();
    let end = bounded("latch ends", latch.lost()).await;
    assert_eq!(end, Holding::Lost(LossReason::SequenceWrapped));
    drop(latch);

    // kazoo's layout, with a 10-character negative kazoo itself does not see.
    let holder = format!("{HEX_A}__lock__2147483647");
    let newcomer = format!("{HEX_B}__lock__-2147483648");
    let invisible = format!("{HEX_C}__rlock__-999999999");
    make(
        &c,
        "/k",
        &[holder.clone(), newcomer.clone(), invisible.clone()],
    )
    .await;
    let (order, predecessors) = kazoo_order("WriteLock", &listing(&c, "/k").await).await;
    assert!(!order.contains(&invisible));
    assert!(
        predecessors.contains(&(newcomer.clone(), None)),
        "kazoo grants the newcomer: {predecessors:?}"
    );
    for refused in [
        bounded(
            "mutex",
            Mutex::with_layout(&c, "/k", Layout::Kazoo)
                .unwrap()
                .acquire(),
        )
        .await
        .map(|_| ()),
        bounded(
            "reader",
            ReadWriteLock::with_layout(&c, "/k", Layout::Kazoo)
                .unwrap()
                .read(),
        )
        .await
        .map(|_| ()),
    ] {
        assert!(
            matches!(&refused, Err(Error::SequenceWrapped { .. })),
            "{refused:?}"
        );
    }

    // Refusals leave nothing behind (deletes may finish in the background).
    for (dir, left) in [("/c", 2), ("/k", 3), ("/l", 2)] {
        bounded("our nodes gone", async {
            loop {
                let (children, _, changed) = c.get_children_and_watch(dir).await.unwrap();
                if children.len() == left {
                    return;
                }
                changed.await;
            }
        })
        .await;
    }
}
