//! A `Semaphore` of two leases and a `DistributedAtomicLong`, or a `ReadWriteLock`, shared by
//! three processes (this test binary run again as each), one of them stopped with SIGSTOP
//! while it holds, for longer than its session timeout, then continued. The promises: the
//! others go on (the stopped holder's lock goes with its session); never more than two
//! leases, never a writer beside anyone; once resumed, the stopped process writes nothing
//! under its old lock (`guarded_multi` is refused), and it recovers on a new session; every
//! successful increment has a value of its own.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::sync::mpsc;
use zookeeper_recipes::{DistributedAtomicLong, ReadWriteLock, RetryPolicy, Semaphore, Sessions};
use zookeeper_testkit::{bounded, ZkServer};
use zookeeper_tokio::{Client, CreateOptions, EventType, MultiOp};

/// The children's session timeout: the stop lasts until the server has expired it.
const SESSION: Duration = Duration::from_secs(2);
const ROLE_ENV: &str = "ZK_USER_PROCESS_ROLE";
const CONNECT_ENV: &str = "ZK_USER_PROCESS_CONNECT";
/// `sem` or `rw`: the recipe the children share.
const RECIPE_ENV: &str = "ZK_USER_PROCESS_RECIPE";

/// The body of a child process; a no-op when the test runs as itself.
#[test]
fn child_process_role() {
    let (Ok(name), Ok(connect)) = (std::env::var(ROLE_ENV), std::env::var(CONNECT_ENV)) else {
        return;
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(contend(
            name,
            connect,
            std::env::var(RECIPE_ENV).unwrap_or_default(),
        ));
}

/// Takes a lease (or, with `rw`, the write lock and the read lock by turns), writes under it
/// and counts, releases, again and again; says what it did on stdout, one `EVENT` line each.
async fn contend(name: String, connect: String, recipe: String) {
    let say = |what: String| println!("EVENT {name} {what}");
    let sessions = Sessions::connect(Client::builder(&connect).session_timeout(SESSION))
        .await
        .unwrap();
    let sem = Semaphore::new(&sessions, "/sem", 2).unwrap();
    let rw = ReadWriteLock::new(&sessions, "/rw").unwrap();
    let mut turn = 0u64;
    let counter = DistributedAtomicLong::new(
        &sessions,
        "/count",
        RetryPolicy::n_times(1000, Duration::ZERO),
    )
    .unwrap();
    loop {
        turn += 1;
        // W: exclusive; R: shared (the semaphore's leases count as shared, two at most).
        let (kind, acquired) = match recipe.as_str() {
            "rw" if turn % 2 == 0 => ("W", rw.write().await),
            "rw" => ("R", rw.read().await),
            _ => ("R", sem.acquire().await),
        };
        let lease = match acquired {
            Ok(lease) => lease,
            Err(e) => {
                say(format!("acquire-error {e}"));
                continue;
            }
        };
        let token = lease.stat().czxid;
        say(format!("held {token} {}", lease.path()));
        for _ in 0..20 {
            let record = MultiOp::create(
                "/work/r-",
                format!("{name} {token} {kind}").as_bytes(),
                &CreateOptions::persistent_sequential(),
            );
            if let Err(e) = lease.guarded_multi(vec![record]).await {
                say(format!("refused {e}"));
                break;
            }
            match counter.increment().await {
                Ok(v) if v.succeeded => say(format!("inc {}", v.post_value)),
                Ok(_) => say("inc-gave-up".into()),
                Err(e) => say(format!("inc-error {e}")),
            }
        }
        let _ = lease.release().await;
        say("released".into());
    }
}

/// The children, killed when dropped.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: a plain kill(2) on a process this test started and has not reaped.
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0, "kill({}, {sig})", child.id());
}

/// An event line of a child: its name, what, and the rest.
#[derive(Debug, Clone)]
struct Event {
    name: String,
    what: String,
    rest: String,
}

async fn next_where(
    rx: &mut mpsc::UnboundedReceiver<Event>,
    log: &mut Vec<Event>,
    what: &str,
    pred: impl Fn(&Event) -> bool,
) -> Event {
    bounded(what, async {
        loop {
            let e = rx.recv().await.expect("the children are gone");
            log.push(e.clone());
            if pred(&e) {
                return e;
            }
        }
    })
    .await
}

/// Which recipe the three processes share.
#[derive(Clone, Copy, PartialEq)]
enum Recipe {
    /// A semaphore of two leases.
    Semaphore,
    /// A read-write lock, each process writing and reading by turns.
    ReadWrite,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_a_semaphore_and_a_counter_through_one_stopped_past_its_session() {
    run(Recipe::Semaphore).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_a_read_write_lock_through_one_stopped_past_its_session() {
    run(Recipe::ReadWrite).await;
}

async fn run(recipe: Recipe) {
    let server = ZkServer::start().await.unwrap();
    let connect = server.connect_string();
    let c = bounded("connect", Client::connect(&connect)).await.unwrap();
    c.create("/work", b"", &CreateOptions::persistent())
        .await
        .unwrap();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let exe = std::env::current_exe().unwrap();
    let mut children = Children(Vec::new());
    for name in ["a", "b", "c"] {
        let mut child = Command::new(&exe)
            .args([
                "child_process_role",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE_ENV, name)
            .env(CONNECT_ENV, &connect)
            .env(
                RECIPE_ENV,
                match recipe {
                    Recipe::Semaphore => "sem",
                    Recipe::ReadWrite => "rw",
                },
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in out.lines().map_while(|l| l.ok()) {
                let mut parts = line.splitn(4, ' ');
                if parts.next() != Some("EVENT") {
                    continue;
                }
                let (name, what) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let rest = parts.next().unwrap_or("").to_string();
                let _ = tx.send(Event {
                    name: name.into(),
                    what: what.into(),
                    rest,
                });
            }
        });
        children.0.push(child);
    }
    drop(tx);
    let mut log = Vec::new();

    // Stop the first holder at once, lease in hand (most likely: it is checked below).
    let held = next_where(&mut rx, &mut log, "a first holder", |e| e.what == "held").await;
    let victim = ["a", "b", "c"]
        .iter()
        .position(|n| *n == held.name)
        .unwrap();
    signal(&children.0[victim], libc::SIGSTOP);
    // Its locks go when the server expires its session: each one it said it held (lines it
    // wrote before the stop may still be on their way: each is waited for as it comes). The
    // others go on: each holds after that.
    let path_of = |e: &Event| e.rest.split_once(' ').unwrap().1.to_string();
    let mut to_go = vec![path_of(&held)];
    let mut after = BTreeSet::new();
    loop {
        while let Some(path) = to_go.pop() {
            let (stat, watcher) = c.exists_and_watch(&path).await.unwrap();
            if stat.is_some() {
                let event = bounded("the stopped holder's lock to go", watcher).await;
                assert_eq!(event.event_type, EventType::NodeDeleted);
            }
        }
        if after.len() == 2 {
            break;
        }
        let e = next_where(&mut rx, &mut log, "the others to hold", |e| {
            e.what == "held"
        })
        .await;
        if e.name == held.name {
            to_go.push(path_of(&e));
        } else {
            after.insert(e.name);
        }
    }
    // Resumed: after this mark, nothing may be written under the old lease.
    let (_, mark) = c
        .create("/mark", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    signal(&children.0[victim], libc::SIGCONT);
    next_where(
        &mut rx,
        &mut log,
        "the resumed process to hold again",
        |e| {
            e.what == "held"
                && e.name == held.name
                && e.rest.split(' ').next().unwrap().parse::<i64>().unwrap() > mark.czxid
        },
    )
    .await;
    // Killed mid-work: each may have had one increment applied and not yet said so.
    let killed = children.0.len() as i64;
    drop(children);
    // Every line they wrote, to the end of their output.
    while let Some(e) = bounded("the children's output to end", rx.recv()).await {
        log.push(e);
    }

    // What the server holds: the records written under leases, by token.
    let (names, _) = c.get_children("/work").await.unwrap();
    let mut spans: BTreeMap<i64, (i64, i64, bool)> = BTreeMap::new();
    for n in names {
        let (data, stat) = c.get_data(&format!("/work/{n}")).await.unwrap();
        let data = String::from_utf8(data.to_vec()).unwrap();
        let mut fields = data.split(' ');
        let (who, token, kind) = (
            fields.next().unwrap(),
            fields.next().unwrap(),
            fields.next().unwrap(),
        );
        let token: i64 = token.parse().unwrap();
        assert!(
            !(who == held.name && token < mark.czxid && stat.czxid > mark.czxid),
            "{who} wrote under its old lock {token} after resuming (zxid {})",
            stat.czxid
        );
        let span = spans
            .entry(token)
            .or_insert((stat.czxid, stat.czxid, kind == "W"));
        span.0 = span.0.min(stat.czxid);
        span.1 = span.1.max(stat.czxid);
    }
    // Never three semaphore leases at once, and a writer never beside anyone: no zxid inside
    // the spans of writes of tokens that could not be held together.
    let mut edges: Vec<(i64, i32, bool)> = spans
        .values()
        .flat_map(|(from, to, w)| [(*from, 1, *w), (*to + 1, -1, *w)])
        .collect();
    edges.sort();
    let (mut live, mut writers) = (0, 0);
    for (zxid, d, w) in edges {
        live += d;
        if w {
            writers += d;
        }
        assert!(
            recipe == Recipe::ReadWrite || live <= 2,
            "three leases wrote around zxid {zxid}: {spans:?}"
        );
        assert!(
            writers == 0 || live == 1,
            "a writer beside another holder around zxid {zxid}: {spans:?}"
        );
    }
    // Every successful increment has a value of its own, and none is lost.
    let incs: Vec<i64> = log
        .iter()
        .filter(|e| e.what == "inc")
        .map(|e| e.rest.parse().unwrap())
        .collect();
    let distinct: BTreeSet<i64> = incs.iter().copied().collect();
    assert_eq!(distinct.len(), incs.len(), "an increment value twice");
    let unknown = log.iter().filter(|e| e.what == "inc-error").count() as i64;
    let (data, _) = c.get_data("/count").await.unwrap();
    let total = i64::from_be_bytes(data[..8].try_into().unwrap());
    assert!(
        total >= incs.len() as i64 && total <= incs.len() as i64 + unknown + killed,
        "count {total}, {} increments succeeded, {unknown} unknown, {killed} killed",
        incs.len()
    );
    let refused: Vec<&Event> = log
        .iter()
        .filter(|e| e.name == held.name && e.what == "refused")
        .collect();
    let errors: Vec<&Event> = log.iter().filter(|e| e.what.ends_with("error")).collect();
    eprintln!(
        "{} increments, {unknown} unknown; the stopped one refused: {refused:?}; errors: {errors:?}",
        incs.len()
    );
}
