//! Queue order on real listings, including sequences that wrapped past 2^31 and listings
//! whose order only creation zxids can decide. The contender names are written by hand
//! (a server reaches the wrap only after 2^31 creations under one parent).

mod common;

use common::{chroot_connect, client};
use zookeeper_recipes::Mutex;
use zookeeper_tokio::CreateOptions;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrapped_sequences_queue_after_the_ones_before_the_wrap() {
    let c = client(&chroot_connect("order_wrap")).await;
    c.create("/lock", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    // Created in an order unrelated to the sequences: the names alone must decide.
    let names = [
        "_c_c-lock--2147483648",
        "_c_a-lock-2147483646",
        "_c_d-lock--2147483647",
        "_c_b-lock-2147483647",
    ];
    for n in names {
        c.create(&format!("/lock/{n}"), b"", &CreateOptions::ephemeral())
            .await
            .unwrap();
    }
    let m = Mutex::new(&c, "/lock").unwrap();
    assert_eq!(
        m.participants().await.unwrap(),
        [
            "_c_a-lock-2147483646",
            "_c_b-lock-2147483647",
            "_c_c-lock--2147483648",
            "_c_d-lock--2147483647",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_circle_apart_is_ordered_by_creation() {
    let c = client(&chroot_connect("order_czxid")).await;
    c.create("/lock", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    // Sequences 2^31 apart: either could be first by the names, so creation order decides
    // (created so that it differs from the plain numeric order).
    for n in ["_c_x-lock-0000000000", "_c_y-lock--2147483648"] {
        c.create(&format!("/lock/{n}"), b"", &CreateOptions::ephemeral())
            .await
            .unwrap();
    }
    let m = Mutex::new(&c, "/lock").unwrap();
    assert_eq!(
        m.participants().await.unwrap(),
        ["_c_x-lock-0000000000", "_c_y-lock--2147483648"]
    );
}
