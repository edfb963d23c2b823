//! One run: the ensemble, the contenders of both layouts, the faults, and the report.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_recipes::{Layout, Sessions};
use zookeeper_testkit::Ensemble;
use zookeeper_tokio::{Client, CreateOptions, ErrorKind};

use crate::faults::{kill_members, pause_holders, progress, OneAtATime};
use crate::options::{ContendOptions, RunOptions};
use crate::processes::{curator_classpath, Hub, PeerArgs, Process};
use crate::report::{summarize, Report};

/// One lock of the run: its path, its marker, its layout and who contends beside us.
struct LockUnderTest {
    name: &'static str,
    layout: Layout,
    lock: &'static str,
    marker: &'static str,
}

const LOCKS: [LockUnderTest; 2] = [
    LockUnderTest {
        name: "Curator",
        layout: Layout::Curator,
        lock: "/chaos/curator-lock",
        marker: "/chaos/curator-inside",
    },
    LockUnderTest {
        name: "kazoo",
        layout: Layout::Kazoo,
        lock: "/chaos/kazoo-lock",
        marker: "/chaos/kazoo-inside",
    },
];

pub async fn run(o: RunOptions) -> Result<Report, String> {
    let start = Instant::now();
    let classpath = tokio::task::spawn_blocking(curator_classpath);
    let ensemble = Ensemble::start(3).await.map_err(|e| e.to_string())?;
    let classpath = classpath.await.map_err(|e| e.to_string())??;
    let connect = ensemble.connect_string();
    progress(start, &format!("ensemble up: {connect}"));
    let probe =
        Sessions::connect(Client::builder(&connect).session_timeout(Duration::from_secs(20)))
            .await
            .map_err(|e| e.to_string())?;
    match probe
        .client()
        .create("/chaos", b"", &CreateOptions::persistent())
        .await
    {
        Ok(_) => {}
        Err(e) if e == ErrorKind::NodeExists => {}
        Err(e) => return Err(e.to_string()),
    }

    let hub = Hub::new();
    let mut ours = Vec::new();
    let mut peers = Vec::new();
    // Interleaved, so that the paused holders alternate between the layouts.
    for i in 0..o.rust {
        for l in &LOCKS {
            let prefix = if l.layout == Layout::Curator {
                "curator"
            } else {
                "kazoo"
            };
            let c = ContendOptions {
                connect: connect.clone(),
                lock: l.lock.into(),
                marker: l.marker.into(),
                layout: l.layout,
                who: format!("rust-{prefix}{i}"),
                hold: o.hold,
                session_timeout: o.session_timeout,
            };
            ours.push(Process::rust(&c, &hub).map_err(|e| e.to_string())?);
        }
    }
    for l in &LOCKS {
        let peer = PeerArgs {
            connect: connect.clone(),
            lock: l.lock.into(),
            marker: l.marker.into(),
            count: if l.layout == Layout::Curator {
                o.curator
            } else {
                o.kazoo
            },
            hold_ms: o.hold.as_millis(),
            session_ms: o.session_timeout.as_millis(),
        };
        if peer.count > 0 {
            let process = match l.layout {
                Layout::Curator => Process::curator(&classpath, &peer, &hub),
                Layout::Kazoo => Process::kazoo(&peer, &hub),
            };
            peers.push(process.map_err(|e| e.to_string())?);
        }
    }
    progress(start, "contenders started");

    let contending = Instant::now();
    let until = contending + o.duration;
    let mut skipped = 0;
    let one_at_a_time = OneAtATime::default();
    let (mut faults, pauses) = tokio::join!(
        kill_members(&ensemble, &probe, &o, start, until, &one_at_a_time),
        pause_holders(
            &mut ours,
            &hub,
            &probe,
            &o,
            start,
            until,
            &one_at_a_time,
            &mut skipped
        ),
    );
    faults.pauses_skipped = skipped;
    tokio::time::sleep_until(until).await;
    let duration = contending.elapsed();
    progress(start, "stopping the contenders");
    for p in ours.into_iter().chain(peers) {
        p.stop().await;
    }

    let journal = hub.journal.lock().unwrap_or_else(|e| e.into_inner());
    let locks = LOCKS
        .iter()
        .map(|l| {
            summarize(
                l.lock,
                l.name,
                journal.get(l.lock).unwrap_or(&Default::default()),
            )
        })
        .collect();
    Ok(Report {
        duration,
        session_timeout: o.session_timeout,
        tick: ensemble.options().tick_time(),
        locks,
        faults,
        pauses,
    })
}
