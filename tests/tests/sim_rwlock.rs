//! The read-write lock under deterministic simulation: readers and writers on hosts of their
//! own under the same fault schedules as the other workloads.
//!
//! Invariant, checked at every work step: never a writer beside another holder (reader or
//! writer) that can still act. A holder can act from its grant until it releases, or until
//! its session's lease (`Client::lease_deadline`) runs out, in simulated time; it works only
//! while its guard reads `Held`. A session the schedule expires by force is left out: its
//! holder cannot know in time.

mod sim_harness;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use sim_harness::{connect, explore, run, schedule_faults, World, RUN_FOR};
use zookeeper_recipes::{LockState, ReadWriteLock};
use zookeeper_testkit::sim::{Faults, SimRng};

const CONTENDERS: usize = 4;
const SESSION: Duration = Duration::from_millis(2000);

/// Simulated time: every host of the world starts with the simulation.
fn now() -> Duration {
    turmoil::elapsed()
}

/// Holders that can still act: contender -> (writer?, session, until when).
type Holders = Arc<StdMutex<BTreeMap<usize, (bool, i64, Duration)>>>;

fn world(seed: u64) -> World<'static> {
    let faults = Faults {
        lose_reply_after_apply: 0.02,
        slow_reply: 0.05,
        slow_reply_max: Duration::from_millis(300),
    };
    let mut world = World::new(seed, faults);
    let holders: Holders = Arc::default();
    let hosts: Vec<String> = (0..CONTENDERS).map(|i| format!("rw{i}")).collect();
    for (i, host) in hosts.iter().enumerate() {
        let (server, record, holders) =
            (world.server.clone(), world.record.clone(), holders.clone());
        let mut rng = SimRng::new(seed.wrapping_mul(7919).wrapping_add(i as u64));
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
                let Ok(lock) = ReadWriteLock::new(&c, "/rw") else {
                    return Err("a valid path".into());
                };
                let writer = rng.below(3) == 0;
                let acquired = if writer {
                    lock.write_timeout(Duration::from_secs(3)).await
                } else {
                    lock.read_timeout(Duration::from_secs(3)).await
                };
                match acquired {
                    Ok(Some(guard)) => {
                        server.note(format!("{who}: {} {}", if writer { "writes" } else { "reads" }, guard.path()));
                        for _ in 0..1 + rng.below(4) {
                            if guard.state() != LockState::Held {
                                server.note(format!("{who}: stops, guard {}", guard.state()));
                                break;
                            }
                            let until = c.lease_deadline().map_or(now(), |d| {
                                now() + d.saturating_duration_since(tokio::time::Instant::now().into_std())
                            });
                            {
                                let mut h = holders.lock().unwrap();
                                h.insert(i, (writer, c.session_id().0, until));
                                let t = now();
                                let live: Vec<_> = h
                                    .iter()
                                    .filter(|(_, &(_, s, u))| u > t && !record.was_forced(s))
                                    .collect();
                                let writers = live.iter().filter(|(_, &(w, _, _))| w).count();
                                if writers > 0 && live.len() > 1 {
                                    record.violated(
                                        &server,
                                        format!("{who} at {t:?}: a writer beside other holders: {live:?}"),
                                    );
                                }
                            }
                            record.step();
                            tokio::time::sleep(Duration::from_millis(rng.below(400))).await;
                        }
                        if guard.release().await.is_ok() {
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
fn rwlock_never_lets_a_writer_beside_another_holder() {
    explore("sim_rwlock", 200, |seed| run(world(seed)));
}

#[test]
#[ignore = "long mode: ZK_SIM_SEEDS seeds (default 5000)"]
fn rwlock_never_lets_a_writer_beside_another_holder_long() {
    explore("sim_rwlock", 5000, |seed| run(world(seed)));
}
