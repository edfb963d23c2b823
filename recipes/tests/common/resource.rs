//! The checked resource the interop tests share with the peers (same protocol as
//! `tests/peers/*`): a writer or mutex holder creates `RES/w` and must be alone in `RES`; a
//! reader creates `RES/r-<tag>` and must not see `RES/w`. An overlap the lock should have
//! prevented fails the test.

use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

/// Creates `res` (persistent) if missing.
pub async fn prepare(c: &Client, res: &str) {
    match c.create(res, b"", &CreateOptions::persistent()).await {
        Ok(_) => {}
        Err(e) if e == ErrorKind::NodeExists => {}
        Err(e) => panic!("create {res}: {e}"),
    }
}

pub async fn enter_exclusive(c: &Client, res: &str, tag: &str) {
    match c
        .create(
            &format!("{res}/w"),
            tag.as_bytes(),
            &CreateOptions::ephemeral(),
        )
        .await
    {
        Ok(_) => {}
        Err(e) if e == ErrorKind::NodeExists => {
            panic!("violation: {tag} found another writer inside")
        }
        Err(e) => panic!("enter: {e}"),
    }
    let (inside, _) = c.get_children(res).await.unwrap();
    assert_eq!(
        inside,
        vec!["w".to_owned()],
        "violation: {tag} not alone inside"
    );
}

pub async fn leave_exclusive(c: &Client, res: &str) {
    c.delete(&format!("{res}/w"), None)
        .await
        .expect("violation: our resource node vanished");
}

pub async fn enter_shared(c: &Client, res: &str, tag: &str) {
    c.create(&format!("{res}/r-{tag}"), b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    assert!(
        c.exists(&format!("{res}/w")).await.unwrap().is_none(),
        "violation: reader {tag} saw a writer inside"
    );
}

pub async fn leave_shared(c: &Client, res: &str, tag: &str) {
    c.delete(&format!("{res}/r-{tag}"), None).await.unwrap();
}
