//! A model server restart as a real server's: while the server is down no session expires
//! (its clock stands still with it), and once it is back every session it held has a fresh
//! full timeout, counted from its return. A client cut off from a running server for as
//! long loses its session, for contrast.

use std::collections::BTreeSet;
use std::time::Duration;

use zookeeper_testkit::sim::{SimOptions, SimServer};
use zookeeper_tokio::{Client, TurmoilConnector};

const TIMEOUT: Duration = Duration::from_secs(2);
/// The model checks for expiry every tick (`SimOptions::tick`, 200 ms).
const TICK: Duration = Duration::from_millis(200);

async fn hold_a_session() -> turmoil::Result {
    let client = Client::builder("zk:2181")
        .connector(TurmoilConnector)
        .rng_seed(1)
        .session_timeout(TIMEOUT)
        .connect()
        .await?;
    tokio::time::sleep(Duration::from_secs(30)).await;
    drop(client);
    Ok(())
}

fn live(server: &SimServer) -> BTreeSet<i64> {
    server.sessions().into_iter().collect()
}

#[test]
fn a_restart_gives_every_session_a_fresh_full_timeout() {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(60))
        .tick_duration(Duration::from_millis(10))
        .rng_seed(1)
        .build();
    let server = SimServer::new(SimOptions::default());
    let host = server.clone();
    sim.host("zk", move || {
        let server = host.clone();
        async move {
            server.listen_turmoil(2181).await?;
            Ok(())
        }
    });
    sim.client("kept", hold_a_session());
    sim.client("cut", hold_a_session());
    sim.client("test", async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let both = live(&server);
        assert_eq!(both.len(), 2, "both sessions open");

        // A client cut off from a running server for three timeouts loses its session.
        turmoil::partition("cut", "zk");
        tokio::time::sleep(3 * TIMEOUT).await;
        let kept = live(&server);
        assert_eq!(
            kept.len(),
            1,
            "the cut-off session expired: {kept:?} of {both:?}"
        );

        // The server goes down for as long, with the other client cut off too (so that
        // nothing it sends after the restart counts): its session does not expire.
        turmoil::partition("kept", "zk");
        server.stop();
        tokio::time::sleep(3 * TIMEOUT).await;
        assert_eq!(
            live(&server),
            kept,
            "no session expires while the server is down"
        );

        // Back up: the session was last heard three timeouts ago, yet it has a full
        // timeout from now, and expires once that has passed without its client.
        server.start();
        tokio::time::sleep(TIMEOUT - 3 * TICK).await;
        assert_eq!(
            live(&server),
            kept,
            "a restored session lives a full timeout from the restart"
        );
        tokio::time::sleep(6 * TICK).await;
        assert!(
            live(&server).is_empty(),
            "a restored session still expires once its timeout has passed"
        );
        Ok(())
    });
    sim.run().expect("the simulation ran");
}
