//! Futures dropped before their request went out (never awaited): the request is withdrawn.
//! It is never sent, not even later with another call's, and its room in the queue is free at
//! once.

mod common;

use std::time::Duration;

use zookeeper_tokio::{Client, CreateOptions};

async fn a_dropped_write_is_never_applied(test: &str) {
    let c = common::client(test).await;
    c.create("/w", b"0", &CreateOptions::persistent())
        .await
        .unwrap();
    drop(c.set_data("/w", b"dropped", None));
    // This call's flush writes whatever is queued ahead of it.
    c.set_data("/w", b"kept", None).await.unwrap();
    let (data, stat) = c.get_data("/w").await.unwrap();
    assert_eq!(&data[..], b"kept");
    assert_eq!(stat.version, 1, "only the awaited write was applied");
    c.close().await;
}

#[test]
fn a_write_dropped_before_it_went_out_is_never_applied_current_thread() {
    common::current_thread().block_on(a_dropped_write_is_never_applied("dropped_write_ct"));
}

#[test]
fn a_write_dropped_before_it_went_out_is_never_applied_multi_thread() {
    common::multi_thread().block_on(a_dropped_write_is_never_applied("dropped_write_mt"));
}

#[tokio::test]
async fn a_dropped_calls_room_goes_to_the_next_call_at_once() {
    // The session's next turn of its own (a ping) comes long after the next call's deadline:
    // only the dropped call's own room, given back at the drop, lets that call through.
    let c = Client::builder(&common::connect_string("dropped_room"))
        .session_timeout(Duration::from_secs(60))
        .connect_timeout(Duration::from_secs(30))
        .max_outstanding(1)
        .request_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    drop(c.get_data("/"));
    c.get_data("/").await.expect("admitted, sent and answered");
    c.close().await;
}
