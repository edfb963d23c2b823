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

use std::time::Duration;

use sim_harness::{
    explore, run, running, schedule_faults, server_faults, Holders, Host, Reconnecting, World,
};
use zookeeper_recipes::{Holding, Semaphore};

const CONTENDERS: usize = 4;
const LEASES: usize = 2;
const SESSION: Duration = Duration::from_millis(2000);

fn world(seed: u64) -> World<'static> {
    let mut world = World::new(seed, server_faults());
    let holders = Holders::default();
    let hosts = world.hosts("s", CONTENDERS, 977, |host| {
        contender(host, holders.clone())
    });
    schedule_faults(&mut world, hosts);
    world
}

async fn contender(host: Host, holders: Holders<()>) -> turmoil::Result {
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
        let Ok(semaphore) = Semaphore::new(&c, "/sem", LEASES) else {
            return Err("a valid path".into());
        };
        match semaphore.acquire_timeout(Duration::from_secs(3)).await {
            Ok(Some(lease)) => {
                server.note(format!("{who}: lease {}", lease.path()));
                for _ in 0..1 + rng.below(4) {
                    if lease.state() != Holding::Held {
                        server.note(format!("{who}: stops, lease {}", lease.state()));
                        break;
                    }
                    let live = holders.acting(i, (), &c, &record);
                    if live.len() > LEASES {
                        record.violated(
                            &server,
                            format!(
                                "{who} at {:?}: {} holders can act at once: {live:?}",
                                sim_harness::now(),
                                live.len()
                            ),
                        );
                    }
                    record.step();
                    tokio::time::sleep(Duration::from_millis(rng.below(400))).await;
                }
                // It acts no more from here: the lease goes, and another holder may act,
                // before the release returns.
                holders.released(i);
                let _ = lease.release().await;
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
fn semaphore_never_grants_more_than_its_leases() {
    explore("sim_semaphore", 200, |seed| run(world(seed)));
}

#[test]
#[ignore = "long mode: ZK_SIM_SEEDS seeds (default 5000)"]
fn semaphore_never_grants_more_than_its_leases_long() {
    explore("sim_semaphore", 5000, |seed| run(world(seed)));
}
