//! A lock holder whose process stood still past its session timeout reads its lock lost on
//! the first look after resuming, whichever way it looks: the watcher from another OS thread
//! or from a task, the change stream, or a `biased` select of the loss against work that is
//! ready at the same moment. The pause is the whole runtime blocked (a current-thread runtime
//! whose one thread sleeps), as a stopped process is: no task runs during it, nor before the
//! look, so only a look that reads the lease clock itself can see the loss.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{bounded, chroot_connect, client_with_session};
use zookeeper_recipes::{Holding, LossReason, Mutex};

/// The session timeout: short, so that each trial's pause is short.
const SESSION: Duration = Duration::from_millis(1000);
/// The pause: the session timeout and half of it again, so that the lease has run out by the
/// clock whatever the last reply's timing.
const PAUSE: Duration = Duration::from_millis(1500);

const LOST: Holding = Holding::Lost(LossReason::LeaseExpired);

/// The first look after the pause.
#[derive(Clone, Copy, Debug)]
enum Look {
    /// `state_watcher().get()` on another OS thread, while the runtime's thread still stands.
    WatcherFromThread,
    /// `state_watcher().get()` from the task that stood still.
    WatcherFromTask,
    /// The first item of `state_changes()`, polled once.
    ChangeStream,
    /// `select! { biased; guard.lost(), work }` where the work is ready too.
    BiasedSelect,
}

/// One pause and one look; false, with nothing checked, when the lock was lost before the
/// pause (a machine starved past the whole session), which proves nothing.
async fn one_trial(trial: usize, look: Look) -> bool {
    let connect = chroot_connect(&format!("paused_holder_{trial}"));
    let client = client_with_session(&connect, SESSION).await;
    let mutex = Mutex::new(&client, "/lock").unwrap();
    let guard = bounded("acquire", mutex.acquire()).await.unwrap();
    let watcher = guard.state_watcher();
    let mut changes = guard.state_changes();
    // The current state first; a disconnect on a starved machine may make it `Suspended`,
    // which changes nothing below: the lease runs out during the pause either way.
    changes.next().await;
    let (ask, asked) = mpsc::channel::<()>();
    let (tell, told) = mpsc::channel();
    let reader = {
        let watcher = watcher.clone();
        std::thread::spawn(move || {
            if asked.recv().is_ok() {
                let _ = tell.send(watcher.get());
            }
        })
    };
    if matches!(watcher.get(), Holding::Lost(_)) {
        drop(ask);
        reader.join().unwrap();
        return false;
    }

    // Stand still: nothing of this runtime runs, as in a stopped process.
    std::thread::sleep(PAUSE);

    let seen = match look {
        Look::WatcherFromThread => {
            // The runtime's thread blocks on the answer: still no task can run.
            ask.send(()).unwrap();
            told.recv().unwrap()
        }
        Look::WatcherFromTask => watcher.get(),
        Look::ChangeStream => tokio::time::timeout(Duration::ZERO, changes.next())
            .await
            .expect("the first poll answers")
            .unwrap(),
        Look::BiasedSelect => {
            let work = std::future::ready(());
            tokio::select! {
                biased;
                state = guard.lost() => state,
                () = work => Holding::Held,
            }
        }
    };
    assert_eq!(seen, LOST, "trial {trial}: {look:?} after the pause");
    drop(ask);
    reader.join().unwrap();
    drop(guard);
    client.close().await;
    true
}

#[test]
fn every_look_after_a_pause_past_the_session_reads_lost() {
    let looks = [
        Look::WatcherFromThread,
        Look::WatcherFromTask,
        Look::ChangeStream,
        Look::BiasedSelect,
    ];
    let mut checked = 0;
    for trial in 0..60 {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        if runtime.block_on(one_trial(trial, looks[checked % looks.len()])) {
            checked += 1;
        }
        if checked == 20 {
            return;
        }
    }
    panic!("only {checked} trials held their lock until the pause");
}
