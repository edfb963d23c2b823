//! Every watch kind against a real server.

mod common;

use common::{client, next_events, within};
use futures_core::Stream;
use zookeeper_tokio::{
    AddWatchMode, Client, CreateOptions, ErrorKind, EventType, SessionState, WatcherType,
};

fn persistent() -> CreateOptions {
    CreateOptions::persistent()
}

#[tokio::test]
async fn data_watch_fires_once_on_change() {
    let c = client("data_watch").await;
    c.create("/w", b"1", &persistent()).await.unwrap();
    let (data, _, watcher) = c.get_data_and_watch("/w").await.unwrap();
    assert_eq!(&data[..], b"1");
    c.set_data("/w", b"2", None).await.unwrap();
    let event = within("data event", watcher).await;
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    assert_eq!(event.path, "/w");
    assert_eq!(event.state, SessionState::Connected);
}

#[tokio::test]
async fn exists_watch_on_missing_node_fires_on_create() {
    let c = client("exists_watch").await;
    let (stat, watcher) = c.exists_and_watch("/later").await.unwrap();
    assert!(stat.is_none());
    c.create("/later", b"", &persistent()).await.unwrap();
    assert_eq!(
        within("created", watcher).await.event_type,
        EventType::NodeCreated
    );
    let (stat, watcher) = c.exists_and_watch("/later").await.unwrap();
    assert!(stat.is_some());
    c.delete("/later", None).await.unwrap();
    assert_eq!(
        within("deleted", watcher).await.event_type,
        EventType::NodeDeleted
    );
}

#[tokio::test]
async fn child_watch_fires_on_new_child_and_delete_fires_all_kinds() {
    let c = client("child_watch").await;
    c.create("/p", b"", &persistent()).await.unwrap();
    let (_, _, children) = c.get_children_and_watch("/p").await.unwrap();
    c.create("/p/a", b"", &persistent()).await.unwrap();
    let event = within("children", children).await;
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeChildrenChanged, "/p")
    );

    c.delete("/p/a", None).await.unwrap();
    let (_, _, data) = c.get_data_and_watch("/p").await.unwrap();
    let (_, exist) = c.exists_and_watch("/p").await.unwrap();
    let (_, _, child) = c.get_children_and_watch("/p").await.unwrap();
    c.delete("/p", None).await.unwrap();
    for w in [data, exist, child] {
        assert_eq!(
            within("deleted", w).await.event_type,
            EventType::NodeDeleted
        );
    }
}

#[tokio::test]
async fn failed_reads_set_no_watch() {
    let c = client("failed_reads").await;
    assert_eq!(
        c.get_data_and_watch("/none").await.map(|_| ()).unwrap_err(),
        ErrorKind::NoNode
    );
    assert_eq!(
        c.get_children_and_watch("/none")
            .await
            .map(|_| ())
            .unwrap_err(),
        ErrorKind::NoNode
    );
}

/// The reply to our own write comes after the event it caused: by the time `set_data`
/// returns, the watcher has already resolved.
#[tokio::test]
async fn event_arrives_before_the_reply_that_observes_the_change() {
    let c = client("event_before_reply").await;
    c.create("/o", b"", &persistent()).await.unwrap();
    for _ in 0..20 {
        let (_, _, mut watcher) = c.get_data_and_watch("/o").await.unwrap();
        c.set_data("/o", b"x", None).await.unwrap();
        let ready = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::future::Future::poll(
                std::pin::Pin::new(&mut watcher),
                cx,
            ))
        })
        .await;
        assert!(ready.is_ready(), "event not delivered before the reply");
    }
}

#[tokio::test]
async fn persistent_watch_streams_every_event_of_the_node() {
    let c = client("persistent_watch").await;
    let mut w = c.add_watch("/n", AddWatchMode::Persistent).await.unwrap();
    c.create("/n", b"", &persistent()).await.unwrap();
    c.set_data("/n", b"1", None).await.unwrap();
    c.set_data("/n", b"2", None).await.unwrap();
    c.create("/n/kid", b"", &persistent()).await.unwrap();
    c.create("/n/kid/grandkid", b"", &persistent())
        .await
        .unwrap();
    c.delete("/n/kid/grandkid", None).await.unwrap();
    c.delete("/n/kid", None).await.unwrap();
    c.delete("/n", None).await.unwrap();
    let got = next_events(&mut w, 6).await;
    assert_eq!(
        got,
        vec![
            (EventType::NodeCreated, "/n".to_string()),
            (EventType::NodeDataChanged, "/n".to_string()),
            (EventType::NodeDataChanged, "/n".to_string()),
            (EventType::NodeChildrenChanged, "/n".to_string()),
            (EventType::NodeChildrenChanged, "/n".to_string()),
            (EventType::NodeDeleted, "/n".to_string()),
        ]
    );
    assert!(w.try_next().is_none());
}

#[tokio::test]
async fn persistent_recursive_watch_sees_the_subtree_without_child_events() {
    let c = client("recursive_watch").await;
    c.create("/r", b"", &persistent()).await.unwrap();
    let mut w = c
        .add_watch("/r", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    c.create("/r/a", b"", &persistent()).await.unwrap();
    c.create("/r/a/b", b"", &persistent()).await.unwrap();
    c.set_data("/r/a/b", b"x", None).await.unwrap();
    c.delete("/r/a/b", None).await.unwrap();
    c.create("/outside", b"", &persistent()).await.unwrap();
    c.set_data("/r", b"y", None).await.unwrap();
    let got = next_events(&mut w, 5).await;
    assert_eq!(
        got,
        vec![
            (EventType::NodeCreated, "/r/a".to_string()),
            (EventType::NodeCreated, "/r/a/b".to_string()),
            (EventType::NodeDataChanged, "/r/a/b".to_string()),
            (EventType::NodeDeleted, "/r/a/b".to_string()),
            (EventType::NodeDataChanged, "/r".to_string()),
        ]
    );
    // Works as a Stream too.
    fn assert_stream<S: Stream>(_: &S) {}
    assert_stream(&w);
}

#[tokio::test]
async fn remove_watches_on_the_server_and_locally() {
    let c = client("remove_watches").await;
    c.create("/x", b"", &persistent()).await.unwrap();
    let (_, _, data) = c.get_data_and_watch("/x").await.unwrap();
    let (_, _, child) = c.get_children_and_watch("/x").await.unwrap();
    c.remove_watches("/x", WatcherType::Data).await.unwrap();
    assert_eq!(
        within("removed", data).await.event_type,
        EventType::DataWatchRemoved
    );
    assert_eq!(
        c.remove_watches("/x", WatcherType::Data).await.unwrap_err(),
        ErrorKind::NoWatcher
    );
    c.remove_watches("/x", WatcherType::Children).await.unwrap();
    assert_eq!(
        within("removed", child).await.event_type,
        EventType::ChildWatchRemoved
    );

    let mut p = c.add_watch("/x", AddWatchMode::Persistent).await.unwrap();
    c.remove_watches("/x", WatcherType::Any).await.unwrap();
    let e = within("persistent removed", p.next()).await.unwrap();
    assert_eq!(e.event_type, EventType::PersistentWatchRemoved);
    assert!(within("stream end", p.next()).await.is_none());
}

#[tokio::test]
async fn close_resolves_every_watcher_and_ends_streams() {
    let c = client("close_watchers").await;
    c.create("/x", b"", &persistent()).await.unwrap();
    let (_, _, data) = c.get_data_and_watch("/x").await.unwrap();
    let mut p = c
        .add_watch("/x", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    c.close().await;
    let e = within("closed", data).await;
    assert_eq!(
        (e.event_type, e.state),
        (EventType::None, SessionState::Closed)
    );
    let e = within("closed", p.next()).await.unwrap();
    assert_eq!(
        (e.event_type, e.state),
        (EventType::None, SessionState::Closed)
    );
    assert!(p.next().await.is_none());
    assert_eq!(
        c.get_data("/x").await.map(|_| ()).unwrap_err(),
        ErrorKind::Closed
    );
}

#[tokio::test]
async fn watchers_do_not_keep_the_session_alive() {
    let c = client("watchers_drop").await;
    let root = c.chroot().unwrap().to_owned();
    c.create("/e", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    c.create("/p", b"", &persistent()).await.unwrap();
    let (_, _, watcher) = c.get_data_and_watch("/p").await.unwrap();
    let observer = Client::connect(&zookeeper_testkit::shared_server().connect_string())
        .await
        .unwrap();
    let (_, gone) = observer
        .exists_and_watch(&format!("{root}/e"))
        .await
        .unwrap();
    drop(c);
    // The last handle is gone: the session closes and the ephemeral with it.
    assert_eq!(
        within("ephemeral deleted", gone).await.event_type,
        EventType::NodeDeleted
    );
    let e = within("watcher ends", watcher).await;
    assert_eq!(
        (e.event_type, e.state),
        (EventType::None, SessionState::Closed)
    );
}

/// Through a proxy, under a chroot: a recursive watch cut off while its subtree changes reports
/// each missed change once, with client paths, and does not report again what it saw live.
#[tokio::test]
async fn a_recursive_watch_reports_missed_changes_with_client_paths_after_a_reconnect() {
    let server = zookeeper_testkit::shared_server();
    let chroot = zookeeper_testkit::chroot_for("recursive_catch_up");
    let proxy = zookeeper_testkit::Proxy::start(server.addr())
        .await
        .unwrap();
    let c = Client::builder(&format!("{}{chroot}", proxy.addr()))
        .session_timeout(std::time::Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let other = Client::connect(&server.connect_string_with_chroot(&chroot))
        .await
        .unwrap();
    for p in ["/r", "/r/gone", "/r/gone/kid"] {
        c.create(p, b"", &persistent()).await.unwrap();
    }
    let mut w = c
        .add_watch("/r", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    other.create("/r/live", b"", &persistent()).await.unwrap();
    let e = within("live event", w.next()).await.unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (EventType::NodeCreated, "/r/live")
    );

    proxy.refuse(true);
    proxy.drop_all();
    common::wait_state(&c, |s| s == SessionState::Disconnected).await;
    other.delete("/r/gone/kid", None).await.unwrap();
    other.delete("/r/gone", None).await.unwrap();
    other.create("/r/new", b"", &persistent()).await.unwrap();
    other.set_data("/r/live", b"x", None).await.unwrap();
    proxy.refuse(false);

    let got = next_events(&mut w, 4).await;
    assert_eq!(
        got,
        vec![
            (EventType::NodeDeleted, "/r/gone/kid".to_string()),
            (EventType::NodeDeleted, "/r/gone".to_string()),
            (EventType::NodeCreated, "/r/new".to_string()),
            (EventType::NodeDataChanged, "/r/live".to_string()),
        ]
    );
    other.set_data("/r", b"marker", None).await.unwrap();
    let e = within("marker", w.next()).await.unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (EventType::NodeDataChanged, "/r")
    );
}

/// A one-shot child watch on the path of a recursive watch, restored after a reconnect. The
/// 3.8 server keeps one mode per connection and path, so the `setWatches2` that restores both
/// leaves the child watch recursive, and recursive watchers get no child events
/// (ZOOKEEPER-4466): the client must fire it from the recursive watch's events.
#[tokio::test]
async fn a_child_watch_beside_a_recursive_watch_on_its_path_survives_a_reconnect() {
    let server = zookeeper_testkit::shared_server();
    let chroot = zookeeper_testkit::chroot_for("child_beside_recursive_reconnect");
    let proxy = zookeeper_testkit::Proxy::start(server.addr())
        .await
        .unwrap();
    let c = Client::builder(&format!("{}{chroot}", proxy.addr()))
        .session_timeout(std::time::Duration::from_secs(10))
        .connect_timeout(std::time::Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    let other = Client::connect(&server.connect_string_with_chroot(&chroot))
        .await
        .unwrap();
    c.create("/p", b"", &persistent()).await.unwrap();
    let mut w = c
        .add_watch("/p", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    let (_, _, children) = c.get_children_and_watch("/p").await.unwrap();

    proxy.drop_all();
    common::wait_state(&c, |s| s == SessionState::Disconnected).await;
    common::wait_state(&c, |s| s == SessionState::Connected).await;
    // Answered after the watches were restored on the server.
    c.exists("/p").await.unwrap();
    other.create("/p/kid", b"", &persistent()).await.unwrap();

    let e = within("recursive event", w.next()).await.unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (EventType::NodeCreated, "/p/kid")
    );
    let e = within("child watch", children).await;
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (EventType::NodeChildrenChanged, "/p")
    );
}

/// The same two watches set the other way round: the recursive watch set after the child watch
/// takes the server's one mode for the path at once, without any reconnect.
#[tokio::test]
async fn a_child_watch_fires_when_a_recursive_watch_is_set_after_it_on_its_path() {
    let c = client("child_then_recursive").await;
    c.create("/p", b"", &persistent()).await.unwrap();
    let (_, _, children) = c.get_children_and_watch("/p").await.unwrap();
    let mut w = c
        .add_watch("/p", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    c.create("/p/kid", b"", &persistent()).await.unwrap();
    let e = within("recursive event", w.next()).await.unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (EventType::NodeCreated, "/p/kid")
    );
    let e = within("child watch", children).await;
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (EventType::NodeChildrenChanged, "/p")
    );
}

/// A one-shot data watch set on the path of a recursive watch: the 3.8 server keeps one watch
/// per connection and path, and firing the data watch removed the recursive one with it
/// (ZOOKEEPER-4466). The recursive watch must go on seeing its subtree.
#[tokio::test]
async fn a_recursive_watch_outlives_a_data_watch_fired_on_its_path() {
    let c = client("recursive_outlives_data_watch").await;
    c.create("/p", b"", &persistent()).await.unwrap();
    let mut w = c
        .add_watch("/p", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    let (_, _, data) = c.get_data_and_watch("/p").await.unwrap();
    c.set_data("/p", b"x", None).await.unwrap();
    assert_eq!(
        within("data watch", data).await.event_type,
        EventType::NodeDataChanged
    );
    c.create("/p/kid", b"", &persistent()).await.unwrap();
    c.set_data("/p", b"y", None).await.unwrap();
    assert_eq!(
        next_events(&mut w, 3).await,
        vec![
            (EventType::NodeDataChanged, "/p".to_string()),
            (EventType::NodeCreated, "/p/kid".to_string()),
            (EventType::NodeDataChanged, "/p".to_string()),
        ]
    );
}

/// The same with a child watch beside a persistent watch: the persistent watch lost its
/// child events once the child watch fired.
#[tokio::test]
async fn a_persistent_watch_outlives_a_child_watch_fired_on_its_path() {
    let c = client("persistent_outlives_child_watch").await;
    c.create("/p", b"", &persistent()).await.unwrap();
    let mut w = c.add_watch("/p", AddWatchMode::Persistent).await.unwrap();
    let (_, _, child) = c.get_children_and_watch("/p").await.unwrap();
    c.create("/p/a", b"", &persistent()).await.unwrap();
    assert_eq!(
        within("child watch", child).await.event_type,
        EventType::NodeChildrenChanged
    );
    c.create("/p/b", b"", &persistent()).await.unwrap();
    c.set_data("/p", b"x", None).await.unwrap();
    assert_eq!(
        next_events(&mut w, 3).await,
        vec![
            (EventType::NodeChildrenChanged, "/p".to_string()),
            (EventType::NodeChildrenChanged, "/p".to_string()),
            (EventType::NodeDataChanged, "/p".to_string()),
        ]
    );
}

/// A second client on the chroot of `c`, to make changes the watching one only hears of.
async fn admin(c: &Client) -> Client {
    let server = zookeeper_testkit::shared_server();
    Client::connect(&server.connect_string_with_chroot(c.chroot().unwrap()))
        .await
        .unwrap()
}

/// A client watching `/p` and below, and another to change what it watches.
async fn recursive_on_p(test: &str) -> (Client, Client, zookeeper_tokio::PersistentWatcher) {
    let c = client(test).await;
    let other = admin(&c).await;
    c.create("/p", b"0", &persistent()).await.unwrap();
    let below = c
        .add_watch("/p", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    (c, other, below)
}

/// A 3.8 server keeps one watch per connection, path and table (ZOOKEEPER-4466). A one-shot
/// data watch set on a recursive watch's root took its place there: the recursive watch heard
/// nothing below its root until the one-shot fired. A cache on a path that a recipe also
/// watches (a persistent node's `exists`, a shared count's data) went stale that way.
#[tokio::test]
async fn a_one_shot_watch_on_a_recursive_watchs_root_leaves_it_whole() {
    let (c, other, mut below) = recursive_on_p("oneshot_on_recursive_root").await;
    let (_, _, once) = c.get_data_and_watch("/p").await.unwrap();
    let (_, exists_once) = c.exists_and_watch("/p").await.unwrap();

    other.create("/p/a", b"", &persistent()).await.unwrap();
    other.set_data("/p/a", b"1", None).await.unwrap();
    assert_eq!(
        next_events(&mut below, 2).await,
        vec![
            (EventType::NodeCreated, "/p/a".to_string()),
            (EventType::NodeDataChanged, "/p/a".to_string()),
        ]
    );
    other.set_data("/p", b"1", None).await.unwrap();
    assert_eq!(
        within("the one-shot", once).await.event_type,
        EventType::NodeDataChanged
    );
    assert_eq!(
        within("the exists one-shot", exists_once).await.event_type,
        EventType::NodeDataChanged
    );
    assert_eq!(
        next_events(&mut below, 1).await,
        vec![(EventType::NodeDataChanged, "/p".to_string())]
    );
    other.create("/p/b", b"", &persistent()).await.unwrap();
    assert_eq!(
        next_events(&mut below, 1).await,
        vec![(EventType::NodeCreated, "/p/b".to_string())]
    );
}

/// A persistent watch set on a recursive watch's root took its place on the server for good:
/// the recursive watch heard nothing below its root again. Set the other way round, the
/// persistent watch heard no child events. In either order both are kept whole, and each event
/// comes once.
#[tokio::test]
async fn a_persistent_and_a_recursive_watch_on_one_path_both_stay_whole() {
    for recursive_first in [true, false] {
        let c = client("persistent_beside_recursive").await;
        let other = admin(&c).await;
        c.create("/p", b"0", &persistent()).await.unwrap();
        let (mut below, mut on_p) = if recursive_first {
            let below = c.add_watch("/p", AddWatchMode::PersistentRecursive);
            let below = below.await.unwrap();
            (
                below,
                c.add_watch("/p", AddWatchMode::Persistent).await.unwrap(),
            )
        } else {
            let on_p = c.add_watch("/p", AddWatchMode::Persistent).await.unwrap();
            let below = c.add_watch("/p", AddWatchMode::PersistentRecursive);
            (below.await.unwrap(), on_p)
        };

        other.create("/p/a", b"", &persistent()).await.unwrap();
        other.delete("/p/a", None).await.unwrap();
        other.set_data("/p", b"1", None).await.unwrap();
        assert_eq!(
            next_events(&mut below, 3).await,
            vec![
                (EventType::NodeCreated, "/p/a".to_string()),
                (EventType::NodeDeleted, "/p/a".to_string()),
                (EventType::NodeDataChanged, "/p".to_string()),
            ],
            "recursive first: {recursive_first}"
        );
        assert_eq!(
            next_events(&mut on_p, 3).await,
            vec![
                (EventType::NodeChildrenChanged, "/p".to_string()),
                (EventType::NodeChildrenChanged, "/p".to_string()),
                (EventType::NodeDataChanged, "/p".to_string()),
            ],
            "recursive first: {recursive_first}"
        );
    }
}

/// Removing the data watches of a path takes a recursive watch on it off the server too: the
/// session sets it again, so that it goes on hearing its subtree.
#[tokio::test]
async fn removing_data_watches_leaves_a_recursive_watch_on_the_path_whole() {
    let (c, other, mut below) = recursive_on_p("remove_data_beside_recursive").await;
    let (_, _, once) = c.get_data_and_watch("/p").await.unwrap();
    c.remove_watches("/p", WatcherType::Data).await.unwrap();
    assert_eq!(
        within("removed", once).await.event_type,
        EventType::DataWatchRemoved
    );
    other.create("/p/a", b"", &persistent()).await.unwrap();
    assert_eq!(
        next_events(&mut below, 1).await,
        vec![(EventType::NodeCreated, "/p/a".to_string())]
    );
}
