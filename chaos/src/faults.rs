//! The faults of a run: ensemble members killed and restarted (the leader every other time),
//! and Rust holders paused with `SIGSTOP` past their session timeout.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::Instant;
use zookeeper_recipes::Sessions;
use zookeeper_testkit::Ensemble;
use zookeeper_tokio::{Client, ErrorKind};

use crate::journal::Event;
use crate::options::{RunOptions, OVERTIME};
use crate::processes::{signal, Hub, Process};
use crate::report::{Faults, PauseOutcome};

/// Prints a line of progress, stamped with the time since the run started.
pub fn progress(start: Instant, what: &str) {
    eprintln!("[{:7.2} s] {what}", start.elapsed().as_secs_f64());
}

/// Waits until a write through `probe` succeeds; returns how long since `since`. The probe's
/// own session may expire on a loaded machine while the ensemble has no leader: the next
/// session then asks, so that the figure is the ensemble's and not the probe's.
async fn until_writable(probe: &Sessions, since: Instant) -> Duration {
    let give_up = since + Duration::from_secs(120);
    while Instant::now() < give_up {
        let Some(client) = live(probe).await else {
            break;
        };
        let client = client
            .with_request_timeout(Some(Duration::from_secs(1)))
            .expect("a timeout in range");
        if client.set_data("/chaos", b"", None).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    since.elapsed()
}

/// Faults come one at a time, so that each stall has one cause. (Together they compound:
/// a leader elected while a dead holder's session runs out gives that session a fresh
/// timeout, as ZooKeeper does for every session on a new leader.)
pub type OneAtATime = tokio::sync::Mutex<()>;

/// Kills a member every `kill_every`, the leader every other time, and restarts it after
/// `down_for`, until `until`.
pub async fn kill_members(
    ensemble: &Ensemble,
    probe: &Sessions,
    o: &RunOptions,
    start: Instant,
    until: Instant,
    one_at_a_time: &OneAtATime,
) -> Faults {
    let mut faults = Faults::default();
    let mut leader_turn = true;
    loop {
        let next = Instant::now() + o.kill_every;
        let enough = faults.leader_kills >= o.min_leader_kills;
        if next + o.down_for >= until && (enough || next >= until + OVERTIME) {
            return faults;
        }
        tokio::time::sleep_until(next).await;
        let _turn = one_at_a_time.lock().await;
        let Ok(leader) = ensemble.leader().await else {
            continue;
        };
        let victim = if leader_turn {
            leader
        } else {
            (leader + 1) % ensemble.size()
        };
        leader_turn = !leader_turn;
        let killed = Instant::now();
        if ensemble.kill(victim).is_err() {
            continue;
        }
        faults.kills += 1;
        if victim == leader {
            faults.leader_kills += 1;
            let election = until_writable(probe, killed).await;
            faults.elections.push(election);
            progress(
                start,
                &format!("killed member {victim} (the leader): writable again after {election:?}"),
            );
        } else {
            progress(start, &format!("killed member {victim} (a follower)"));
        }
        tokio::time::sleep(o.down_for).await;
        match ensemble.restart(victim).await {
            Ok(()) => progress(start, &format!("member {victim} back")),
            Err(e) => progress(start, &format!("member {victim} did not come back: {e}")),
        }
    }
}

/// Waits (at most `bound`) for the first event `pick` accepts.
async fn wait_for<T>(
    events: &mut broadcast::Receiver<(String, Event)>,
    bound: Duration,
    mut pick: impl FnMut(&str, &Event) -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + bound;
    loop {
        let next = tokio::time::timeout_at(deadline, events.recv()).await;
        match next {
            Ok(Ok((lock, event))) => {
                if let Some(found) = pick(&lock, &event) {
                    return Some(found);
                }
            }
            Ok(Err(broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => return None,
        }
    }
}

/// Pauses one of `contenders` every `pause_every`, in turn, until `until`.
#[allow(clippy::too_many_arguments)]
pub async fn pause_holders(
    contenders: &mut [Process],
    hub: &Hub,
    probe: &Sessions,
    o: &RunOptions,
    start: Instant,
    until: Instant,
    one_at_a_time: &OneAtATime,
    faults_skipped: &mut usize,
) -> Vec<PauseOutcome> {
    let mut outcomes = Vec::new();
    let mut per_lock: HashMap<String, usize> =
        contenders.iter().map(|c| (c.lock.clone(), 0)).collect();
    let mut turn = 0;
    loop {
        // A pause lasts about a session timeout and the takeover after it.
        let end = Instant::now() + o.pause_every + o.session_timeout;
        let enough = per_lock.values().all(|n| *n >= o.min_pauses);
        if end >= until && (enough || end >= until + OVERTIME) {
            return outcomes;
        }
        tokio::time::sleep(o.pause_every).await;
        let _turn = one_at_a_time.lock().await;
        let holder = &mut contenders[turn % contenders.len()];
        turn += 1;
        match pause_one(holder, hub, probe, o, start).await {
            Some(outcome) => {
                *per_lock.entry(holder.lock.clone()).or_default() += 1;
                outcomes.push(outcome)
            }
            None => *faults_skipped += 1,
        }
    }
}

/// Stops `holder` while it holds its lock, until another contender was granted it, then lets
/// it run and collects what it saw.
async fn pause_one(
    holder: &mut Process,
    hub: &Hub,
    probe: &Sessions,
    o: &RunOptions,
    start: Instant,
) -> Option<PauseOutcome> {
    let mut events = hub.events.subscribe();
    let who = holder.name.clone();
    let lock = holder.lock.clone();
    holder.send("pause-next").await;
    let token = wait_for(&mut events, Duration::from_secs(30), |_, e| match e {
        Event::Holding { who: w, token } if *w == who => Some(*token),
        _ => None,
    })
    .await?;
    let pid = holder.pid()?;
    signal(pid, libc::SIGSTOP).ok()?;
    let stopped = Instant::now();
    progress(
        start,
        &format!("{who} stopped while holding token {token:#x}"),
    );
    let bound = o.session_timeout * 3 + Duration::from_secs(30);
    let taken_over = wait_for(&mut events, bound, |l, e| match e {
        Event::Grant {
            who: w, token: t, ..
        } if l == lock && *w != who && *t > token => Some(w.clone()),
        _ => None,
    })
    .await;
    // Stay stopped at least a session timeout in any case.
    tokio::time::sleep_until(stopped + o.session_timeout).await;
    let _ = signal(pid, libc::SIGCONT);
    progress(
        start,
        &format!(
            "{who} resumed after {:?}; meanwhile the lock went to {}",
            stopped.elapsed(),
            taken_over.as_deref().unwrap_or("nobody")
        ),
    );
    let look = wait_for(&mut events, Duration::from_secs(30), |_, e| match e {
        Event::Resumed {
            who: w,
            gap_ms,
            state,
            session,
            ..
        } if *w == who => Some((*gap_ms, state.clone(), session.clone())),
        _ => None,
    })
    .await;
    let write = wait_for(&mut events, Duration::from_secs(60), |_, e| match e {
        Event::GuardedWrite {
            who: w, refused, ..
        } if *w == who => Some(*refused),
        _ => None,
    })
    .await;
    let stale = format!("{}-stale-{who}-{token}", holder.marker);
    let (paused_ms, first_look, session_at_first_look) =
        look.unwrap_or((0, "no report".into(), "?".into()));
    Some(PauseOutcome {
        who,
        token,
        paused_ms,
        first_look,
        session_at_first_look,
        guarded_write_refused: write,
        taken_over: taken_over.is_some(),
        stale_write_absent: absent(probe, &stale).await,
    })
}

/// The probe's session, a new one if it ended; `None` if none opens within a minute.
async fn live(probe: &Sessions) -> Option<Client> {
    match tokio::time::timeout(Duration::from_secs(60), probe.live()).await {
        Ok(Ok(client)) => Some(client),
        _ => None,
    }
}

/// Whether `path` does not exist, asked until the ensemble answers (on a new session of the
/// probe's if its own ended); `None` if it never did.
async fn absent(probe: &Sessions, path: &str) -> Option<bool> {
    for _ in 0..600 {
        let client = live(probe).await?;
        match client.exists(path).await {
            Ok(stat) => return Some(stat.is_none()),
            Err(e)
                if e.is_retryable() || e.is_session_terminal() || e == ErrorKind::SessionMoved =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use zookeeper_testkit::{chroot_for, shared_server};
    use zookeeper_tokio::CreateOptions;

    /// The probe's session ends (as it does by the client's own clock when the ensemble has no
    /// leader for longer than the session timeout): the checker asks on a new session, rather
    /// than reading "present" and "not writable" from a session that can no longer ask.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_probe_whose_session_ended_asks_on_a_new_one() {
        let connect = shared_server().connect_string_with_chroot(&chroot_for("chaos_probe"));
        let probe = Sessions::connect(Client::builder(&connect)).await.unwrap();
        let first = probe.client();
        first
            .create("/chaos", b"", &CreateOptions::persistent())
            .await
            .unwrap();
        let twin = Client::builder(&connect)
            .session(first.session_id(), &first.session_password())
            .connect()
            .await
            .unwrap();
        twin.close().await;
        let mut states = first.state_changes();
        let ended = states.wait_for(|s| s.is_terminal());
        tokio::time::timeout(Duration::from_secs(60), ended)
            .await
            .expect("the first session ends")
            .unwrap();

        assert_eq!(absent(&probe, "/chaos/stale-marker").await, Some(true));
        let since = Instant::now();
        let took = until_writable(&probe, since).await;
        assert!(took < Duration::from_secs(120), "writable on a new session");
        assert_ne!(probe.client().session_id(), first.session_id());
    }
}
