//! `elect PATH -- CMD...` runs the command while leader; `elect --observe PATH` prints each
//! leader.
//!
//! Curator's layout is a `LeaderLatch`; kazoo's `Election` is a kazoo lock whose holder leads,
//! with the participant id as the node's data, and is run as such.

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;
use serde_json::json;
use zookeeper_recipes::{leader_participants, Layout, LeaderLatch, Leadership, Mutex};
use zookeeper_tokio::{Client, ErrorKind, EventType, OneshotWatcher};

use crate::commands::coordinate::{
    acquire, close_renewed, finish, hold, identity, lock_env, LayoutArg,
};
use crate::connection::Connection;
use crate::exit::{self, Failure, Outcome};
use crate::interrupt::Interrupts;
use crate::output::Out;
use crate::supervise::{self, lost_message, Supervision, NOT_STARTED};
use crate::trust::until_untrusted;
use crate::walk::join;

#[derive(Args, Debug)]
pub struct Elect {
    /// The election's path.
    path: String,
    /// Our participant id, seen by the others (default: zk@HOST:PID).
    #[arg(long)]
    id: Option<String>,
    /// Do not take part: print the leader's id now and at every change, until interrupted.
    #[arg(long)]
    observe: bool,
    /// Node layout: Curator's LeaderLatch or kazoo's Election.
    #[arg(long, value_enum, default_value_t)]
    layout: LayoutArg,
    #[command(flatten)]
    supervision: Supervision,
    /// The command to run while leader, after `--`.
    #[arg(
        last = true,
        required_unless_present = "observe",
        conflicts_with = "observe",
        value_name = "COMMAND"
    )]
    command: Vec<OsString>,
}

pub async fn elect(client: &Client, conn: &Connection, args: Elect, out: &mut Out) -> Outcome {
    let mut interrupts = Interrupts::catch()?;
    if args.observe {
        let watching = observe(client, &args.path, args.layout, out, &mut interrupts);
        return match conn.timeout {
            Some(limit) => tokio::time::timeout(limit, watching)
                .await
                .unwrap_or_else(|_| Err(Failure::new(exit::TIMEOUT, "--timeout passed"))),
            None => watching.await,
        };
    }
    let id = args.id.clone().unwrap_or_else(identity);
    if args.layout == LayoutArg::Kazoo {
        let sessions = conn.renewing(client)?;
        let mutex =
            Mutex::with_layout(&sessions, &args.path, Layout::Kazoo)?.with_data(id.as_bytes());
        let guard = acquire(
            "leadership of",
            &args.path,
            conn.timeout,
            &mut interrupts,
            |t| mutex.acquire_timeout(t),
            mutex.acquire(),
        )
        .await?;
        let live = sessions.client();
        let outcome = hold(
            &live,
            conn,
            "leadership of",
            &args.path,
            guard,
            Some(("ZK_LEADER_ID", id)),
            &args.command,
            &args.supervision,
            &mut interrupts,
        )
        .await;
        close_renewed(client, &live).await;
        return outcome;
    }
    let first = client;
    let sessions = conn.renewing(client)?;
    let latch = LeaderLatch::start(&sessions, &args.path, &id).await?;
    let leading = async {
        let won = latch.await_leadership();
        let won = match conn.timeout {
            Some(limit) => match tokio::time::timeout(limit, won).await {
                Ok(won) => won,
                Err(_) => {
                    return Err(Failure::new(
                        exit::TIMEOUT,
                        format!(
                            "leadership of {} not acquired within {}",
                            args.path,
                            humantime::format_duration(limit)
                        ),
                    ))
                }
            },
            None => won.await,
        };
        won.map_err(|_| lost_before(&args.path, latch.state()))
    };
    let led = tokio::select! {
        led = leading => led,
        signal = interrupts.next() => Err(Failure::silent(exit::signalled(signal))),
    };
    if let Err(e) = led {
        let _ = tokio::time::timeout(Duration::from_secs(3), latch.resign()).await;
        return Err(e);
    }
    // The session we lead on: the first, or one opened after it expired while we waited.
    let live = sessions.client();
    let client = &live;
    let mut env = lock_env(
        conn,
        client,
        &args.path,
        &latch.node(),
        latch.fencing_token().0,
    );
    env.push(("ZK_LEADER_ID", id.into()));
    let timing = match args.supervision.timing(client.session_timeout()) {
        Ok(timing) => timing,
        Err(usage) => {
            let _ = tokio::time::timeout(Duration::from_secs(3), latch.resign()).await;
            return Err(usage);
        }
    };
    let untrusted = until_untrusted(latch.changes(), timing.suspend_limit);
    let end = supervise::run(
        client,
        &args.command,
        &env,
        untrusted,
        &timing,
        &mut interrupts,
    )
    .await;
    let _ = tokio::time::timeout(Duration::from_secs(3), latch.resign()).await;
    close_renewed(first, &live).await;
    finish(&format!("leadership of {}", args.path), end?)
}

/// Why the latch ended before we led.
fn lost_before(path: &str, state: Leadership) -> Failure {
    let what = format!("place in the election {path}");
    match state {
        Leadership::Lost(reason) => Failure::new(
            exit::CONNECTION,
            lost_message(&what, &reason.to_string(), NOT_STARTED),
        ),
        other => Failure::new(
            exit::ZOOKEEPER,
            lost_message(&what, &format!("the latch is {other}"), NOT_STARTED),
        ),
    }
}

/// Prints the leader now and at every change, until interrupted or the session ends.
async fn observe(
    client: &Client,
    path: &str,
    layout: LayoutArg,
    out: &mut Out,
    interrupts: &mut Interrupts,
) -> Outcome {
    let mut shown: Option<Option<(String, String)>> = None;
    loop {
        // Watch first, then read: a change in between fires the watch, never goes unseen.
        let watcher = watch_election(client, path).await?;
        let leader = leader(client, path, layout).await?;
        if shown.as_ref() != Some(&leader) {
            if out.json {
                let (id, node) = match &leader {
                    Some((id, node)) => (json!(id), json!(node)),
                    None => (json!(null), json!(null)),
                };
                out.json(&json!({ "path": path, "leader": id, "node": node }))?;
            } else {
                out.line(leader.as_ref().map_or("(no leader)", |(id, _)| id.as_str()))?;
            }
            out.flush()?;
            shown = Some(leader);
        }
        tokio::select! {
            event = watcher => if event.event_type == EventType::None {
                return Err(Failure::new(
                    exit::CONNECTION,
                    format!("the session ended ({:?}): no longer observing", event.state),
                ));
            },
            _ = interrupts.next() => return Ok(0),
        }
    }
}

/// A watch on the election's participants, or on its creation while it does not exist.
async fn watch_election(client: &Client, path: &str) -> Result<OneshotWatcher, Failure> {
    loop {
        match client.get_children_and_watch(path).await {
            Ok((_, _, watcher)) => return Ok(watcher),
            Err(e) if e == ErrorKind::NoNode => {}
            Err(e) => return Err(e.into()),
        }
        match client.exists_and_watch(path).await? {
            (None, watcher) => return Ok(watcher),
            // Created in between: watch its children.
            (Some(_), _) => continue,
        }
    }
}

/// The leader's id and node name, if anyone leads.
async fn leader(
    client: &Client,
    path: &str,
    layout: LayoutArg,
) -> Result<Option<(String, String)>, Failure> {
    match layout {
        LayoutArg::Curator => Ok(leader_participants(client, path)
            .await?
            .into_iter()
            .next()
            .map(|p| (p.id, p.node))),
        LayoutArg::Kazoo => {
            let queue = Mutex::with_layout(client, path, Layout::Kazoo)?
                .participants()
                .await?;
            let Some(first) = queue.into_iter().next() else {
                return Ok(None);
            };
            match client.get_data(&join(path, &first)).await {
                Ok((data, _)) => Ok(Some((String::from_utf8_lossy(&data).into_owned(), first))),
                // Gone since the listing: the watch fires and the next look finds the new one.
                Err(e) if e == ErrorKind::NoNode => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
    }
}
