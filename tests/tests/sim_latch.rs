//! The leader latch under deterministic simulation: participants on hosts of their own lead
//! in turn and do work steps while the network partitions, links hold, connections drop,
//! sessions expire and replies are lost or late.
//!
//! Invariants, checked on every run: each term's fencing token is above every earlier
//! term's; no work step by a leader whose leadership is not `Held` at that instant (its
//! lease run out, its session gone), which the resource sees as a step with a token older
//! than the newest term.

mod sim_harness;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use sim_harness::{connect, explore, run, running, schedule_faults, server_faults, Host, World};
use zookeeper_recipes::{Holding, LeaderLatch};

const PARTICIPANTS: usize = 3;
const SESSION: Duration = Duration::from_millis(2000);

#[derive(Default)]
struct Resource {
    newest_term: i64,
}

fn world(seed: u64) -> World<'static> {
    let mut world = World::new(seed, server_faults());
    let resource = Arc::new(StdMutex::new(Resource::default()));
    let hosts = world.hosts("p", PARTICIPANTS, 131, |host| {
        participant(host, resource.clone())
    });
    schedule_faults(&mut world, hosts);
    world
}

async fn participant(host: Host, resource: Arc<StdMutex<Resource>>) -> turmoil::Result {
    let Host {
        who,
        server,
        record,
        mut rng,
        ..
    } = host;
    while running() {
        let Ok(client) = connect(rng.next_u64(), SESSION).await else {
            continue;
        };
        let Ok(latch) = LeaderLatch::start(&client, "/leader", &who).await else {
            continue;
        };
        // One participation: lead, pause, lead again (the same term while the node is the
        // same), until the latch is lost.
        let mut term = None;
        while running() {
            match latch.await_leadership_timeout(Duration::from_secs(2)).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) => break,
            }
            let token = latch.fencing_token().0;
            let new_term = term != Some(token);
            term = Some(token);
            server.note(format!("{who}: leads with token {token:#x}"));
            {
                let mut r = resource.lock().unwrap();
                if token < r.newest_term || (new_term && token == r.newest_term) {
                    record.violated(
                        &server,
                        format!(
                            "{who} leads with token {token:#x} after a term of {:#x}",
                            r.newest_term
                        ),
                    );
                }
                r.newest_term = r.newest_term.max(token);
            }
            for _ in 0..1 + rng.below(5) {
                if latch.state() != Holding::Held {
                    server.note(format!("{who}: stops, {:?}", latch.state()));
                    break;
                }
                {
                    let r = resource.lock().unwrap();
                    if token < r.newest_term {
                        let what = format!(
                            "{who} worked as leader with token {token:#x} during the term of {:#x}",
                            r.newest_term
                        );
                        if record.was_forced(client.session_id().0) {
                            // Expired by force: no lease foresees that.
                            server.note(format!("{what}: its session was expired by force"));
                        } else {
                            record.violated(&server, what);
                        }
                    }
                }
                record.step();
                tokio::time::sleep(Duration::from_millis(rng.below(400))).await;
            }
            if rng.below(2) == 0 {
                break;
            }
        }
        let _ = latch.resign().await;
        client.close().await;
        tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
    }
    Ok(())
}

#[test]
fn leader_latch_holds_under_faults() {
    explore("sim_latch", 300, |seed| run(world(seed)));
}

#[test]
#[ignore = "long mode: ZK_SIM_SEEDS seeds (default 5000)"]
fn leader_latch_holds_under_faults_long() {
    explore("sim_latch", 5000, |seed| run(world(seed)));
}
