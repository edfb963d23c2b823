//! The leader selector under deterministic simulation: participants on hosts of their own run
//! a leader's work for every term they win, queueing again after each, while the network
//! partitions, links hold, connections drop, sessions expire, replies are lost or late, and
//! the work itself stalls past the session timeout (a pause: the selector must cancel it, never
//! let it step again). Half the participants cancel on suspension (the default), half only on
//! loss.
//!
//! Invariants, checked at every step of a leader's work: no other leader's work is running
//! (the work of a term starts after the previous term's work was dropped); the model server
//! agrees that this term leads (its node is the first of the election's queue); the term's
//! lock reads `Held` (or, for a participant that cancels on loss only, not `Lost`); each term's
//! fencing token is above every earlier term's. A session the schedule expires by force,
//! before its timeout, is the one case no lease foresees: its leader finds out late, and only
//! fencing could refuse it; those checks are waived for it.

mod sim_harness;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use sim_harness::{
    assert_replays_exactly, connect, explore, run, running, schedule_faults, server_faults, Host,
    Record, World,
};
use zookeeper_recipes::{CancelOn, Holding, LeaderContext, LeaderSelector};
use zookeeper_testkit::sim::{SimRng, SimServer};

const PARTICIPANTS: usize = 3;
const SESSION: Duration = Duration::from_millis(2000);
const ELECTION: &str = "/election";

/// The work running now, if any, and the newest term begun.
#[derive(Default)]
struct Leading {
    /// (participant, token, session) of the work running.
    running: Option<(String, i64, i64)>,
    newest_term: i64,
}

type Shared = Arc<StdMutex<Leading>>;

/// A term's work, in the shared record from its first step until it is dropped (returned or
/// cancelled).
struct Running {
    shared: Shared,
    token: i64,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut l = self.shared.lock().unwrap();
        if l.running.as_ref().is_some_and(|r| r.1 == self.token) {
            l.running = None;
        }
    }
}

fn world(seed: u64) -> World<'static> {
    let mut world = World::new(seed, server_faults());
    let shared = Shared::default();
    let hosts = world.hosts("l", PARTICIPANTS, 4099, |host| {
        participant(host, shared.clone())
    });
    schedule_faults(&mut world, hosts);
    world
}

async fn participant(host: Host, shared: Shared) -> turmoil::Result {
    let Host {
        who,
        index,
        server,
        record,
        mut rng,
    } = host;
    let cancel_on = if index % 2 == 0 {
        CancelOn::Suspended
    } else {
        CancelOn::Lost
    };
    while running() {
        let Ok(client) = connect(rng.next_u64(), SESSION).await else {
            continue;
        };
        let mut terms = SimRng::new(rng.next_u64());
        let work = {
            let (who, server, record, shared) =
                (who.clone(), server.clone(), record.clone(), shared.clone());
            move |ctx: LeaderContext| {
                let steps = SimRng::new(terms.next_u64());
                let (who, server, record, shared) =
                    (who.clone(), server.clone(), record.clone(), shared.clone());
                async move {
                    let term = Term {
                        who,
                        server,
                        record,
                        shared,
                        cancel_on,
                    };
                    term.work(ctx, steps).await;
                }
            }
        };
        let Ok(selector) = LeaderSelector::builder(&client, ELECTION)
            .id(&who)
            .auto_requeue(true)
            .cancel_on(cancel_on)
            .start(work)
        else {
            return Err("a valid path".into());
        };
        // Take part for a while, or until the session ends under the selector.
        let stay = Duration::from_millis(1000 + rng.below(4000));
        let since = tokio::time::Instant::now();
        while running() && since.elapsed() < stay {
            if matches!(selector.state(), Holding::Lost(_)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        server.note(format!("{who}: leaves, selector {}", selector.state()));
        selector.close().await;
        client.close().await;
        tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
    }
    Ok(())
}

/// One term's work, with what it checks.
struct Term {
    who: String,
    server: SimServer,
    record: Record,
    shared: Shared,
    cancel_on: CancelOn,
}

impl Term {
    async fn work(self, ctx: LeaderContext, mut rng: SimRng) {
        let Term {
            who,
            server,
            record,
            shared,
            cancel_on,
        } = self;
        let token = ctx.fencing_token().0;
        let session = ctx.client().session_id().0;
        server.note(format!(
            "{who}: term {} begins, token {token:#x}",
            ctx.term()
        ));
        let _running = {
            let mut l = shared.lock().unwrap();
            if let Some((other, other_token, other_session)) = l.running.clone() {
                if !record.was_forced(other_session) {
                    record.violated(
                        &server,
                        format!(
                            "{who}'s work (token {token:#x}) began while {other}'s \
                             (token {other_token:#x}) ran"
                        ),
                    );
                }
            }
            if token <= l.newest_term {
                record.violated(
                    &server,
                    format!(
                        "{who} leads with token {token:#x} after a term of {:#x}",
                        l.newest_term
                    ),
                );
            }
            l.newest_term = l.newest_term.max(token);
            l.running = Some((who.clone(), token, session));
            Running {
                shared: shared.clone(),
                token,
            }
        };
        for step in 0..1 + rng.below(6) {
            let forced = record.was_forced(session);
            let state = ctx.state();
            let trusted = match cancel_on {
                CancelOn::Lost => !matches!(state, Holding::Lost(_)),
                _ => state == Holding::Held,
            };
            if !trusted && !forced {
                record.violated(
                    &server,
                    format!("{who}'s work (token {token:#x}) stepped while its term was {state}"),
                );
            }
            let first = first_in_queue(&server);
            let ours = ctx.node().rsplit('/').next().map(str::to_owned);
            if first != ours && !forced {
                record.violated(
                    &server,
                    format!(
                        "{who}'s work (token {token:#x}) stepped while the server's queue \
                         began with {first:?}, not {ours:?}"
                    ),
                );
            }
            record.step();
            // Now and then a stall past the session timeout (a pause as the work sees it):
            // the selector must cancel the work meanwhile, never let it take the next step.
            let pause = if rng.below(8) == 0 {
                SESSION + Duration::from_millis(500 + rng.below(1000))
            } else {
                Duration::from_millis(rng.below(400))
            };
            if pause > SESSION {
                server.note(format!(
                    "{who}: work stalls for {pause:?} after step {step}"
                ));
            }
            tokio::time::sleep(pause).await;
        }
    }
}

/// The name of the first node in the election's queue, as the model server holds it
/// (Curator's lock names end in the sequence number).
fn first_in_queue(server: &SimServer) -> Option<String> {
    server
        .children(ELECTION)?
        .into_iter()
        .min_by_key(|name| name.rsplit('-').next().unwrap_or("").to_owned())
}

#[test]
fn at_most_one_leader_works_at_a_time() {
    explore("sim_selector", 100, |seed| run(world(seed)));
}

#[test]
#[ignore = "long mode: ZK_SIM_SEEDS seeds (default 5000)"]
fn at_most_one_leader_works_at_a_time_long() {
    explore("sim_selector", 5000, |seed| run(world(seed)));
}

/// A run is a function of its seed: seeds replayed after others in one process leave the
/// same traces as when they ran first.
#[test]
fn a_seed_replays_exactly() {
    assert_replays_exactly(&[3, 4, 5], world);
}
