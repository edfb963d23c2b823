//! Persistent and recursive watches (`add_watch`) as a service keeps them for hours, across
//! the member serving it killed, the leader killed, and members restarted. The promise
//! (`Client::add_watch`): no change goes unreported; changes made while cut off are
//! reported once per node and kind; a change whose event did arrive is never reported again.

use std::collections::BTreeMap;
use std::time::Duration;

use zookeeper_testkit::{bounded, Ensemble};
use zookeeper_tokio::{
    AddWatchMode, Client, CreateOptions, EventType, PersistentWatcher, SessionState,
};

/// Kills `member`, waits until `client` has lost and found a connection, restarts `member`.
async fn kill_and_restart(ensemble: &Ensemble, member: usize, client: &Client) {
    let mut states = client.state_changes();
    ensemble.kill(member).unwrap();
    bounded(
        "disconnected",
        states.wait_for(|s| s == SessionState::Disconnected),
    )
    .await
    .unwrap();
    bounded(
        "connected",
        states.wait_for(|s| s == SessionState::Connected),
    )
    .await
    .unwrap();
    bounded("restart", ensemble.restart(member)).await.unwrap();
}

/// Events of `watcher`, per path, in order, until `marker` was created.
async fn collect(
    watcher: &mut PersistentWatcher,
    marker: &str,
) -> BTreeMap<String, Vec<EventType>> {
    let mut seen: BTreeMap<String, Vec<EventType>> = BTreeMap::new();
    loop {
        let event = bounded("event", watcher.next())
            .await
            .expect("the watch ended");
        assert_eq!(event.state, SessionState::Connected, "{event}");
        let done = event.path == marker && event.event_type == EventType::NodeCreated;
        seen.entry(event.path).or_default().push(event.event_type);
        if done {
            return seen;
        }
    }
}

/// Each node `/w/n{i}` is created, changed once, and (all but the last few) deleted, while
/// the member serving the watch and then the leader are killed and restarted. Per node, the
/// events must be a prefix-free subsequence of created, changed, deleted: none twice, none
/// out of order; a node that still exists was reported created and, if changed, changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recursive_watch_reports_each_change_once_across_member_and_leader_restarts() {
    let ensemble = bounded("ensemble", Ensemble::start(3)).await.unwrap();
    let connect = ensemble.connect_string();
    let watching = bounded(
        "connect",
        Client::builder(&connect)
            .session_timeout(Duration::from_secs(30))
            .connect(),
    )
    .await
    .unwrap();
    let writer = bounded("writer", Client::connect(&connect)).await.unwrap();
    writer
        .create("/w", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let mut recursive = bounded(
        "add_watch",
        watching.add_watch("/w", AddWatchMode::PersistentRecursive),
    )
    .await
    .unwrap();
    let mut single = bounded(
        "add_watch",
        watching.add_watch("/w/n0", AddWatchMode::Persistent),
    )
    .await
    .unwrap();

    // Writes go on until both faults are over: node i is created and changed, and node
    // i - KEPT deleted, so the last KEPT nodes remain.
    const KEPT: usize = 5;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writes = {
        let writer = writer.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || i < 2 * KEPT {
                let path = format!("/w/n{i}");
                // Retried on a lost connection: a repeat of an applied write fails plainly.
                loop {
                    match writer
                        .create(&path, b"a", &CreateOptions::persistent())
                        .await
                    {
                        Ok(_) => break,
                        Err(e) if e == zookeeper_tokio::ErrorKind::NodeExists => break,
                        Err(e) if e.kind().is_retryable() => continue,
                        Err(e) => panic!("create {path}: {e}"),
                    }
                }
                loop {
                    match writer.set_data(&path, b"b", Some(0)).await {
                        Ok(_) => break,
                        Err(e) if e == zookeeper_tokio::ErrorKind::BadVersion => break,
                        Err(e) if e.kind().is_retryable() => continue,
                        Err(e) => panic!("set {path}: {e}"),
                    }
                }
                if i >= KEPT {
                    let old = format!("/w/n{}", i - KEPT);
                    loop {
                        match writer.delete(&old, None).await {
                            Ok(()) => break,
                            Err(e) if e == zookeeper_tokio::ErrorKind::NoNode => break,
                            Err(e) if e.kind().is_retryable() => continue,
                            Err(e) => panic!("delete {old}: {e}"),
                        }
                    }
                }
                i += 1;
            }
            i
        })
    };

    // The member serving the watch, then the leader (an election: every member drops its
    // clients), each killed and restarted while the writes go on.
    let serving = bounded("serving", ensemble.member_serving(watching.session_id().0))
        .await
        .expect("a member serves the session");
    kill_and_restart(&ensemble, serving, &watching).await;
    let leader = bounded("leader", ensemble.leader()).await.unwrap();
    kill_and_restart(&ensemble, leader, &watching).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let nodes = bounded("writes", writes).await.unwrap();
    eprintln!("{nodes} nodes written across the faults");
    loop {
        match writer
            .create("/w/end", b"", &CreateOptions::persistent())
            .await
        {
            Ok(_) => break,
            Err(e) if e.kind().is_retryable() => continue,
            Err(e) => panic!("create /w/end: {e}"),
        }
    }

    let seen = collect(&mut recursive, "/w/end").await;
    let mut reported = 0;
    for i in 0..nodes {
        let path = format!("/w/n{i}");
        let events = seen.get(&path).cloned().unwrap_or_default();
        let order = [
            EventType::NodeCreated,
            EventType::NodeDataChanged,
            EventType::NodeDeleted,
        ];
        let mut at = 0;
        for e in &events {
            let pos = order
                .iter()
                .position(|o| o == e)
                .unwrap_or_else(|| panic!("{path}: unexpected {e:?} in {events:?}"));
            assert!(pos >= at, "{path}: {events:?} repeats or goes back");
            at = pos + 1;
        }
        if i >= nodes - KEPT {
            assert_eq!(
                events.first(),
                Some(&EventType::NodeCreated),
                "{path} exists: its creation reported"
            );
        }
        if !events.is_empty() {
            reported += 1;
        }
    }
    assert!(reported > nodes / 2, "most changes were seen: {reported}");
    assert!(recursive.try_next().is_none(), "nothing after the marker");

    // The non-recursive watch on /w/n0: created, changed, deleted at most once each.
    let mut on_n0 = Vec::new();
    while let Some(e) = single.try_next() {
        on_n0.push(e.event_type);
    }
    let mut dedup = on_n0.clone();
    dedup.dedup();
    assert_eq!(dedup, on_n0, "/w/n0: {on_n0:?}");
}
