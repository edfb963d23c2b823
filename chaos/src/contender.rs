//! One Rust contender, a process of its own so that it can be paused with `SIGSTOP`.
//!
//! It takes the lock over and over; inside, it creates the marker (an ephemeral node that
//! exists only while someone is inside: a second holder's create fails), reports its fencing
//! token, holds, deletes the marker with a write guarded by the lock, and releases. When the
//! session ends it starts a new one. Asked to (`pause-next` on stdin), it stays inside on its
//! next grant, looking at its guard continuously from a thread of its own (a busy holder),
//! until it is continued after a stop (`SIGCONT`): the pause. It reports that first look
//! after it, then tries a guarded write.
//!
//! The marker must never outlive the hold, or the next holder finds it and reports a
//! violation that did not happen: whenever the contender cannot delete the marker under its
//! lock, it closes its session, which takes the marker and the lock node together.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufReadExt, BufReader};
use zookeeper_recipes::{Error, Holding, LockGuard, Mutex};
use zookeeper_tokio::{Client, CreateOptions, ErrorKind, MultiOp, SessionState};

use crate::options::ContendOptions;

/// How long a grant may take before the contender tries again.
const ACQUIRE_PATIENCE: Duration = Duration::from_secs(30);

fn say(line: String) {
    println!("{line}");
}

pub fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

pub async fn run(o: ContendOptions) {
    count_continues();
    let pause_next = Arc::new(AtomicBool::new(false));
    let commands = pause_next.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        loop {
            match lines.next_line().await {
                Ok(Some(line)) if line == "pause-next" => commands.store(true, Ordering::SeqCst),
                Ok(Some(line)) if line != "quit" => {}
                // `quit`, or the coordinator is gone.
                _ => std::process::exit(0),
            }
        }
    });
    loop {
        let client = match Client::builder(&o.connect)
            .session_timeout(o.session_timeout)
            .connect()
            .await
        {
            Ok(c) => c,
            Err(e) => {
                say(format!("error {} connect: {e}", o.who));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        while !client.state().is_terminal() {
            if let Err(e) = one_grant(&client, &o, &pause_next).await {
                say(format!("error {} {e}", o.who));
                if e.is_session_terminal() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        client.close().await;
    }
}

/// Where an attempt to enter found the critical section.
enum Entry {
    /// Our marker is there: its czxid.
    Inside(i64),
    /// Someone else's marker is there: what it says.
    Occupied(String),
}

async fn one_grant(
    client: &Client,
    o: &ContendOptions,
    pause_next: &AtomicBool,
) -> Result<(), Error> {
    let mutex = Mutex::with_layout(client, &o.lock, o.layout)?.with_data(o.who.as_bytes());
    let Some(guard) = mutex.acquire_timeout(ACQUIRE_PATIENCE).await? else {
        return Ok(());
    };
    let state = guard.state();
    if state != Holding::Held {
        say(format!("error {} granted, but {state}", o.who));
        return Ok(());
    }
    let token = guard.fencing_token().0;
    let marker_czxid = match enter(client, &o.marker, &o.who).await? {
        Entry::Inside(czxid) => czxid,
        Entry::Occupied(other) => {
            say(format!(
                "violation {} found {other} inside while holding token {token:#x}",
                o.who
            ));
            return Ok(());
        }
    };
    say(format!(
        "grant {} {token} {marker_czxid} {}",
        o.who,
        now_ns()
    ));
    if pause_next.swap(false, Ordering::SeqCst) {
        return held_through_a_pause(client, guard, o).await;
    }
    tokio::time::sleep(o.hold).await;
    if let Err(e) = leave(&guard, &o.marker).await {
        return Err(end_session(client, &o.who, e).await);
    }
    say(format!("exit {} {token} {}", o.who, now_ns()));
    guard.release().await
}

/// Closes the session of a holder that could not delete its marker under its lock (the lock
/// lost, or the session suspended past its lease): the marker, an ephemeral node of that
/// session, goes with the lock node in one step, so that no later holder finds it. Returns
/// the error as session-terminal, so that the contender starts a new session.
async fn end_session(client: &Client, who: &str, e: Error) -> Error {
    say(format!(
        "error {who} {e}: closing the session to end the marker"
    ));
    client.close().await;
    Error::Client(ErrorKind::Closed.into())
}

/// Creates the marker. A create whose reply was lost is looked for again: the marker is ours
/// if our session owns it.
async fn enter(client: &Client, marker: &str, who: &str) -> Result<Entry, Error> {
    loop {
        match client
            .create(marker, who.as_bytes(), &CreateOptions::ephemeral())
            .await
        {
            Ok((_, stat)) => return Ok(Entry::Inside(stat.czxid)),
            Err(e) if e == ErrorKind::NodeExists || e.is_retryable() => {
                match client.get_data(marker).await {
                    Ok((_, stat)) if stat.ephemeral_owner == client.session_id().0 => {
                        return Ok(Entry::Inside(stat.czxid))
                    }
                    Ok((data, _)) => {
                        return Ok(Entry::Occupied(String::from_utf8_lossy(&data).into_owned()))
                    }
                    // Gone meanwhile, or the connection is still down: try again.
                    Err(e) if e == ErrorKind::NoNode || e.is_retryable() => {
                        tokio::time::sleep(Duration::from_millis(20)).await
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Deletes the marker, only while the lock is ours.
async fn leave(guard: &LockGuard, marker: &str) -> Result<(), Error> {
    loop {
        match guard
            .guarded_multi(vec![MultiOp::delete(marker, None)])
            .await
        {
            Ok(_) => return Ok(()),
            // Applied before a lost reply: the marker is already gone.
            Err(Error::Client(e))
                if matches!(e.kind(), ErrorKind::MultiFailed { index: 0, .. }) =>
            {
                return Ok(())
            }
            Err(Error::Client(e)) if e.is_retryable() => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => return Err(e),
        }
    }
}

/// What the busy holder saw.
struct FirstLook {
    gap: Duration,
    checks: u64,
    state: Holding,
    /// The session state at that moment: still `Connected` means the client had not yet
    /// processed anything since the pause, not even its own timers.
    session: SessionState,
}

/// Stays inside, looking at the guard from a thread until its clock jumps, then reports.
async fn held_through_a_pause(
    client: &Client,
    guard: LockGuard,
    o: &ContendOptions,
) -> Result<(), Error> {
    let token = guard.fencing_token().0;
    let guard = Arc::new(guard);
    let (looking, watched) = (guard.clone(), client.clone());
    let give_up = o.session_timeout * 10 + Duration::from_secs(60);
    // The thread announces the hold itself, once it is looking: a pause that came before
    // its first look would go unseen.
    let holding = format!("holding {} {token}", o.who);
    let look = tokio::task::spawn_blocking(move || busy_look(&looking, &watched, give_up, holding));
    let Ok(Some(first)) = look.await else {
        say(format!("error {} no pause came while holding", o.who));
        return Err(end_session(client, &o.who, Error::Client(ErrorKind::Closed.into())).await);
    };
    say(format!(
        "resumed {} {} {} {:?} {:?}",
        o.who,
        first.gap.as_millis(),
        first.checks,
        first.state,
        first.session
    ));
    let stale = format!("{}-stale-{}-{token}", o.marker, o.who);
    let verdict = guarded_write(&guard, &stale).await;
    say(format!("guarded-write {} {verdict}", o.who));
    // Normally the session expired during the pause and took the marker with it; if it
    // outlived the pause, the marker goes under the lock, or with the session.
    if let Err(e) = leave(&guard, &o.marker).await {
        return Err(end_session(client, &o.who, e).await);
    }
    drop(guard);
    Ok(())
}

/// How many times the process was continued after a stop. A count kept by a signal handler,
/// not a gap in the clock: a starved process sees gaps too, and a holder that took one for the
/// pause would report its first look (and act) before it was stopped at all.
static CONTINUED: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_continued(_: libc::c_int) {
    // Async-signal-safe: one atomic add.
    CONTINUED.fetch_add(1, Ordering::SeqCst);
}

/// Counts every `SIGCONT` in [`CONTINUED`] (what the signal does to the process is unchanged:
/// it is continued whether or not a handler runs).
fn count_continues() {
    // SAFETY: the handler only does an atomic add, which is async-signal-safe; the struct is
    // zeroed, then every field the call reads is set.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_continued as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGCONT, &action, std::ptr::null_mut());
    }
}

fn busy_look(
    guard: &LockGuard,
    client: &Client,
    give_up: Duration,
    holding: String,
) -> Option<FirstLook> {
    let start = Instant::now();
    let continued = CONTINUED.load(Ordering::SeqCst);
    let mut last = Instant::now();
    let mut longest = Duration::ZERO;
    let mut checks = 0u64;
    let mut announce = Some(holding);
    loop {
        if let Some(line) = announce.take() {
            say(line);
        }
        let now = Instant::now();
        longest = longest.max(now - last);
        let resumed = CONTINUED.load(Ordering::SeqCst) != continued;
        let state = guard.state();
        let session = client.state();
        checks += 1;
        if resumed {
            // The handler runs as the process resumes, so this is the first look after the
            // pause, or the one after it; the longest gap is the pause as this thread lived it.
            return Some(FirstLook {
                gap: longest,
                checks,
                state,
                session,
            });
        }
        if now - start > give_up {
            return None;
        }
        last = now;
        // Busy, as a holder working through its critical section: runnable the moment the
        // process resumes.
        std::thread::yield_now();
    }
}

/// A write guarded by the lock, retried until the server gives a definite answer.
async fn guarded_write(guard: &LockGuard, path: &str) -> String {
    for _ in 0..50 {
        match guard
            .guarded_multi(vec![MultiOp::create(
                path,
                b"",
                &CreateOptions::persistent(),
            )])
            .await
        {
            Ok(_) => return "applied".into(),
            Err(Error::Client(e)) if e.is_retryable() => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => return format!("refused {e}"),
        }
    }
    "unknown: no definite answer after 50 tries (connection loss each time)".into()
}
