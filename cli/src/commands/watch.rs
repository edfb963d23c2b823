//! `watch PATH [--recursive] [--data]`: every change, one line each, until interrupted.

use clap::Args;
use serde_json::{json, Value};
use zookeeper_tokio::{
    AddWatchMode, Client, ErrorKind, EventType, SessionState, Stat, WatchedEvent,
};

use crate::exit::{self, Failure, Outcome};
use crate::interrupt::Interrupts;
use crate::output::{data_json, note, now_ms, stat_json, time, Out};

#[derive(Args, Debug)]
pub struct Watch {
    /// Also every node under PATH (created, changed, deleted; no child-list events).
    #[arg(short = 'r', long)]
    recursive: bool,
    /// With each event, the node's data and its zxid (mzxid), read when the event is printed:
    /// a later change may already show.
    #[arg(short = 'd', long)]
    data: bool,
    path: String,
}

/// Events go to standard output, one line each: the time `zk` received the event (UTC), its
/// type and path (`2026-11-26T14:50:01.123Z NodeDataChanged /app/config`; with `--data` then
/// `mzxid=0x1d2 data="v2"`), or one JSON object per line (`time` in ms since the epoch;
/// with `--data` also `data`, `encoding` and `stat`). Connection changes go to standard error.
/// Session expiry ends the stream with the connection-failure code: changes after it are not
/// seen.
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
    note(format_args!("zk: watching {}", args.path));
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
                let received = now_ms();
                let read = if args.data { Some(read(client, &event).await?) } else { None };
                print(out, &event, received, read)?;
                out.flush()?;
            }
            Some(state) = states.next() => match state {
                SessionState::Disconnected => {
                    cut_off = true;
                    note(format_args!("zk: connection lost; reconnecting"));
                }
                SessionState::Connected if cut_off => {
                    cut_off = false;
                    note(format_args!("zk: reconnected; changes missed meanwhile follow"));
                }
                _ => {}
            },
            _ = interrupts.next() => return Ok(0),
        }
    }
}

/// What `--data` found for an event.
enum Read {
    Data(Vec<u8>, Stat),
    /// No such node (deleted, or gone since the event).
    Gone,
    /// The read failed for a reason that passes (the connection is down): said, not fatal.
    Unavailable(String),
}

async fn read(client: &Client, event: &WatchedEvent) -> Result<Read, Failure> {
    if event.event_type == EventType::NodeDeleted {
        return Ok(Read::Gone);
    }
    match client.get_data(&event.path).await {
        Ok((data, stat)) => Ok(Read::Data(data.to_vec(), stat)),
        Err(e) if e == ErrorKind::NoNode => Ok(Read::Gone),
        Err(e) if e.is_retryable() => Ok(Read::Unavailable(e.kind().to_string())),
        Err(e) => Err(e.into()),
    }
}

fn print(out: &mut Out, event: &WatchedEvent, received: i64, read: Option<Read>) -> Outcome {
    let kind = event.event_type.name();
    if out.json {
        let mut doc = json!({ "time": received, "type": kind, "path": event.path });
        match read {
            None => {}
            Some(Read::Data(data, stat)) => {
                let (text, encoding) = data_json(&data);
                doc["data"] = text;
                doc["encoding"] = json!(encoding);
                doc["stat"] = stat_json(&stat);
            }
            Some(Read::Gone) => doc["data"] = Value::Null,
            Some(Read::Unavailable(why)) => {
                doc["data"] = Value::Null;
                doc["error"] = json!(why);
            }
        }
        out.json(&doc)?;
    } else {
        let mut line = format!("{} {kind} {}", time(received), event.path);
        match read {
            None => {}
            Some(Read::Data(data, stat)) => line.push_str(&format!(
                " mzxid={:#x} data={:?}",
                stat.mzxid,
                String::from_utf8_lossy(&data)
            )),
            Some(Read::Gone) => line.push_str(" (no such node)"),
            Some(Read::Unavailable(why)) => line.push_str(&format!(" (data unread: {why})")),
        }
        out.line(line)?;
    }
    Ok(0)
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
