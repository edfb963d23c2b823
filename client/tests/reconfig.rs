//! Ensemble changes against real reconfigurable ensembles: reading the configuration under a
//! chroot, reconfig (incremental and full, with versions), a client that keeps working and
//! follows the membership while the ensemble grows and shrinks, and many clients spreading
//! over new members.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{init_tracing, within};
use zookeeper_testkit::{ReconfigEnsemble, Role, SUPER_PASSWORD, SUPER_USER};
use zookeeper_tokio::{
    Client, CreateOptions, EnsembleConfig, Error, ErrorKind, EventType, HostPort,
};

/// Bound on waiting for the ensemble or the clients to settle after a change.
const SETTLE: Duration = Duration::from_secs(60);

async fn admin(ensemble: &ReconfigEnsemble) -> Client {
    Client::builder(&ensemble.connect_string())
        .session_timeout(Duration::from_secs(20))
        .digest_auth(SUPER_USER, SUPER_PASSWORD)
        .connect()
        .await
        .unwrap()
}

/// Retries a reconfig while the ensemble says "not yet" (no synced quorum, another reconfig).
async fn reconfig_until_done<F, Fut>(what: &str, mut attempt: F) -> EnsembleConfig
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(EnsembleConfig, zookeeper_tokio::Stat), Error>>,
{
    let start = Instant::now();
    loop {
        match attempt().await {
            Ok((config, _)) => return config,
            Err(e) if e.is_retryable() && start.elapsed() < SETTLE => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

fn addr_set(hosts: &[HostPort]) -> BTreeSet<String> {
    hosts.iter().map(HostPort::to_addr_string).collect()
}

fn ensemble_set(ensemble: &ReconfigEnsemble, ids: &[u32]) -> BTreeSet<String> {
    ids.iter()
        .map(|id| ensemble.addr(*id).unwrap().to_string())
        .collect()
}

/// Waits until `client`'s server list is exactly the given members' client addresses.
async fn wait_servers(client: &Client, want: &BTreeSet<String>) {
    let start = Instant::now();
    while addr_set(&client.servers()) != *want {
        assert!(
            start.elapsed() < SETTLE,
            "server list {:?}, want {want:?}",
            client.servers()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A client writing and reading in a loop until told to stop; counts what succeeded and
/// fails the test on any error a caller could not simply retry.
struct Worker {
    done: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<Error>>,
}

impl Worker {
    fn start(client: Client) -> Worker {
        let done = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (d, s) = (done.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut retried = Vec::new();
            let mut n = 0u64;
            while !s.load(Ordering::Relaxed) {
                n += 1;
                let value = n.to_string();
                let result = async {
                    client.set_data("/counter", value.as_bytes(), None).await?;
                    let (data, _) = client.get_data("/counter").await?;
                    Ok::<_, Error>(data)
                }
                .await;
                match result {
                    Ok(data) => {
                        assert_eq!(&data[..], value.as_bytes(), "read your own write");
                        d.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) if e.is_retryable() => {
                        retried.push(e);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Err(e) => panic!("the worker failed: {e}"),
                }
            }
            retried
        });
        Worker { done, stop, task }
    }

    /// Waits until the worker completes `n` more rounds.
    async fn progresses(&self, n: usize, when: &str) {
        let target = self.done.load(Ordering::Relaxed) + n;
        let start = Instant::now();
        while self.done.load(Ordering::Relaxed) < target {
            assert!(start.elapsed() < SETTLE, "the worker stalled {when}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn finish(self) -> (usize, Vec<Error>) {
        self.stop.store(true, Ordering::Relaxed);
        let retried = self.task.await.unwrap();
        (self.done.load(Ordering::Relaxed), retried)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_working_client_follows_the_ensemble_from_3_to_5_and_back() {
    init_tracing();
    let ensemble = ReconfigEnsemble::start(3).await.unwrap();
    let admin = admin(&ensemble).await;
    admin
        .create("/app", b"", &CreateOptions::persistent())
        .await
        .unwrap();
    admin
        .create("/app/counter", b"0", &CreateOptions::persistent())
        .await
        .unwrap();

    // The configuration reads the same under a chroot.
    let chrooted = Client::connect(&format!("{}/app", ensemble.connect_string()))
        .await
        .unwrap();
    let (config, _) = chrooted.get_config().await.unwrap();
    let ids: Vec<u64> = config.members.iter().map(|m| m.id).collect();
    assert_eq!(ids, vec![1, 2, 3]);
    assert!(config.version > 0);
    assert_eq!(
        addr_set(&config.client_hosts()),
        ensemble_set(&ensemble, &[1, 2, 3])
    );
    let (_, _, config_watch) = chrooted.get_config_and_watch().await.unwrap();

    let worker_client = Client::builder(&format!("{}/app", ensemble.connect_string()))
        .session_timeout(Duration::from_secs(20))
        .follow_config(true)
        .connect()
        .await
        .unwrap();
    let session = worker_client.session_id();
    let worker = Worker::start(worker_client.clone());
    worker.progresses(20, "before any change").await;

    // Grow to five with our own reconfig.
    let four = ensemble.start_member(Role::Participant).await.unwrap();
    let five = ensemble.start_member(Role::Participant).await.unwrap();
    let specs = [
        ensemble.server_spec(four).unwrap(),
        ensemble.server_spec(five).unwrap(),
    ];
    let joining: Vec<&str> = specs.iter().map(String::as_str).collect();
    let grown = reconfig_until_done("growing", || {
        admin.reconfig_incremental(&joining, &[], None)
    })
    .await;
    let ids: Vec<u64> = grown.members.iter().map(|m| m.id).collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5]);
    let event = within("config watch", config_watch).await;
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    assert_eq!(event.path, "/zookeeper/config", "never chroot-stripped");
    ensemble.wait_serving(four).await.unwrap();
    ensemble.wait_serving(five).await.unwrap();
    wait_servers(&worker_client, &ensemble_set(&ensemble, &[1, 2, 3, 4, 5])).await;
    worker.progresses(20, "after growing").await;

    // A full reconfig against an old version is refused.
    let stale = admin
        .reconfig_members(&joining, Some(config.version))
        .await
        .unwrap_err();
    assert_eq!(stale, ErrorKind::BadVersion);

    // Shrink back, against the current version.
    let (current, _) = admin.get_config().await.unwrap();
    assert_eq!(current.version, grown.version);
    let shrunk = reconfig_until_done("shrinking", || {
        admin.reconfig_incremental(&[], &[4, 5], Some(current.version))
    })
    .await;
    assert_eq!(shrunk.members.len(), 3);
    wait_servers(&worker_client, &ensemble_set(&ensemble, &[1, 2, 3])).await;
    ensemble.stop(four).unwrap();
    ensemble.stop(five).unwrap();
    worker
        .progresses(20, "after shrinking and stopping the leavers")
        .await;

    let (done, retried) = worker.finish().await;
    assert!(done >= 60, "{done}");
    assert_eq!(
        worker_client.session_id(),
        session,
        "one session throughout"
    );
    let connected = worker_client.connected_server().unwrap();
    assert!(ensemble_set(&ensemble, &[1, 2, 3]).contains(&connected.to_addr_string()));
    eprintln!(
        "worker: {done} rounds, {} retried ({:?})",
        retried.len(),
        retried
            .iter()
            .map(ToString::to_string)
            .collect::<BTreeSet<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_clients_spread_over_two_new_members() {
    init_tracing();
    let ensemble = ReconfigEnsemble::start(3).await.unwrap();
    let connect = ensemble.connect_string();
    let mut clients = Vec::new();
    for _ in 0..30 {
        clients.push(
            Client::builder(&connect)
                .session_timeout(Duration::from_secs(20))
                .follow_config(true)
                .connect()
                .await
                .unwrap(),
        );
    }
    let four = ensemble.start_member(Role::Participant).await.unwrap();
    ensemble.join(four).await.unwrap();
    let five = ensemble.start_member(Role::Participant).await.unwrap();
    ensemble.join(five).await.unwrap();
    let all = ensemble_set(&ensemble, &[1, 2, 3, 4, 5]);
    for client in &clients {
        wait_servers(client, &all).await;
    }

    // Count sessions per member from the servers' side once every client is connected
    // and every session is seen exactly once.
    let start = Instant::now();
    let per_member = loop {
        let mut counts = Vec::new();
        for id in 1..=5 {
            let cons = zookeeper_testkit::cons(ensemble.addr(id).unwrap())
                .await
                .unwrap_or_default();
            counts.push(cons.iter().filter(|c| c.session_id.is_some()).count());
        }
        let settled = clients.iter().all(|c| c.state().is_connected());
        if settled && counts.iter().sum::<usize>() == clients.len() {
            break counts;
        }
        assert!(start.elapsed() < SETTLE, "not settled: {counts:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("sessions per member after growing 3 -> 5: {per_member:?}");
    // Each client ends on a new member with probability 1 − 3/5 (a quarter moves to the
    // fourth, then a fifth of all to the fifth): 12 of 30 on average, fewer than 3 with
    // odds of about 1 in 20,000. Without rebalancing they would hold none.
    let on_new = per_member[3] + per_member[4];
    assert!(on_new >= 3, "{per_member:?}");
    assert!(per_member.iter().all(|n| *n <= 15), "{per_member:?}");
}
