//! The semaphore under deterministic simulation: more contenders than leases take and return
//! leases while the network partitions, links hold, connections drop, sessions expire and
//! replies are lost or late.
//!
//! Invariant, checked at every work step: no more than `LEASES` holders can still act. A
//! holder can act from its grant until it releases, or until the lease of its session runs
//! out (`Client::lease_deadline`, before which no server can have expired the session), in
//! simulated time; a holder works only while its lease reads `Held`. A session the schedule
//! expires by force, before its timeout, is left out: its holder cannot know in time.

mod sim_harness;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use sim_harness::{connect, explore, run, schedule_faults, World, RUN_FOR};
use zookeeper_recipes::{LockState, Semaphore};
use zookeeper_testkit::sim::{Faults, SimRng};

const CONTENDERS: usize = 4;
const LEASES: usize = 2;
const SESSION: Duration = Duration::from_millis(2000);

/// Simulated time: every host of the world starts with the simulation.
fn now() -> Duration {
    turmoil::elapsed()
}

/// Holders that can still act: contender -> (session, until when in simulated time).
type Holders = Arc<StdMutex<BTreeMap<usize, (i64, Duration)>>>;

fn world(seed: u64) -> World<'static> {
    let faults = Faults {
        lose_reply_after_apply: 0.02,
        slow_reply: 0.05,
        slow_reply_max: Duration::from_millis(300),
    };
    let mut world = World::new(seed, faults);
    let holders: Holders = Arc::default();
    let hosts: Vec<String> = (0..CONTENDERS).map(|i| format!("s{i}")).collect();
    for (i, host) in hosts.iter().enumerate() {
        let (server, record, holders) =
            (world.server.clone(), world.record.clone(), holders.clone());
        let mut rng = SimRng::new(seed.wrapping_mul(977).wrapping_add(i as u64));
        let who = host.clone();
        world.sim.client(host.as_str(), async move {
            let start = tokio::time::Instant::now();
            let mut client = None;
            while start.elapsed() < RUN_FOR {
                let c = match client.take() {
                    Some(c) => c,
                    None => match connect(rng.next_u64(), SESSION).await {
                        Ok(c) => c,
                        Err(_) => continue,
                    },
                };
                let Ok(semaphore) = Semaphore::new(&c, "/sem", LEASES) else {
                    return Err("a valid path".into());
                };
                match semaphore.acquire_timeout(Duration::from_secs(3)).await {
                    Ok(Some(lease)) => {
                        server.note(format!("{who}: lease {}", lease.path()));
                        for _ in 0..1 + rng.below(4) {
                            if lease.state() != LockState::Held {
                                server.note(format!("{who}: stops, lease {}", lease.state()));
                                break;
                            }
                            // Until when this holder may act without looking again.
                            let until = c.lease_deadline().map_or(now(), |d| {
                                now()
                                    + d.saturating_duration_since(
                                        tokio::time::Instant::now().into_std(),
                                    )
                            });
                            {
                                let mut h = holders.lock().unwrap();
                                h.insert(i, (c.session_id().0, until));
                                let t = now();
                                // A session expired by force promised nothing: its holder finds out
                                // late, and only fencing could refuse it.
                                let live: Vec<_> = h
                                    .iter()
                                    .filter(|(_, &(s, u))| u > t && !record.was_forced(s))
                                    .collect();
                                if live.len() > LEASES {
                                    record.violated(
                                        &server,
                                        format!(
                                            "{who} at {t:?}: {} holders can act at once: {live:?}",
                                            live.len()
                                        ),
                                    );
                                }
                            }
                            record.step();
                            tokio::time::sleep(Duration::from_millis(rng.below(400))).await;
                        }
                        let released = lease.release().await;
                        // Released: no longer a holder (a failed release leaves the lease to run
                        // out, as recorded).
                        if released.is_ok() {
                            holders.lock().unwrap().remove(&i);
                        }
                    }
                    Ok(None) => {}
                    Err(e) => server.note(format!("{who}: acquire failed: {e}")),
                }
                if !c.state().is_terminal() {
                    client = Some(c);
                }
                tokio::time::sleep(Duration::from_millis(rng.below(200))).await;
            }
            Ok(())
        });
    }
    schedule_faults(&mut world, hosts);
    world
}

#[test]
fn semaphore_never_grants_more_than_its_leases() {
    explore("sim_semaphore", 200, |seed| run(world(seed)));
}

#[test]
#[ignore = "long mode: ZK_SIM_SEEDS seeds (default 5000)"]
fn semaphore_never_grants_more_than_its_leases_long() {
    explore("sim_semaphore", 5000, |seed| run(world(seed)));
}
