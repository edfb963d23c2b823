//! The client's own promises under deterministic simulation: hosts pipeline batches of calls
//! (writes, reads, syncs, calls bound to fail) on one session each, without waiting between
//! them, while the network partitions, links hold, connections drop, the server restarts
//! (every connection dropped and the server unreachable for a while), sessions expire, and
//! replies are lost after the server applied them or come late.
//!
//! Invariants, checked on every run:
//! - every call ends, with a result or a typed error, within a hang bound far past the
//!   request timeout and the session timeout;
//! - calls complete in call order, per session;
//! - call order is wire order: the writes that succeeded have strictly increasing zxids in
//!   call order over the whole session, and a read sees the latest write called before it
//!   (when that write's outcome is known);
//! - errors are those a caller is told to expect: the call's own (`NoNode` for a missing
//!   node, `NodeExists`), a retryable one, or the session's end; a write that failed after
//!   it was sent says its outcome is unknown.

mod sim_harness;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use sim_harness::{
    explore, run, running, schedule_faults_with_restarts, Host, Reconnecting, Record, World,
};
use zookeeper_testkit::ended_within;
use zookeeper_testkit::sim::{Faults, SimServer};
use zookeeper_tokio::{CreateOptions, Error, ErrorKind};

const HOSTS: usize = 2;
const SESSION: Duration = Duration::from_millis(2000);
/// Far past anything a call may take: the request timeout (5 s), a reconnect within the
/// session timeout, and the session's expiry.
const HANG_BOUND: Duration = Duration::from_secs(30);

fn world(seed: u64) -> World<'static> {
    let faults = Faults {
        lose_reply_after_apply: 0.03,
        slow_reply: 0.1,
        slow_reply_max: Duration::from_millis(500),
    };
    let mut world = World::new(seed, faults);
    let hosts = world.hosts("h", HOSTS, 6151, caller);
    schedule_faults_with_restarts(&mut world, hosts);
    world
}

/// What a call gave, as the checks need it.
#[derive(Debug)]
enum Outcome {
    /// A write that succeeded, with its zxid.
    Wrote(i64),
    /// A read of the host's node, with the zxid of the node's last change it saw.
    Read(i64),
    /// A call with nothing to compare.
    Done,
    Failed(Error),
}

/// The kinds of call a batch is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    SetData,
    CreateSequential,
    GetData,
    Exists,
    Sync,
    DeleteMissing,
}

const CALLS: [Call; 6] = [
    Call::SetData,
    Call::CreateSequential,
    Call::GetData,
    Call::Exists,
    Call::Sync,
    Call::DeleteMissing,
];

type Pending = Pin<Box<dyn Future<Output = Option<Outcome>>>>;

async fn caller(host: Host) -> turmoil::Result {
    let Host {
        who,
        server,
        record,
        mut rng,
        ..
    } = host;
    let node = format!("/p-{who}");
    let mut session = Reconnecting::new(SESSION);
    let mut seen = Seen::default();
    while running() {
        let Some(c) = session.client(&mut rng).await else {
            continue;
        };
        if seen.session != c.session_id().0 {
            seen = Seen {
                session: c.session_id().0,
                ..Seen::default()
            };
        }
        match c.create(&node, b"", &CreateOptions::persistent()).await {
            Ok(_) => {}
            Err(e) if *e.kind() == ErrorKind::NodeExists => {}
            Err(_) => {
                session.keep(c);
                continue;
            }
        }
        // A batch, called in order without waiting in between.
        let n = 1 + rng.below(12) as usize;
        let calls: Vec<Call> = (0..n)
            .map(|_| CALLS[rng.below(CALLS.len() as u64) as usize])
            .collect();
        let mut pending: Vec<Pending> = Vec::with_capacity(n);
        for (i, &call) in calls.iter().enumerate() {
            let fut: Pending = match call {
                Call::SetData => {
                    let f = c.set_data(&node, format!("{i}").as_bytes(), None);
                    Box::pin(ended_within(HANG_BOUND, async move {
                        f.await
                            .map_or_else(Outcome::Failed, |s| Outcome::Wrote(s.mzxid))
                    }))
                }
                Call::CreateSequential => {
                    let f = c.create(
                        &format!("{node}/s-"),
                        b"",
                        &CreateOptions::persistent_sequential(),
                    );
                    Box::pin(ended_within(HANG_BOUND, async move {
                        f.await
                            .map_or_else(Outcome::Failed, |(_, s)| Outcome::Wrote(s.czxid))
                    }))
                }
                Call::GetData => {
                    let f = c.get_data(&node);
                    Box::pin(ended_within(HANG_BOUND, async move {
                        f.await
                            .map_or_else(Outcome::Failed, |(_, s)| Outcome::Read(s.mzxid))
                    }))
                }
                Call::Exists => {
                    let f = c.exists(&node);
                    Box::pin(ended_within(HANG_BOUND, async move {
                        match f.await {
                            Ok(Some(s)) => Outcome::Read(s.mzxid),
                            Ok(None) => Outcome::Read(-1),
                            Err(e) => Outcome::Failed(e),
                        }
                    }))
                }
                Call::Sync => {
                    let f = c.sync(&node);
                    Box::pin(ended_within(HANG_BOUND, async move {
                        f.await.map_or_else(Outcome::Failed, |()| Outcome::Done)
                    }))
                }
                Call::DeleteMissing => {
                    let f = c.delete(&format!("{node}/missing"), None);
                    Box::pin(ended_within(HANG_BOUND, async move {
                        f.await.map_or_else(Outcome::Failed, |()| Outcome::Done)
                    }))
                }
            };
            pending.push(fut);
        }
        let done = in_completion_order(pending).await;
        let check = Check {
            who: &who,
            server: &server,
            record: &record,
        };
        check.batch(&calls, done, &mut seen);
        session.keep(c);
        tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
    }
    Ok(())
}

/// Polls every call, always in call order, and returns their outcomes in the order they were
/// seen to end: a call seen to end before one called earlier completed out of order.
async fn in_completion_order(mut pending: Vec<Pending>) -> Vec<(usize, Option<Outcome>)> {
    let mut done: Vec<(usize, Option<Outcome>)> = Vec::new();
    let mut open: Vec<bool> = vec![true; pending.len()];
    std::future::poll_fn(|cx| {
        for (i, fut) in pending.iter_mut().enumerate() {
            if open[i] {
                if let Poll::Ready(outcome) = fut.as_mut().poll(cx) {
                    open[i] = false;
                    done.push((i, outcome));
                }
            }
        }
        if open.iter().any(|&o| o) {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    done
}

/// What a session's calls so far tell of what comes next.
#[derive(Default)]
struct Seen {
    session: i64,
    /// The zxid of the last write that succeeded.
    last_write: i64,
    /// The node's mzxid after the last `set_data` called, if its outcome is known: only this
    /// host changes the node's data.
    node_mzxid: Option<i64>,
}

struct Check<'a> {
    who: &'a str,
    server: &'a SimServer,
    record: &'a Record,
}

impl Check<'_> {
    fn violated(&self, what: String) {
        self.record
            .violated(self.server, format!("{}: {what}", self.who));
    }

    /// Checks one batch's outcomes against what the session did before.
    fn batch(&self, calls: &[Call], done: Vec<(usize, Option<Outcome>)>, seen: &mut Seen) {
        let order: Vec<usize> = done.iter().map(|(i, _)| *i).collect();
        if order.windows(2).any(|w| w[0] > w[1]) {
            self.violated(format!("calls {calls:?} completed in the order {order:?}"));
        }
        let mut by_call: Vec<Option<Outcome>> = (0..calls.len()).map(|_| None).collect();
        for (i, outcome) in done {
            match outcome {
                None => self.violated(format!(
                    "call {i} ({:?}) did not end within {HANG_BOUND:?}",
                    calls[i]
                )),
                Some(o) => {
                    self.record.step();
                    by_call[i] = Some(o);
                }
            }
        }
        for (i, outcome) in by_call.into_iter().enumerate() {
            let call = calls[i];
            match outcome {
                // Hung (reported above): what it did is unknown.
                None if call == Call::SetData => seen.node_mzxid = None,
                None => {}
                Some(Outcome::Wrote(zxid)) => {
                    if zxid <= seen.last_write {
                        self.violated(format!(
                            "call {i} ({call:?}) wrote at zxid {zxid:#x}, not after an earlier \
                             call's write at {:#x}",
                            seen.last_write
                        ));
                    }
                    seen.last_write = zxid;
                    if call == Call::SetData {
                        seen.node_mzxid = Some(zxid);
                    }
                }
                Some(Outcome::Read(mzxid)) => {
                    if let Some(expected) = seen.node_mzxid {
                        if mzxid != expected {
                            self.violated(format!(
                                "call {i} ({call:?}) read the node as changed at {mzxid:#x}, \
                                 where the last set_data called before it wrote at \
                                 {expected:#x}"
                            ));
                        }
                    }
                }
                Some(Outcome::Done) => {}
                Some(Outcome::Failed(e)) => {
                    self.expect_error(i, call, &e);
                    if call == Call::SetData && e.is_outcome_unknown() {
                        seen.node_mzxid = None;
                    }
                }
            }
        }
    }

    fn expect_error(&self, i: usize, call: Call, e: &Error) {
        let kind = e.kind();
        let own = match call {
            Call::DeleteMissing => *kind == ErrorKind::NoNode,
            _ => false,
        };
        if !(own || kind.is_retryable() || kind.is_session_terminal()) {
            self.violated(format!(
                "call {i} ({call:?}) failed with an unexpected error: {e}"
            ));
        }
    }
}

#[test]
fn every_call_ends_in_call_order() {
    explore("sim_promises", 300, |seed| run(world(seed)));
}

#[test]
#[ignore = "long mode: ZK_SIM_SEEDS seeds (default 5000)"]
fn every_call_ends_in_call_order_long() {
    explore("sim_promises", 5000, |seed| run(world(seed)));
}
