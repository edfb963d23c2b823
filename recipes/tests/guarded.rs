//! Writes guarded by the lock: applied while it is ours, refused by the server once it is not.

mod common;

use common::{bounded, chroot_connect, client};
use zookeeper_recipes::{Error, Mutex};
use zookeeper_tokio::{CreateOptions, ErrorKind, MultiOp, MultiResult};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guarded_writes_apply_while_held_and_are_refused_once_the_node_is_gone() {
    let connect = chroot_connect("guarded_writes");
    let (a, b) = (client(&connect).await, client(&connect).await);
    a.create("/state", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    let m = Mutex::new(&a, "/lock").unwrap();
    let g = bounded("acquire", m.acquire()).await.unwrap();

    let results = g
        .guarded_multi(vec![MultiOp::set_data("/state", b"1", None)])
        .await
        .unwrap();
    assert_eq!(results.len(), 1, "only our operations' results");
    // The token reads as ZK_FENCING_TOKEN does for `zk lock`'s command: the czxid in decimal.
    assert_eq!(g.fencing_token().to_string(), g.stat().czxid.to_string());
    assert!(matches!(results[0], MultiResult::SetData { .. }));

    // One of our operations fails: it is named by its index among ours (the check is not
    // counted).
    let err = g
        .guarded_multi(vec![
            MultiOp::set_data("/state", b"2", None),
            MultiOp::create("/state", b"", &CreateOptions::persistent()),
        ])
        .await
        .unwrap_err();
    match &err {
        Error::Client(e) => {
            assert!(
                matches!(e.kind(), ErrorKind::MultiFailed { index: 1, .. }),
                "{e}"
            );
            assert_eq!(
                e.to_string(),
                "multi: operation 1 (create /state) failed: node already exists"
            );
            let (index, cause) = e.multi_cause().unwrap();
            assert_eq!((index, cause.path()), (1, Some("/state")));
        }
        other => panic!("{other:?}"),
    }

    // The lock node goes (as with an expired session): the server refuses the stale write.
    b.delete(g.path(), None).await.unwrap();
    let err = g
        .guarded_multi(vec![MultiOp::set_data("/state", b"stale", None)])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotHeld { path } if path == g.path()),
        "{err:?}"
    );
    let (data, _) = b.get_data("/state").await.unwrap();
    assert_eq!(&data[..], b"1", "nothing of a refused transaction applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_op_fences_a_transaction_of_our_own() {
    let connect = chroot_connect("guarded_check_op");
    let c = client(&connect).await;
    let m = Mutex::new(&c, "/lock").unwrap();
    let g = bounded("acquire", m.acquire()).await.unwrap();
    let check = g.check_op();
    c.multi(vec![
        check.clone(),
        MultiOp::create("/made", b"", &CreateOptions::persistent()),
    ])
    .await
    .unwrap();
    g.release().await.unwrap();
    let err = c
        .multi(vec![
            check,
            MultiOp::create("/late", b"", &CreateOptions::persistent()),
        ])
        .await
        .unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::MultiFailed { index: 0, .. }
    ));
    assert!(c.exists("/late").await.unwrap().is_none());
}
