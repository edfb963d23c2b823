//! The model server kept honest by the real one: each case is a sequence of operations by two
//! clients, written down with the replies, events and errors they got, and it is run against
//! a real ZooKeeper 3.8 from the testkit and against the model ([`SimServer`] over real TCP).
//! A case fails when the two transcripts differ.
//!
//! Transcripts are made comparable, not forgiving: zxids become their rank of first
//! appearance in the case (other tests write to the shared real server meanwhile, so values
//! differ but order does not), session ids become the client's name, times are left out.
//! Deliberate differences of the model are marked where a case makes them: child listings
//! are sorted (the real server gives no order). `ZK_CONFORMANCE_SHOW=1` prints every
//! transcript.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zookeeper_testkit::proxy::Proxy;
use zookeeper_testkit::sim::{SimOptions, SimServer};
use zookeeper_tokio::{
    perms, Acl, AddWatchMode, Client, CreateOptions, Id, MultiOp, MultiResult, OneshotWatcher,
    PersistentWatcher, ReadOp, ReadResult, SessionState, Stat, WatcherType,
};

/// Two clients on one server, under the case's own chroot, and the transcript they write;
/// `r` is a third client whose connection goes through `proxy`, to be cut and restored.
struct Ctx {
    a: Client,
    b: Client,
    r: Client,
    proxy: Proxy,
    lines: Mutex<Vec<String>>,
    zxids: Mutex<BTreeMap<i64, usize>>,
}

impl Ctx {
    fn say(&self, line: impl Into<String>) {
        self.lines.lock().unwrap().push(line.into());
    }

    fn z(&self, zxid: i64) -> String {
        let mut z = self.zxids.lock().unwrap();
        let n = z.len() + 1;
        format!("z{}", *z.entry(zxid).or_insert(n))
    }

    fn owner(&self, id: i64) -> &'static str {
        if id == 0 {
            "none"
        } else if id == self.a.session_id().0 {
            "a"
        } else if id == self.b.session_id().0 {
            "b"
        } else if id == self.r.session_id().0 {
            "r"
        } else {
            "other"
        }
    }

    /// A stat without its times.
    fn stat(&self, s: &Stat) -> String {
        format!(
            "czxid={} mzxid={} pzxid={} version={} cversion={} aversion={} owner={} len={} children={}",
            self.z(s.czxid),
            self.z(s.mzxid),
            self.z(s.pzxid),
            s.version,
            s.cversion,
            s.aversion,
            self.owner(s.ephemeral_owner),
            s.data_length,
            s.num_children
        )
    }

    fn outcome<T>(&self, what: &str, r: &zookeeper_tokio::Result<T>, ok: impl Fn(&T) -> String) {
        match r {
            Ok(v) => self.say(format!("{what}: {}", ok(v))),
            Err(e) => self.say(format!("{what}: error {:?}", e.code())),
        }
    }

    /// The events a one-shot watcher has by now, without waiting.
    async fn poll_once(&self, name: &str, w: &mut Option<OneshotWatcher>) {
        if let Some(watcher) = w.as_mut() {
            if let Ok(e) = tokio::time::timeout(Duration::ZERO, watcher).await {
                self.say(format!("{name} fired: {:?} {}", e.event_type, e.path));
                *w = None;
            } else {
                self.say(format!("{name}: nothing"));
            }
        }
    }

    fn drain(&self, name: &str, w: &mut PersistentWatcher) {
        let mut got = Vec::new();
        while let Some(e) = w.try_next() {
            got.push(format!("{:?} {}", e.event_type, e.path));
        }
        self.say(format!("{name}: [{}]", got.join(", ")));
    }
}

type Case = for<'a> fn(&'a Ctx) -> Pin<Box<dyn Future<Output = ()> + 'a>>;

macro_rules! case {
    ($name:ident, |$c:ident| $body:block) => {
        fn $name<'a>($c: &'a Ctx) -> Pin<Box<dyn Future<Output = ()> + 'a>> {
            Box::pin(async move { $body })
        }
    };
}

fn persistent() -> CreateOptions {
    CreateOptions::persistent()
}

case!(create_read_write_delete, |c| {
    let r = c.a.create("/n", b"v1", &persistent()).await;
    c.outcome("create /n", &r, |(p, s)| format!("{p} {}", c.stat(s)));
    let r = c.a.get_data("/n").await;
    c.outcome("get /n", &r, |(d, s)| format!("{d:?} {}", c.stat(s)));
    let r = c.a.set_data("/n", b"v2", Some(5)).await;
    c.outcome("set /n version 5", &r, |s| c.stat(s));
    let r = c.a.set_data("/n", b"v22", Some(0)).await;
    c.outcome("set /n version 0", &r, |s| c.stat(s));
    let r = c.a.set_data("/n", b"", None).await;
    c.outcome("set /n any version", &r, |s| c.stat(s));
    let r = c.a.delete("/n", Some(1)).await;
    c.outcome("delete /n version 1", &r, |_| "ok".into());
    let r = c.a.delete("/n", Some(2)).await;
    c.outcome("delete /n version 2", &r, |_| "ok".into());
    let r = c.a.exists("/n").await;
    c.outcome("exists /n", &r, |s| format!("{:?}", s.map(|s| s.version)));
});

case!(errors_come_in_the_servers_order, |c| {
    let r = c.a.create("/missing/child", b"", &persistent()).await;
    c.outcome("create under a missing parent", &r, |(p, _)| p.clone());
    c.a.create("/e", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let r = c.a.create("/e", b"", &persistent()).await;
    c.outcome("create an existing ephemeral", &r, |(p, _)| p.clone());
    let r = c.a.create("/e/child", b"", &persistent()).await;
    c.outcome("create under an ephemeral", &r, |(p, _)| p.clone());
    c.a.create("/p", b"", &persistent()).await.unwrap();
    c.a.create("/p/q", b"", &persistent()).await.unwrap();
    let r = c.a.delete("/p", None).await;
    c.outcome("delete a parent", &r, |_| "ok".into());
    let r = c.a.get_data("/nothing").await;
    c.outcome("get a missing node", &r, |(d, _)| format!("{d:?}"));
    let r = c.a.delete("/nothing", None).await;
    c.outcome("delete a missing node", &r, |_| "ok".into());
    let r = c.a.set_data("/nothing", b"", None).await;
    c.outcome("set a missing node", &r, |s| c.stat(s));
    let r = c.a.get_children("/nothing").await;
    c.outcome("list a missing node", &r, |(ch, _)| format!("{ch:?}"));
});

case!(sequence_numbers_are_per_parent_from_cversion, |c| {
    for p in ["/s", "/t"] {
        c.a.create(p, b"", &persistent()).await.unwrap();
    }
    c.a.create("/s/plain", b"", &persistent()).await.unwrap();
    for (parent, n) in [("/s", 3), ("/t", 2)] {
        for _ in 0..n {
            let r =
                c.a.create(
                    &format!("{parent}/x-"),
                    b"",
                    &CreateOptions::persistent_sequential(),
                )
                .await;
            c.outcome("create sequential", &r, |(p, _)| p.clone());
        }
    }
    c.a.delete("/s/plain", None).await.unwrap();
    let r =
        c.a.create("/s/x-", b"", &CreateOptions::ephemeral_sequential())
            .await;
    c.outcome("after a delete", &r, |(p, s)| format!("{p} {}", c.stat(s)));
    let r = c.a.get_children("/s").await;
    // Deliberate: sorted, as the real server gives no order.
    c.outcome("list /s", &r, |(ch, s)| {
        let mut ch = ch.clone();
        ch.sort();
        format!("{ch:?} {}", c.stat(s))
    });
});

case!(ephemerals_go_with_their_session, |c| {
    c.b.create("/eph", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    c.b.create("/eph2", b"", &CreateOptions::ephemeral())
        .await
        .unwrap();
    let r = c.b.get_ephemerals("/").await;
    c.outcome("b's ephemerals", &r, |e| {
        let mut e = e.clone();
        e.sort();
        format!("{e:?}")
    });
    let r = c.a.get_ephemerals("/").await;
    c.outcome("a's ephemerals", &r, |e| format!("{e:?}"));
    let (stat, watcher) = c.a.exists_and_watch("/eph").await.unwrap();
    c.say(format!(
        "a sees /eph owned by {}",
        c.owner(stat.unwrap().ephemeral_owner)
    ));
    c.b.close().await;
    let e = tokio::time::timeout(Duration::from_secs(30), watcher)
        .await
        .expect("the deletion is told");
    c.say(format!("a told: {:?} {}", e.event_type, e.path));
    let r = c.a.exists("/eph2").await;
    c.outcome("exists /eph2", &r, |s| format!("{:?}", s.is_some()));
});

case!(one_shot_watches_fire_once, |c| {
    c.a.create("/w", b"", &persistent()).await.unwrap();
    let (_, _, data) = c.a.get_data_and_watch("/w").await.unwrap();
    let (_, _, children) = c.a.get_children_and_watch("/w").await.unwrap();
    let (none, exists) = c.a.exists_and_watch("/w/new").await.unwrap();
    c.say(format!("exists /w/new: {:?}", none.is_some()));
    let (mut data, mut children, mut exists) = (Some(data), Some(children), Some(exists));
    c.b.create("/w/new", b"", &persistent()).await.unwrap();
    c.a.sync("/w").await.unwrap();
    c.poll_once("data watch", &mut data).await;
    c.poll_once("child watch", &mut children).await;
    c.poll_once("exist watch", &mut exists).await;
    c.b.set_data("/w", b"x", None).await.unwrap();
    c.b.create("/w/other", b"", &persistent()).await.unwrap();
    c.a.sync("/w").await.unwrap();
    c.poll_once("data watch", &mut data).await;
    c.poll_once("child watch", &mut children).await;
    c.b.set_data("/w", b"y", None).await.unwrap();
    c.a.sync("/w").await.unwrap();
    c.poll_once("data watch after it fired", &mut data).await;
    // A deletion fires data and child watches of the node, and the parent's child watch.
    let (_, _, d) = c.a.get_data_and_watch("/w/new").await.unwrap();
    let (_, _, ch) = c.a.get_children_and_watch("/w/new").await.unwrap();
    let (_, _, parent) = c.a.get_children_and_watch("/w").await.unwrap();
    let (mut d, mut ch, mut parent) = (Some(d), Some(ch), Some(parent));
    c.b.delete("/w/new", None).await.unwrap();
    c.a.sync("/w").await.unwrap();
    c.poll_once("data watch of a deleted node", &mut d).await;
    c.poll_once("child watch of a deleted node", &mut ch).await;
    c.poll_once("parent's child watch", &mut parent).await;
});

case!(persistent_and_recursive_watches, |c| {
    c.a.create("/pw", b"", &persistent()).await.unwrap();
    c.a.create("/rw", b"", &persistent()).await.unwrap();
    let mut p =
        c.a.add_watch("/pw", AddWatchMode::Persistent)
            .await
            .unwrap();
    let mut r =
        c.a.add_watch("/rw", AddWatchMode::PersistentRecursive)
            .await
            .unwrap();
    c.b.create("/pw/c", b"", &persistent()).await.unwrap();
    c.b.set_data("/pw", b"1", None).await.unwrap();
    c.b.set_data("/pw/c", b"1", None).await.unwrap();
    c.b.create("/rw/x", b"", &persistent()).await.unwrap();
    c.b.create("/rw/x/y", b"", &persistent()).await.unwrap();
    c.b.set_data("/rw/x/y", b"1", None).await.unwrap();
    c.b.delete("/rw/x/y", None).await.unwrap();
    c.b.set_data("/rw", b"1", None).await.unwrap();
    c.a.sync("/").await.unwrap();
    c.drain("persistent /pw", &mut p);
    c.drain("recursive /rw", &mut r);
    c.b.delete("/pw/c", None).await.unwrap();
    c.b.delete("/pw", None).await.unwrap();
    c.b.create("/pw", b"", &persistent()).await.unwrap();
    c.a.sync("/").await.unwrap();
    c.drain("persistent /pw after delete and create", &mut p);
});

// A one-shot watch set on the path of a persistent one, as the watch workloads do: before
// 3.9 the server keeps one mode per path and watcher, so the one-shot watch displaces the
// persistent one and firing removes both (ZOOKEEPER-4466); the client sets the persistent
// watch again. The model keeps the persistent watch: what the client reports must not differ.
case!(a_one_shot_watch_beside_a_persistent_one, |c| {
    c.a.create("/op", b"", &persistent()).await.unwrap();
    let mut p =
        c.a.add_watch("/op", AddWatchMode::Persistent)
            .await
            .unwrap();
    let (_, _, once) = c.a.get_data_and_watch("/op").await.unwrap();
    c.b.set_data("/op", b"1", None).await.unwrap();
    c.a.sync("/").await.unwrap();
    let mut once = Some(once);
    c.poll_once("one-shot", &mut once).await;
    c.drain("persistent", &mut p);
    c.b.set_data("/op", b"2", None).await.unwrap();
    c.b.create("/op/c", b"", &persistent()).await.unwrap();
    c.a.sync("/").await.unwrap();
    c.drain("persistent, after the one-shot fired", &mut p);
});

case!(multi_with_check, |c| {
    c.a.create("/m", b"", &persistent()).await.unwrap();
    let r =
        c.a.multi(vec![
            MultiOp::check("/m", 0),
            MultiOp::create("/m/a", b"1", &persistent()),
            MultiOp::set_data("/m", b"2", Some(0)),
            MultiOp::create("/m/s-", b"", &CreateOptions::persistent_sequential()),
        ])
        .await;
    c.outcome("multi ok", &r, |results| {
        results
            .iter()
            .map(|x| match x {
                MultiResult::Create { path, stat } => format!(
                    "create {path} {}",
                    stat.as_ref().map_or("without stat".into(), |s| c.stat(s))
                ),
                MultiResult::SetData { stat } => format!("set {}", c.stat(stat)),
                other => format!("{other:?}"),
            })
            .collect::<Vec<_>>()
            .join("; ")
    });
    let r =
        c.a.multi(vec![
            MultiOp::create("/m/b", b"", &persistent()),
            MultiOp::check("/m", 0),
            MultiOp::delete("/m/a", None),
        ])
        .await;
    c.outcome("multi with a stale check", &r, |_| "applied".into());
    if let Err(e) = &r {
        c.say(format!(
            "cause: {:?}",
            e.multi_cause().map(|(i, c)| (i, c.code()))
        ));
    }
    let r = c.a.exists("/m/b").await;
    c.outcome("exists /m/b", &r, |s| format!("{:?}", s.is_some()));
    let r =
        c.a.multi_read(vec![
            ReadOp::get_data("/m"),
            ReadOp::get_data("/m/zz"),
            ReadOp::get_children("/m"),
        ])
        .await;
    c.outcome("multi_read", &r, |results| {
        results
            .iter()
            .map(|x| match x {
                ReadResult::Data { data, stat } => format!("data {data:?} {}", c.stat(stat)),
                ReadResult::Children { children } => {
                    let mut ch = children.clone();
                    ch.sort();
                    format!("children {ch:?}")
                }
                ReadResult::Error(e) => format!("error {:?}", e.code()),
            })
            .collect::<Vec<_>>()
            .join("; ")
    });
});

case!(children_counts_and_watch_removal, |c| {
    c.a.create("/k", b"", &persistent()).await.unwrap();
    c.a.create("/k/a", b"", &persistent()).await.unwrap();
    c.a.create("/k/a/b", b"", &persistent()).await.unwrap();
    c.a.create("/k/c", b"", &persistent()).await.unwrap();
    let r = c.a.get_all_children_number("/k").await;
    c.outcome("all children of /k", &r, |n| n.to_string());
    let r = c.a.get_children("/k").await;
    c.outcome("list /k", &r, |(_, s)| c.stat(s));
    let (_, _, w) = c.a.get_data_and_watch("/k").await.unwrap();
    let r = c.a.remove_watches("/k", WatcherType::Data).await;
    c.outcome("remove data watch", &r, |_| "ok".into());
    let r = c.a.remove_watches("/k", WatcherType::Data).await;
    c.outcome("remove it again", &r, |_| "ok".into());
    let e = tokio::time::timeout(Duration::from_secs(30), w).await;
    c.say(format!(
        "removed watcher told: {:?}",
        e.map(|e| e.event_type)
    ));
});

case!(acls_and_identity, |c| {
    c.a.create("/acl", b"", &persistent()).await.unwrap();
    let r = c.a.get_acl("/acl").await;
    c.outcome("get acl", &r, |(acl, s)| format!("{acl:?} {}", c.stat(s)));
    let read_all = vec![zookeeper_tokio::Acl {
        perms: zookeeper_tokio::perms::ALL,
        id: zookeeper_tokio::Id::anyone(),
    }];
    let r = c.a.set_acl("/acl", read_all.clone(), Some(3)).await;
    c.outcome("set acl version 3", &r, |s| c.stat(s));
    let r = c.a.set_acl("/acl", read_all, Some(0)).await;
    c.outcome("set acl version 0", &r, |s| c.stat(s));
    let r = c.a.get_acl("/missing").await;
    c.outcome("get acl of a missing node", &r, |(acl, _)| {
        format!("{acl:?}")
    });
    let r = c.a.who_am_i().await;
    c.outcome("who am i", &r, |ids| format!("{ids:?}"));
});

fn acl(perms: i32, scheme: &str, id: &str) -> Acl {
    Acl {
        perms,
        id: Id {
            scheme: scheme.into(),
            id: id.into(),
        },
    }
}

fn with_acl(acl: Vec<Acl>) -> CreateOptions {
    CreateOptions::persistent().acl(acl)
}

// A node only its creator's identity may change, read by anyone: what each permission lets
// a session without that identity do, and what the identity added lets it do.
case!(acls_are_enforced_per_identity, |c| {
    let r = c.a.add_auth("digest", b"alice:secret").await;
    c.outcome("a authenticates as alice", &r, |_| "ok".into());
    let mine = vec![
        acl(perms::ALL, "auth", ""),
        acl(perms::READ, "world", "anyone"),
    ];
    let r = c.a.create("/mine", b"v", &with_acl(mine)).await;
    c.outcome("a creates /mine", &r, |(p, _)| p.clone());
    let r = c.a.get_acl("/mine").await;
    c.outcome("a's acl of /mine", &r, |(acl, s)| {
        format!("{acl:?} {}", c.stat(s))
    });
    let r = c.b.get_acl("/mine").await;
    c.outcome("b's acl of /mine (no ADMIN)", &r, |(acl, _)| {
        format!("{acl:?}")
    });
    let r = c.b.get_data("/mine").await;
    c.outcome("b reads /mine", &r, |(d, _)| format!("{d:?}"));
    let r = c.b.set_data("/mine", b"b", None).await;
    c.outcome("b writes /mine", &r, |s| c.stat(s));
    let r = c.b.create("/mine/b", b"", &persistent()).await;
    c.outcome("b creates under /mine", &r, |(p, _)| p.clone());
    let r = c.a.create("/mine/a", b"", &persistent()).await;
    c.outcome("a creates under /mine", &r, |(p, _)| p.clone());
    let r = c.b.delete("/mine/a", None).await;
    c.outcome("b deletes under /mine", &r, |_| "ok".into());
    let r = c.b.set_acl("/mine", Acl::open_unsafe(), Some(7)).await;
    c.outcome("b sets /mine's acl, stale version", &r, |s| c.stat(s));
    let r = c.b.multi(vec![MultiOp::check("/mine", 0)]).await;
    c.outcome("b checks /mine in a multi", &r, |_| "applied".into());
    let r =
        c.b.multi(vec![MultiOp::set_data("/mine", b"m", None)])
            .await;
    c.outcome("b writes /mine in a multi", &r, |_| "applied".into());
    if let Err(e) = &r {
        c.say(format!(
            "cause: {:?}",
            e.multi_cause().map(|(i, c)| (i, c.code()))
        ));
    }
    let r = c.b.add_auth("digest", b"alice:wrong").await;
    c.outcome("b adds alice with a wrong password", &r, |_| "ok".into());
    let r = c.b.set_data("/mine", b"b", None).await;
    c.outcome("b writes /mine", &r, |s| c.stat(s));
    let r = c.b.add_auth("digest", b"alice:secret").await;
    c.outcome("b adds alice", &r, |_| "ok".into());
    let r = c.b.who_am_i().await;
    // Deliberate: sorted, as the real server keeps a connection's identities in a hash set.
    c.outcome("b is", &r, |ids| {
        let mut ids: Vec<String> = ids
            .iter()
            .map(|i| format!("{}:{}", i.auth_scheme, i.user))
            .collect();
        ids.sort();
        format!("{ids:?}")
    });
    let r = c.b.set_data("/mine", b"b", None).await;
    c.outcome("b writes /mine", &r, |s| c.stat(s));
    let r = c.b.get_acl("/mine").await;
    c.outcome("b's acl of /mine", &r, |(acl, _)| format!("{acl:?}"));
    let r = c.b.delete("/mine/a", None).await;
    c.outcome("b deletes under /mine", &r, |_| "ok".into());
    let r = c.b.set_acl("/mine", Acl::open_unsafe(), Some(0)).await;
    c.outcome("b sets /mine's acl", &r, |s| c.stat(s));
});

// Each permission alone, granted to anyone: what it allows and what it does not. Listing
// needs READ on the node listed, creating and deleting a child CREATE and DELETE on its
// parent, `setACL` ADMIN, `getACL` READ or ADMIN.
case!(each_permission_alone, |c| {
    let only = [
        ("/r", perms::READ),
        ("/w", perms::WRITE),
        ("/c", perms::CREATE),
        ("/d", perms::DELETE),
        ("/a", perms::ADMIN),
    ];
    for (path, _) in only {
        c.a.create(path, b"", &persistent()).await.unwrap();
        c.a.create(&format!("{path}/x"), b"", &persistent())
            .await
            .unwrap();
    }
    for (path, perm) in only {
        let r =
            c.a.set_acl(path, vec![acl(perm, "world", "anyone")], Some(0))
                .await;
        c.outcome(&format!("set {path}'s acl"), &r, |s| c.stat(s));
    }
    for (path, _) in only {
        let r = c.b.get_data(path).await;
        c.outcome(&format!("get {path}"), &r, |_| "ok".into());
        let r = c.b.exists(path).await;
        c.outcome(&format!("exists {path}"), &r, |s| {
            format!("{:?}", s.is_some())
        });
        let r = c.b.get_children(path).await;
        c.outcome(&format!("list {path}"), &r, |(ch, _)| format!("{ch:?}"));
        let r = c.b.get_all_children_number(path).await;
        c.outcome(&format!("count under {path}"), &r, |n| n.to_string());
        let r = c.b.get_acl(path).await;
        c.outcome(&format!("get {path}'s acl"), &r, |(acl, s)| {
            format!("{acl:?} aversion={}", s.aversion)
        });
        let r =
            c.b.multi_read(vec![ReadOp::get_data(path), ReadOp::get_children(path)])
                .await;
        c.outcome(&format!("multi_read {path}"), &r, |results| {
            results
                .iter()
                .map(|x| match x {
                    ReadResult::Data { .. } => "data".to_owned(),
                    ReadResult::Children { children } => format!("children {children:?}"),
                    ReadResult::Error(e) => format!("error {:?}", e.code()),
                })
                .collect::<Vec<_>>()
                .join("; ")
        });
        let r = c.b.set_data(path, b"1", None).await;
        c.outcome(&format!("set {path}"), &r, |s| {
            format!("version={}", s.version)
        });
        let r = c.b.create(&format!("{path}/y"), b"", &persistent()).await;
        c.outcome(&format!("create {path}/y"), &r, |(p, _)| p.clone());
        let r = c.b.delete(&format!("{path}/x"), None).await;
        c.outcome(&format!("delete {path}/x"), &r, |_| "ok".into());
        let r = c.b.delete(&format!("{path}/missing"), None).await;
        c.outcome(&format!("delete {path}/missing"), &r, |_| "ok".into());
        let r = c.b.set_acl(path, Acl::open_unsafe(), Some(5)).await;
        c.outcome(&format!("set {path}'s acl, stale version"), &r, |s| {
            c.stat(s)
        });
    }
    let r = c.b.set_acl("/a", Acl::open_unsafe(), Some(1)).await;
    c.outcome("set /a's acl", &r, |s| c.stat(s));
});

// What an ACL must be: not empty, schemes the server knows with ids they accept, `auth`
// only once the session has an identity; duplicates are dropped. Checked before the parent
// or the node is looked up.
case!(invalid_acls_are_refused, |c| {
    let cases: Vec<(&str, Vec<Acl>)> = vec![
        ("world:someone", vec![acl(perms::ALL, "world", "someone")]),
        (
            "digest without a hash",
            vec![acl(perms::ALL, "digest", "bob")],
        ),
        (
            "digest with an empty hash",
            vec![acl(perms::ALL, "digest", "bob:")],
        ),
        (
            "ip that is no address",
            vec![acl(perms::ALL, "ip", "somewhere")],
        ),
        (
            "ip with a bad prefix",
            vec![acl(perms::ALL, "ip", "10.0.0.0/40")],
        ),
        ("an unknown scheme", vec![acl(perms::ALL, "nosuch", "x")]),
        (
            "auth without an identity",
            vec![acl(perms::ALL, "auth", "")],
        ),
        (
            "one good, one bad",
            vec![
                acl(perms::ALL, "world", "anyone"),
                acl(perms::READ, "nosuch", "x"),
            ],
        ),
    ];
    c.a.create("/i", b"", &persistent()).await.unwrap();
    for (what, list) in cases {
        let r = c.b.create("/i/n", b"", &with_acl(list.clone())).await;
        c.outcome(&format!("create with {what}"), &r, |(p, _)| p.clone());
        let r = c.b.create("/missing/n", b"", &with_acl(list.clone())).await;
        c.outcome(
            &format!("create under a missing parent with {what}"),
            &r,
            |(p, _)| p.clone(),
        );
        let r = c.b.set_acl("/i", list.clone(), None).await;
        c.outcome(&format!("set acl to {what}"), &r, |s| c.stat(s));
        let r = c.b.set_acl("/missing", list, None).await;
        c.outcome(&format!("set a missing node's acl to {what}"), &r, |s| {
            c.stat(s)
        });
    }
    let r = c.b.set_acl("/missing", Acl::open_unsafe(), None).await;
    c.outcome("set a missing node's acl", &r, |s| c.stat(s));
    let twice = vec![
        acl(perms::ALL, "world", "anyone"),
        acl(perms::ALL, "world", "anyone"),
        acl(perms::READ, "ip", "127.0.0.1"),
    ];
    let r = c.b.create("/i/twice", b"", &with_acl(twice)).await;
    c.outcome("create with a duplicate", &r, |(p, _)| p.clone());
    let r = c.b.get_acl("/i/twice").await;
    c.outcome("its acl", &r, |(acl, _)| format!("{acl:?}"));
    // Addresses: this client's own, and a range without it.
    for (what, list) in [
        ("127.0.0.1", vec![acl(perms::READ, "ip", "127.0.0.1")]),
        ("127.0.0.0/8", vec![acl(perms::READ, "ip", "127.0.0.0/8")]),
        ("10.0.0.0/8", vec![acl(perms::READ, "ip", "10.0.0.0/8")]),
    ] {
        let path = format!("/i/{}", what.replace('/', "_"));
        let r = c.b.create(&path, b"", &with_acl(list)).await;
        c.outcome(&format!("create readable by {what}"), &r, |(p, _)| {
            p.clone()
        });
        let r = c.b.get_data(&path).await;
        c.outcome(&format!("read it from {what}"), &r, |_| "ok".into());
    }
});

case!(watches_are_restored_after_a_reconnect, |c| {
    for p in ["/sw", "/sw/d", "/sw/gone", "/sw/same", "/sw/p", "/sw/r"] {
        c.a.create(p, b"", &persistent()).await.unwrap();
    }
    let (_, _, d) = c.r.get_data_and_watch("/sw/d").await.unwrap();
    let (_, _, gone) = c.r.get_data_and_watch("/sw/gone").await.unwrap();
    let (_, _, same) = c.r.get_data_and_watch("/sw/same").await.unwrap();
    let (_, new) = c.r.exists_and_watch("/sw/new").await.unwrap();
    let (_, _, children) = c.r.get_children_and_watch("/sw").await.unwrap();
    let mut p =
        c.r.add_watch("/sw/p", AddWatchMode::Persistent)
            .await
            .unwrap();
    let mut rec =
        c.r.add_watch("/sw/r", AddWatchMode::PersistentRecursive)
            .await
            .unwrap();
    let mut states = c.r.state_watcher();
    c.proxy.refuse(true);
    c.proxy.drop_all();
    states
        .wait_for(|s| !s.is_connected())
        .await
        .expect("r sees the connection go");
    c.b.set_data("/sw/d", b"1", None).await.unwrap();
    c.b.delete("/sw/gone", None).await.unwrap();
    c.b.create("/sw/new", b"", &persistent()).await.unwrap();
    c.b.set_data("/sw/p", b"1", None).await.unwrap();
    c.b.create("/sw/r/x", b"", &persistent()).await.unwrap();
    c.proxy.refuse(false);
    states
        .wait_for(|s| *s == SessionState::Connected)
        .await
        .expect("r reconnects");
    c.r.sync("/").await.unwrap();
    let (mut d, mut gone, mut same, mut new, mut children) =
        (Some(d), Some(gone), Some(same), Some(new), Some(children));
    c.poll_once("changed data", &mut d).await;
    c.poll_once("deleted node", &mut gone).await;
    c.poll_once("unchanged node", &mut same).await;
    c.poll_once("created node", &mut new).await;
    c.poll_once("changed children", &mut children).await;
    c.drain("persistent", &mut p);
    c.drain("recursive", &mut rec);
    // What was restored without an event is still watched.
    c.b.set_data("/sw/same", b"1", None).await.unwrap();
    c.b.set_data("/sw/p", b"2", None).await.unwrap();
    c.r.sync("/").await.unwrap();
    c.poll_once("unchanged node, changed now", &mut same).await;
    c.drain("persistent, changed now", &mut p);
});

const CASES: &[(&str, Case)] = &[
    (
        "watches_are_restored_after_a_reconnect",
        watches_are_restored_after_a_reconnect,
    ),
    ("acls_and_identity", acls_and_identity),
    (
        "acls_are_enforced_per_identity",
        acls_are_enforced_per_identity,
    ),
    ("each_permission_alone", each_permission_alone),
    ("invalid_acls_are_refused", invalid_acls_are_refused),
    ("create_read_write_delete", create_read_write_delete),
    (
        "errors_come_in_the_servers_order",
        errors_come_in_the_servers_order,
    ),
    (
        "sequence_numbers_are_per_parent_from_cversion",
        sequence_numbers_are_per_parent_from_cversion,
    ),
    (
        "ephemerals_go_with_their_session",
        ephemerals_go_with_their_session,
    ),
    ("one_shot_watches_fire_once", one_shot_watches_fire_once),
    (
        "persistent_and_recursive_watches",
        persistent_and_recursive_watches,
    ),
    ("multi_with_check", multi_with_check),
    (
        "a_one_shot_watch_beside_a_persistent_one",
        a_one_shot_watch_beside_a_persistent_one,
    ),
    (
        "children_counts_and_watch_removal",
        children_counts_and_watch_removal,
    ),
];

async fn transcript(server: std::net::SocketAddr, chroot: &str, case: Case) -> Vec<String> {
    let connect = |to: String| {
        Client::builder(&format!("{to}{chroot}"))
            .session_timeout(Duration::from_secs(10))
            .connect()
    };
    let proxy = Proxy::start(server).await.expect("proxy");
    let ctx = Ctx {
        a: connect(server.to_string()).await.expect("a connects"),
        b: connect(server.to_string()).await.expect("b connects"),
        r: connect(proxy.connect_string()).await.expect("r connects"),
        proxy,
        lines: Mutex::default(),
        zxids: Mutex::default(),
    };
    case(&ctx).await;
    ctx.a.close().await;
    ctx.b.close().await;
    ctx.r.close().await;
    ctx.lines.into_inner().unwrap()
}

/// Runs every case on both servers; fails listing each case whose transcripts differ.
#[tokio::test]
async fn the_model_answers_as_a_real_server() {
    let real = zookeeper_testkit::shared_server();
    let model = SimServer::new(SimOptions::default());
    let model_addr = model.listen_tcp().await.expect("model listens");
    let setup = Client::connect(&model_addr.to_string()).await.unwrap();
    let differing = Arc::new(Mutex::new(Vec::new()));
    for (name, case) in CASES {
        let real_chroot = zookeeper_testkit::chroot_for(name);
        let model_chroot = format!("/{name}");
        setup
            .create(&model_chroot, b"", &persistent())
            .await
            .unwrap();
        let on_real = transcript(real.addr(), &real_chroot, *case).await;
        let on_model = transcript(model_addr, &model_chroot, *case).await;
        if std::env::var("ZK_CONFORMANCE_SHOW").is_ok() {
            eprintln!("case {name}:\n  {}", on_real.join("\n  "));
        }
        if on_real != on_model {
            let mut diff = format!("case {name}:\n");
            for i in 0..on_real.len().max(on_model.len()) {
                let (r, m) = (on_real.get(i), on_model.get(i));
                let mark = if r == m { " " } else { "!" };
                diff += &format!(
                    "{mark} real : {}\n{mark} model: {}\n",
                    r.map_or("-", |s| s),
                    m.map_or("-", |s| s)
                );
            }
            differing.lock().unwrap().push(diff);
        }
    }
    let differing = differing.lock().unwrap();
    assert!(
        differing.is_empty(),
        "{} of {} cases differ:\n{}",
        differing.len(),
        CASES.len(),
        differing.join("\n")
    );
    eprintln!("conformance: {} cases agree", CASES.len());
}
