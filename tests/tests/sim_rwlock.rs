//! The read-write lock under deterministic simulation: readers and writers on hosts of their
//! own under the same fault schedules as the other workloads.
//!
//! Invariant, checked at every work step: never a writer beside another holder (reader or
//! writer) that can still act. A holder can act from its grant until it releases, or until
//! its session's lease (`Client::lease_deadline`) runs out, in simulated time; it works only
//! while its guard reads `Held`. A session the schedule expires by force is left out: its
//! holder cannot know in time.

mod sim_harness;

use std::time::Duration;

use sim_harness::{
    explore, run, running, schedule_faults, server_faults, Holders, Host, Reconnecting, World,
};
use zookeeper_recipes::{Holding, ReadWriteLock};

const CONTENDERS: usize = 4;
const SESSION: Duration = Duration::from_millis(2000);

fn world(seed: u64) -> World<'static> {
    let mut world = World::new(seed, server_faults());
    // Each holder's kind: a writer or not.
    let holders = Holders::default();
    let hosts = world.hosts("rw", CONTENDERS, 7919, |host| {
        contender(host, holders.clone())
    });
    schedule_faults(&mut world, hosts);
    world
}

async fn contender(host: Host, holders: Holders<bool>) -> turmoil::Result {
    let Host {
        who,
        index: i,
        server,
        record,
        mut rng,
    } = host;
    let mut session = Reconnecting::new(SESSION);
    while running() {
        let Some(c) = session.client(&mut rng).await else {
            continue;
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
                let role = if writer { "writes" } else { "reads" };
                server.note(format!("{who}: {role} {}", guard.path()));
                for _ in 0..1 + rng.below(4) {
                    if guard.state() != Holding::Held {
                        server.note(format!("{who}: stops, guard {}", guard.state()));
                        break;
                    }
                    let live = holders.acting(i, writer, &c, &record);
                    let writers = live.iter().filter(|(_, w, _, _)| *w).count();
                    if writers > 0 && live.len() > 1 {
                        record.violated(
                            &server,
                            format!(
                                "{who} at {:?}: a writer beside other holders: {live:?}",
                                sim_harness::now()
                            ),
                        );
                    }
                    record.step();
                    tokio::time::sleep(Duration::from_millis(rng.below(400))).await;
                }
                // It acts no more from here: the node goes, and the next holder may act,
                // before the release returns.
                holders.released(i);
                let _ = guard.release().await;
            }
            Ok(None) => {}
            Err(e) => server.note(format!("{who}: acquire failed: {e}")),
        }
        session.keep(c);
        tokio::time::sleep(Duration::from_millis(rng.below(200))).await;
    }
    Ok(())
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
