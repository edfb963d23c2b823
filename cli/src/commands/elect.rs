//! `elect PATH -- CMD...` runs the command while leader; `elect --observe PATH` prints each
//! leader (a `LeaderObserver`), and each value it proclaims.
//!
//! Curator's layout is a `LeaderLatch`; kazoo's `Election` is a kazoo lock whose holder leads,
//! with the participant id as the node's data, and is run as such.

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;
use serde_json::json;
use zookeeper_recipes::{ElectionLayout, Holding, Layout, LeaderLatch, LeaderObserver, Mutex};
use zookeeper_tokio::Client;

use crate::commands::coordinate::{
    acquire, close_renewed, finish, hold, identity, lock_env, refuse_bad_timing, LayoutArg,
};
use crate::connection::Connection;
use crate::exit::{self, Failure, Outcome};
use crate::interrupt::Interrupts;
use crate::output::Out;
use crate::supervise::{self, lost_message, Supervision, NOT_STARTED};
use crate::trust::until_untrusted;

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
    /// With --observe: the election is a LeaderSelector's (ours or Curator's: a mutex whose
    /// holder leads), not a LeaderLatch's.
    #[arg(long, requires = "observe", conflicts_with = "layout")]
    selector: bool,
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
        let layout = match (args.layout, args.selector) {
            (LayoutArg::Kazoo, _) => ElectionLayout::Kazoo,
            (LayoutArg::Curator, true) => ElectionLayout::Selector,
            (LayoutArg::Curator, false) => ElectionLayout::Latch,
        };
        let watching = observe(client, &args.path, layout, out, &mut interrupts);
        return match conn.timeout {
            Some(limit) => tokio::time::timeout(limit, watching)
                .await
                .unwrap_or_else(|_| Err(Failure::new(exit::TIMEOUT, "--timeout passed"))),
            None => watching.await,
        };
    }
    refuse_bad_timing(client, &args.supervision)?;
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
fn lost_before(path: &str, state: Holding) -> Failure {
    let what = format!("place in the election {path}");
    match state {
        Holding::Lost(reason) => Failure::new(
            exit::CONNECTION,
            lost_message(&what, &reason.to_string(), NOT_STARTED),
        ),
        other => Failure::new(
            exit::ZOOKEEPER,
            lost_message(&what, &format!("the latch is {other}"), NOT_STARTED),
        ),
    }
}

/// Prints the leader now and at every change (a new leader, or new data it proclaimed), until
/// interrupted or the session ends.
async fn observe(
    client: &Client,
    path: &str,
    layout: ElectionLayout,
    out: &mut Out,
    interrupts: &mut Interrupts,
) -> Outcome {
    let observer = LeaderObserver::start(client, path, layout).await?;
    let mut leaders = observer.changes();
    loop {
        let leader = tokio::select! {
            leader = leaders.next() => leader,
            _ = interrupts.next() => return Ok(0),
        };
        let Some(leader) = leader else {
            let why = observer
                .error()
                .map_or_else(|| "closed".to_owned(), |e| e.to_string());
            return Err(Failure::new(
                exit::CONNECTION,
                format!("no longer observing: {why}"),
            ));
        };
        if out.json {
            let doc = match &leader {
                Some(l) => json!({
                    "path": path,
                    "leader": l.id(),
                    "node": l.node,
                    "fencing_token": l.fencing_token.0,
                    "version": l.version,
                }),
                None => json!({ "path": path, "leader": null, "node": null }),
            };
            out.json(&doc)?;
        } else {
            match &leader {
                Some(l) => out.line(l.id())?,
                None => out.line("(no leader)")?,
            }
        }
        out.flush()?;
    }
}
