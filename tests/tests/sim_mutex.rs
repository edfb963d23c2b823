//! The mutex under deterministic simulation: contenders on hosts of their own take the lock
//! and write to a fenced resource while the network partitions, links hold (a paused process
//! as the server sees it), connections drop, sessions expire, and replies are lost after the
//! server applied them or come late.
//!
//! Invariants, checked on every run: grants carry strictly increasing fencing tokens; the
//! resource never sees a write from a holder older than one it has already seen (never two
//! holders working at once: a holder works only while its guard reads `Held`), unless the
//! holder's session was expired by force before its timeout, which no lease can foresee and
//! only fencing refuses; every contender's calls end.

mod sim_harness;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use sim_harness::{
    assert_replays_exactly, explore, run, running, schedule_faults, server_faults, Host,
    Reconnecting, World,
};
use zookeeper_recipes::{Holding, Mutex};

const CONTENDERS: usize = 3;
const SESSION: Duration = Duration::from_millis(2000);

/// What the lock protects: remembers the newest grant it has seen and the holder writing.
#[derive(Default)]
struct Resource {
    last_grant: i64,
    last_write: i64,
}

fn workload(seed: u64) -> Result<u64, String> {
    run(world(seed))
}

fn world(seed: u64) -> World<'static> {
    let mut world = World::new(seed, server_faults());
    let resource = Arc::new(StdMutex::new(Resource::default()));
    let hosts = world.hosts("c", CONTENDERS, 31, |host| {
        contender(host, resource.clone())
    });
    schedule_faults(&mut world, hosts);
    world
}

async fn contender(host: Host, resource: Arc<StdMutex<Resource>>) -> turmoil::Result {
    let Host {
        who,
        server,
        record,
        mut rng,
        ..
    } = host;
    let mut session = Reconnecting::new(SESSION);
    while running() {
        let Some(c) = session.client(&mut rng).await else {
            continue;
        };
        let Ok(mutex) = Mutex::new(&c, "/lock") else {
            return Err("a valid path".into());
        };
        match mutex.acquire_timeout(Duration::from_secs(3)).await {
            Ok(Some(guard)) => {
                let token = guard.fencing_token().0;
                server.note(format!("{who}: granted token {token:#x}"));
                {
                    let mut r = resource.lock().unwrap();
                    if token <= r.last_grant {
                        record.violated(
                            &server,
                            format!("{who} granted token {token:#x} after {:#x}", r.last_grant),
                        );
                    }
                    r.last_grant = r.last_grant.max(token);
                }
                for _ in 0..1 + rng.below(4) {
                    if guard.state() != Holding::Held {
                        server.note(format!("{who}: stops, guard {}", guard.state()));
                        break;
                    }
                    {
                        let mut r = resource.lock().unwrap();
                        if token < r.last_write || token < r.last_grant {
                            let what = format!(
                                "{who} wrote with token {token:#x} while {:#x} was granted",
                                r.last_grant
                            );
                            if record.was_forced(c.session_id().0) {
                                // Its session was expired by force: only fencing can refuse
                                // it, and here it does.
                                server.note(format!("{what}: refused by fencing"));
                                break;
                            }
                            record.violated(&server, what);
                        }
                        r.last_write = token;
                    }
                    record.step();
                    tokio::time::sleep(Duration::from_millis(rng.below(400))).await;
                }
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
fn mutex_holds_under_faults() {
    explore("sim_mutex", 300, workload);
}

/// A run is a function of its seed: seeds replayed after others in one process leave the
/// same traces as when they ran first.
#[test]
fn a_seed_replays_exactly() {
    assert_replays_exactly(&[11, 12, 13], world);
}

#[test]
#[ignore = "long mode: ZK_SIM_SEEDS seeds (default 5000)"]
fn mutex_holds_under_faults_long() {
    explore("sim_mutex", 5000, workload);
}
