//! `watch PATH [--recursive]`: every change, one line each, until interrupted.

use clap::Args;
use serde_json::json;
use zookeeper_tokio::{AddWatchMode, Client, EventType, SessionState};

use crate::exit::{self, Failure, Outcome};
use crate::interrupt::Interrupts;
use crate::output::Out;

#[derive(Args, Debug)]
pub struct Watch {
    /// Also every node under PATH (created, changed, deleted; no child-list events).
    #[arg(short = 'r', long)]
    recursive: bool,
    path: String,
}

/// Events go to standard output (`NodeDataChanged /app/config`, or one JSON object per line);
/// connection changes go to standard error. After a reconnect the client reports what changed
/// while it was cut off, once per node and kind of change. Session expiry ends the stream
/// with the connection-failure code: changes after it are not seen.
pub async fn watch(client: &Client, args: Watch, out: &mut Out) -> Outcome {
    let mut interrupts = Interrupts::catch()?;
    let mode = if args.recursive {
        AddWatchMode::PersistentRecursive
    } else {
        AddWatchMode::Persistent
    };
    let mut states = client.state_changes();
    let mut watcher = client.add_watch(&args.path, mode).await?;
    // From here on no change goes unreported; say so for whoever waits to make changes.
    eprintln!("zk: watching {}", args.path);
    let mut cut_off = false;
    loop {
        tokio::select! {
            event = watcher.next() => {
                let Some(event) = event else {
                    return Err(ended(client.state()));
                };
                if event.event_type == EventType::None {
                    return Err(ended(event.state));
                }
                if out.json {
                    out.json(&json!({ "type": event.event_type.name(), "path": event.path }))?;
                } else {
                    out.line(format!("{} {}", event.event_type.name(), event.path))?;
                }
                out.flush()?;
            }
            Some(state) = states.next() => match state {
                SessionState::Disconnected => {
                    cut_off = true;
                    eprintln!("zk: connection lost; reconnecting");
                }
                SessionState::Connected if cut_off => {
                    cut_off = false;
                    eprintln!("zk: reconnected; changes missed meanwhile follow");
                }
                _ => {}
            },
            _ = interrupts.next() => return Ok(0),
        }
    }
}

fn ended(state: SessionState) -> Failure {
    Failure::new(
        exit::CONNECTION,
        format!(
            "{}: the watch has ended and later changes were not seen",
            exit::session_end(state)
        ),
    )
}
