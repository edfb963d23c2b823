//! The example of `docs/simulation.md`, run as a test: a user's service takes a lock and
//! writes to a fenced ledger, under the simulated server, while one instance is cut off by a
//! partition and stalls in a pause long enough for its session to expire.

// guide:start
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use zookeeper_recipes::{Holding, Mutex};
use zookeeper_testkit::sim::{SimOptions, SimServer};
use zookeeper_tokio::{Client, TurmoilConnector};

/// What the lock protects: a ledger that refuses writes from a holder older than one it has
/// seen (fencing), and remembers whether it ever had to.
#[derive(Default)]
struct Ledger {
    newest: i64,
    entries: Vec<(String, i64)>,
    refused: Vec<String>,
}

impl Ledger {
    fn append(&mut self, who: &str, token: i64) {
        if token < self.newest {
            self.refused
                .push(format!("{who} wrote with a stale token {token}"));
            return;
        }
        self.newest = token;
        self.entries.push((who.to_owned(), token));
    }
}

/// The service under test: take the lock, work while it is held, stop as soon as it is not.
async fn service(name: &str, client: Client, ledger: Arc<StdMutex<Ledger>>) {
    let mutex = Mutex::new(&client, "/locks/ledger").expect("a valid path");
    let Ok(guard) = mutex.acquire().await else {
        return;
    };
    for step in 0..10 {
        if guard.state() != Holding::Held {
            return; // no longer ours: someone else may hold it now
        }
        let token = guard.fencing_token().0;
        ledger.lock().unwrap().append(name, token);
        if name == "a" && step == 1 {
            // A pause (a long GC, a stalled VM) while the network is cut (below).
            tokio::time::sleep(Duration::from_secs(6)).await;
        } else {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let _ = guard.release().await;
}

#[test]
fn the_service_never_writes_after_losing_its_lock() {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(60))
        .rng_seed(7)
        .build();
    let server = SimServer::new(SimOptions::default());
    sim.host("zk", move || {
        let server = server.clone();
        async move { Ok(server.listen_turmoil(2181).await?) }
    });
    let ledger = Arc::new(StdMutex::new(Ledger::default()));
    for (name, seed) in [("a", 1), ("b", 2)] {
        let ledger = ledger.clone();
        sim.client(name, async move {
            if name == "b" {
                tokio::time::sleep(Duration::from_millis(50)).await; // "a" asks first
            }
            let client = Client::builder("zk:2181")
                .connector(TurmoilConnector) // the simulated network
                .rng_seed(seed) // a run is a function of its seeds
                .session_timeout(Duration::from_secs(2))
                .connect()
                .await?;
            service(name, client, ledger).await;
            Ok(())
        });
    }
    sim.client("faults", async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        turmoil::partition("a", "zk"); // "a" is cut off while it pauses
        tokio::time::sleep(Duration::from_secs(8)).await;
        turmoil::repair("a", "zk");
        Ok(())
    });
    sim.run().expect("the simulation ran");

    let ledger = ledger.lock().unwrap();
    assert!(ledger.refused.is_empty(), "{:?}", ledger.refused);
    // "b" took over once "a"'s session expired, with a newer token.
    assert!(
        ledger.entries.iter().any(|(who, _)| who == "b"),
        "{:?}",
        ledger.entries
    );
}
// guide:end

/// The guide shows this file's example as it is.
#[test]
fn the_guide_shows_this_example() {
    let this = include_str!("sim_example.rs");
    let start = this.find("// guide:start\n").unwrap() + "// guide:start\n".len();
    let end = this.find("// guide:end").unwrap();
    let guide = include_str!("../../docs/simulation.md");
    assert!(
        guide.contains(&this[start..end]),
        "docs/simulation.md must show tests/tests/sim_example.rs between its guide markers"
    );
}
