//! One `Client` behind an `Arc`, as a service shares it, used by 200 tasks doing mixed
//! operations while its server is killed and restarted. The promise (README, client docs):
//! every call ends, by its deadline, a lost connection or the session's end, with a result
//! or a typed error; the session survives a restart within its timeout; the client serves
//! again afterwards.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zookeeper_testkit::ZkServer;
use zookeeper_tokio::{Client, CreateOptions, ErrorKind, MultiOp, SessionState};

/// The deadline of every request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Past the deadline, the margin a loaded 2-core machine may take to run the timer and the
/// task: a call not ended by then hangs.
const MARGIN: Duration = Duration::from_secs(30);
const TASKS: usize = 200;

#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    /// Error kinds seen, by name.
    errors: Mutex<BTreeMap<String, u64>>,
    /// Successes since the server came back, per task.
    ok_after: Vec<AtomicU64>,
}

async fn call<T>(
    tally: &Tally,
    task: usize,
    after: &AtomicBool,
    what: &str,
    f: impl Future<Output = zookeeper_tokio::Result<T>>,
) -> Option<T> {
    let ended = tokio::time::timeout(REQUEST_TIMEOUT + MARGIN, f)
        .await
        .unwrap_or_else(|_| panic!("task {task}: {what} did not end within its deadline"));
    match ended {
        Ok(v) => {
            tally.ok.fetch_add(1, Ordering::Relaxed);
            if after.load(Ordering::Relaxed) {
                tally.ok_after[task].fetch_add(1, Ordering::Relaxed);
            }
            Some(v)
        }
        Err(e) => {
            // Typed, and of the kinds a restart or a race between tasks explains.
            let expected = matches!(
                e.kind(),
                ErrorKind::ConnectionLoss
                    | ErrorKind::Timeout
                    | ErrorKind::NodeExists
                    | ErrorKind::NoNode
                    | ErrorKind::BadVersion
                    | ErrorKind::MultiFailed { .. }
            );
            assert!(expected, "task {task}: {what}: unexpected {e:?} ({e})");
            assert!(
                e.operation().is_some(),
                "task {task}: {what}: {e} names no operation"
            );
            let name = format!("{:?}", e.kind());
            let name = name.split([' ', '{', '(']).next().unwrap_or("").to_string();
            *tally.errors.lock().unwrap().entry(name).or_default() += 1;
            None
        }
    }
}

async fn worker(
    c: Arc<Client>,
    task: usize,
    tally: Arc<Tally>,
    stop: Arc<AtomicBool>,
    after: Arc<AtomicBool>,
) {
    let base = format!("/s/t{task}");
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let t = &*tally;
        let a = &*after;
        match round % 6 {
            0 => {
                call(
                    t,
                    task,
                    a,
                    "create",
                    c.create(&base, b"0", &CreateOptions::persistent()),
                )
                .await;
            }
            1 => {
                call(
                    t,
                    task,
                    a,
                    "set_data",
                    c.set_data(&base, round.to_string().as_bytes(), None),
                )
                .await;
            }
            2 => {
                call(t, task, a, "get_data", c.get_data(&base)).await;
            }
            3 => {
                let ops = vec![
                    MultiOp::create(&format!("{base}-e"), b"", &CreateOptions::ephemeral()),
                    MultiOp::delete(&format!("{base}-e"), None),
                ];
                call(t, task, a, "multi", c.multi(ops)).await;
            }
            4 => {
                call(t, task, a, "get_children", c.get_children("/s")).await;
            }
            _ => {
                if task % 2 == 0 {
                    call(t, task, a, "sync", c.sync(&base)).await;
                } else {
                    call(t, task, a, "delete", c.delete(&base, None)).await;
                }
            }
        }
    }
}

/// How the server fails while the tasks run.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    /// Killed (SIGKILL) and started again on its data.
    Restart,
    /// Frozen (SIGSTOP) for longer than the request deadline, then resumed: connected but
    /// silent, so calls end by their deadline.
    Pause,
}

async fn run(fault: Fault) {
    let server = ZkServer::start().await.unwrap();
    let client = Arc::new(
        Client::builder(&server.connect_string())
            .session_timeout(Duration::from_secs(30))
            .request_timeout(REQUEST_TIMEOUT)
            .connect()
            .await
            .unwrap(),
    );
    client
        .create("/s", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    let session = client.session_id();
    let tally = Arc::new(Tally {
        ok_after: (0..TASKS).map(|_| AtomicU64::new(0)).collect(),
        ..Tally::default()
    });
    let stop = Arc::new(AtomicBool::new(false));
    let after = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            tokio::spawn(worker(
                client.clone(),
                i,
                tally.clone(),
                stop.clone(),
                after.clone(),
            ))
        })
        .collect();

    let hang = REQUEST_TIMEOUT + MARGIN;
    // Some work before the fault.
    let before = tally.ok.load(Ordering::Relaxed);
    let mut states = client.state_changes();
    while tally.ok.load(Ordering::Relaxed) < before + 2_000 {
        tokio::task::yield_now().await;
    }
    match fault {
        Fault::Restart => {
            server.kill();
            tokio::time::timeout(hang, states.wait_for(|s| s == SessionState::Disconnected))
                .await
                .expect("disconnected");
            server.restart().await.unwrap();
        }
        Fault::Pause => {
            server.pause().unwrap();
            // Calls made while it is frozen end by their deadline: wait for one.
            let timeouts = || tally.errors.lock().unwrap().get("Timeout").copied();
            let until = tokio::time::Instant::now() + hang;
            while timeouts().unwrap_or(0) < TASKS as u64 {
                assert!(tokio::time::Instant::now() < until, "no call timed out");
                tokio::task::yield_now().await;
            }
            server.resume().unwrap();
        }
    }
    // A frozen server may not have cost the connection: the current state, not a change.
    let mut state = client.state_watcher();
    let connected =
        tokio::time::timeout(hang * 2, state.wait_for(|s| *s == SessionState::Connected)).await;
    if let Ok(watched) = connected {
        watched.unwrap();
    } else {
        // What the client and the server each saw, to tell a refused reconnect from a slow
        // restart or an expiry.
        panic!(
            "not connected again within {:?}: the client is {:?}, its calls failed with {:?}; \
             the server's log ends:\n{}",
            hang * 2,
            client.state(),
            tally.errors.lock().unwrap(),
            server.log_tail(40)
        );
    }
    after.store(true, Ordering::Relaxed);
    // Every task succeeds again.
    let until = tokio::time::Instant::now() + hang * 2;
    while tally.ok_after.iter().any(|n| n.load(Ordering::Relaxed) < 3) {
        assert!(
            tokio::time::Instant::now() < until,
            "tasks without a success since the restart: {:?}",
            tally
                .ok_after
                .iter()
                .enumerate()
                .filter(|(_, n)| n.load(Ordering::Relaxed) < 3)
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        );
        tokio::task::yield_now().await;
    }
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        tokio::time::timeout(hang, t)
            .await
            .expect("task ends")
            .unwrap();
    }
    assert_eq!(
        client.session_id(),
        session,
        "the session survived the restart"
    );
    assert_eq!(client.state(), SessionState::Connected);
    eprintln!(
        "ok {}, errors {:?}",
        tally.ok.load(Ordering::Relaxed),
        tally.errors.lock().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_tasks_sharing_one_client_through_a_server_restart_all_end_and_recover() {
    run(Fault::Restart).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_tasks_sharing_one_client_through_a_frozen_server_all_end_and_recover() {
    run(Fault::Pause).await;
}
