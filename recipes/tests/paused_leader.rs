//! A leader whose process stood still past its session timeout runs no step of its work after
//! it resumes. The pause is the whole runtime blocked (a current-thread runtime whose one
//! thread sleeps), as a stopped process is: the work's timer comes due during it, the lease
//! runs out during it, and on resuming both are ready at once. The work must lose.

mod common;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use common::{bounded, chroot_connect, client_with_session};
use zookeeper_recipes::{Holding, LeaderSelector};

/// The session timeout: short, so that each trial's pause is short.
const SESSION: Duration = Duration::from_millis(1000);
/// The pause: the session timeout and half of it again, so that the lease has run out by the
/// clock whatever the last reply's timing.
const PAUSE: Duration = Duration::from_millis(1500);

/// Steps of the work: (term, when).
type Steps = Arc<StdMutex<Vec<(u64, Instant)>>>;

async fn one_trial(trial: usize) {
    let connect = chroot_connect(&format!("paused_leader_{trial}"));
    let client = client_with_session(&connect, SESSION).await;
    let steps: Steps = Arc::default();
    let (stepped, mut first_step) = tokio::sync::watch::channel(0u64);
    let recorded = steps.clone();
    let selector = LeaderSelector::builder(&client, "/election")
        .id("paused")
        .auto_requeue(true)
        .start(move |context| {
            let steps = recorded.clone();
            let stepped = stepped.clone();
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    steps.lock().unwrap().push((context.term(), Instant::now()));
                    stepped.send_replace(context.term());
                }
            }
        })
        .unwrap();
    let term = *bounded("a step of the work", first_step.wait_for(|t| *t > 0))
        .await
        .unwrap();

    // Stand still: nothing of this runtime runs, as in a stopped process.
    std::thread::sleep(PAUSE);
    let resumed = Instant::now();

    let mut changes = selector.changes();
    bounded("the term to end", async {
        while let Some(state) = changes.next().await {
            if state != Holding::Held {
                break;
            }
        }
    })
    .await;
    let late: Vec<_> = steps
        .lock()
        .unwrap()
        .iter()
        .filter(|(t, at)| *t == term && *at >= resumed)
        .map(|(_, at)| at.duration_since(resumed))
        .collect();
    assert!(
        late.is_empty(),
        "trial {trial}: term {term} stepped after the pause, at {late:?} after resuming"
    );
    selector.close().await;
    client.close().await;
}

#[test]
fn a_leader_paused_past_its_session_runs_no_step_after_resuming() {
    for trial in 0..20 {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(one_trial(trial));
    }
}
