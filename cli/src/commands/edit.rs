//! Writing: set, create, delete, deleteall, setacl, addauth.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::time::Duration;

use tokio::time::Instant;

use clap::Args;
use serde_json::json;
use zookeeper_tokio::{perms, Acl, Client, CreateMode, CreateOptions, Id, SessionState};

use crate::cli::Command;
use crate::commands::browse::print_identities;
use crate::connection::duration;
use crate::exit::{self, Failure, Outcome};
use crate::interrupt::Interrupts;
use crate::output::{stat_json, stat_lines, Out};
use crate::supervise::lost_message;
use crate::walk::Walk;

/// Reads standard input for a command whose data is `-`, before the session is opened: a
/// pipe that fills slowly would otherwise hold the session's only thread, so that no ping went
/// out and the session could expire under the write, which then failed after the server had
/// applied it. Bounded by `--timeout` (`deadline`); the read runs on a thread of its own, so
/// that the bound holds while it blocks.
pub async fn read_input(command: &mut Command, deadline: Option<Instant>) -> Result<(), Failure> {
    let (data, input) = match command {
        Command::Set(args) => (Some(&args.data), &mut args.input),
        Command::Create(args) => (args.data.as_ref(), &mut args.input),
        _ => return Ok(()),
    };
    if !matches!(data, Some(d) if d == "-") {
        return Ok(());
    }
    let read = tokio::task::spawn_blocking(|| {
        let mut data = Vec::new();
        std::io::stdin().read_to_end(&mut data).map(|_| data)
    });
    let read = match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, read)
            .await
            .map_err(|_| Failure::new(exit::TIMEOUT, "timed out reading standard input"))?,
        None => read.await,
    };
    let failed =
        |e: &dyn std::fmt::Display| Failure::new(exit::IO, format!("reading standard input: {e}"));
    let data = read.map_err(|e| failed(&e))?.map_err(|e| failed(&e))?;
    *input = Some(data);
    Ok(())
}

/// Node data from the command line: the argument's bytes as given, or standard input (read by
/// [`read_input`]) for `-`.
fn data_of(arg: Option<OsString>, input: Option<Vec<u8>>) -> Vec<u8> {
    match (input, arg) {
        (Some(input), _) => input,
        (None, None) => Vec::new(),
        (None, Some(arg)) => arg.into_vec(),
    }
}

/// `set [-s] [-v VERSION] PATH DATA`
#[derive(Args, Debug)]
pub struct Set {
    /// Only if the node's data version is this.
    #[arg(short = 'v', long = "data-version", value_name = "VERSION")]
    expected_version: Option<i32>,
    /// Print the new stat.
    #[arg(short = 's', long)]
    stat: bool,
    path: String,
    /// The data; `-` reads standard input.
    data: OsString,
    /// Standard input, when the data is `-`.
    #[arg(skip)]
    input: Option<Vec<u8>>,
}

pub async fn set(client: &Client, args: Set, out: &mut Out) -> Outcome {
    let data = data_of(Some(args.data), args.input);
    let stat = client
        .set_data(&args.path, &data, args.expected_version)
        .await?;
    if args.stat {
        if out.json {
            out.json(&json!({ "path": args.path, "stat": stat_json(&stat) }))?;
        } else {
            for line in stat_lines(&stat) {
                out.line(line)?;
            }
        }
    }
    Ok(0)
}

/// `create [-s] [-e] [-c] [-t TTL] [-p] PATH [DATA]`
#[derive(Args, Debug)]
pub struct Create {
    /// Sequential: a 10-digit counter is appended to the name.
    #[arg(short = 's', long)]
    sequential: bool,
    /// Ephemeral: the node lives as long as this zk runs; zk waits until interrupted, then
    /// deletes it.
    #[arg(short = 'e', long, conflicts_with_all = ["container", "ttl"])]
    ephemeral: bool,
    /// A container: the server removes it once its last child is gone.
    #[arg(short = 'c', long, conflicts_with_all = ["sequential", "ttl"])]
    container: bool,
    /// Time to live: the server removes the node after this long without changes or children
    /// (needs zookeeper.extendedTypesEnabled on the server).
    #[arg(short = 't', long, value_parser = duration, value_name = "DURATION")]
    ttl: Option<Duration>,
    /// Create missing parents first (persistent nodes).
    #[arg(short = 'p', long)]
    parents: bool,
    path: String,
    /// The data; `-` reads standard input.
    data: Option<OsString>,
    /// Standard input, when the data is `-`.
    #[arg(skip)]
    input: Option<Vec<u8>>,
}

pub async fn create(client: &Client, args: Create, out: &mut Out) -> Outcome {
    let mode = match (
        args.ephemeral,
        args.container,
        args.ttl.is_some(),
        args.sequential,
    ) {
        (true, _, _, false) => CreateMode::Ephemeral,
        (true, _, _, true) => CreateMode::EphemeralSequential,
        (_, true, _, _) => CreateMode::Container,
        (_, _, true, false) => CreateMode::PersistentWithTtl,
        (_, _, true, true) => CreateMode::PersistentSequentialWithTtl,
        (_, _, _, true) => CreateMode::PersistentSequential,
        _ => CreateMode::Persistent,
    };
    let mut options = CreateOptions::new(mode);
    if let Some(ttl) = args.ttl {
        options = options.ttl(ttl);
    }
    if args.parents {
        options = options.creating_parents();
    }
    // Caught before the node exists: an ephemeral is then always deleted on the way out.
    let interrupts = if args.ephemeral {
        Some(Interrupts::catch()?)
    } else {
        None
    };
    let data = data_of(args.data, args.input);
    let (path, stat) = client.create(&args.path, &data, &options).await?;
    if out.json {
        out.json(&json!({ "path": path, "stat": stat_json(&stat) }))?;
    } else {
        out.line(&path)?;
    }
    out.flush()?;
    if let Some(mut interrupts) = interrupts {
        let mut states = client.state_watcher();
        tokio::select! {
            _ = interrupts.next() => {}
            state = states.wait_for(|s| s.is_terminal()) => {
                let state = state.map(|s| *s).unwrap_or(SessionState::Closed);
                return Err(Failure::new(
                    exit::CONNECTION,
                    lost_message(
                        &format!("ephemeral node {path}"),
                        exit::session_end(state),
                        "the server deletes it with the session",
                    ),
                ));
            }
        }
    }
    Ok(0)
}

/// `delete [-v VERSION] PATH`
#[derive(Args, Debug)]
pub struct Delete {
    /// Only if the node's data version is this.
    #[arg(short = 'v', long = "data-version", value_name = "VERSION")]
    expected_version: Option<i32>,
    path: String,
}

pub async fn delete(client: &Client, args: Delete, _out: &mut Out) -> Outcome {
    if args.path == "/" {
        // The server's answer would be a bare "bad arguments".
        return Err(Failure::usage("delete /: the root node cannot be deleted"));
    }
    client.delete(&args.path, args.expected_version).await?;
    Ok(0)
}

/// `deleteall PATH`
#[derive(Args, Debug)]
pub struct Deleteall {
    path: String,
}

pub async fn deleteall(client: &Client, args: Deleteall, out: &mut Out) -> Outcome {
    let deleted = client.delete_recursive(&args.path).await?;
    if deleted == 0 {
        return Err(Failure::new(
            exit::ZOOKEEPER,
            format!("{}: node does not exist", args.path),
        ));
    }
    if out.json {
        out.json(&json!({ "path": args.path, "deleted": deleted }))?;
    }
    Ok(0)
}

/// `setacl [-s] [-v VERSION] [-R] PATH ACL`
#[derive(Args, Debug)]
pub struct Setacl {
    /// Only if the node's ACL version is this.
    #[arg(
        short = 'v',
        long = "acl-version",
        value_name = "VERSION",
        conflicts_with = "recursive"
    )]
    expected_version: Option<i32>,
    /// Print the new stat.
    #[arg(short = 's', long)]
    stat: bool,
    /// Also every node under PATH.
    #[arg(short = 'R', long)]
    recursive: bool,
    path: String,
    /// scheme:id:perms[,...]: `world:anyone:cdrwa`, `digest:user:hash:r`, `ip:10.0.0.0/8:rw`,
    /// `auth::cdrwa`.
    acl: String,
}

pub async fn setacl(client: &Client, args: Setacl, out: &mut Out) -> Outcome {
    let acl = parse_acl(&args.acl).map_err(Failure::usage)?;
    let stat = client
        .set_acl(&args.path, acl.clone(), args.expected_version)
        .await?;
    if args.recursive {
        let mut walk = Walk::new(client, &args.path, None);
        // The root was set above.
        walk.next().await?;
        while let Some(visit) = walk.next().await? {
            match client.set_acl(&visit.path, acl.clone(), None).await {
                Ok(_) => {}
                Err(e) if e == zookeeper_tokio::ErrorKind::NoNode => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    if args.stat {
        if out.json {
            out.json(&json!({ "path": args.path, "stat": stat_json(&stat) }))?;
        } else {
            for line in stat_lines(&stat) {
                out.line(line)?;
            }
        }
    }
    Ok(0)
}

/// zkCli's ACL syntax. The id sits between the first and the last colon, since digest ids
/// (`user:hash`) and IPv6 addresses hold colons themselves.
pub fn parse_acl(text: &str) -> Result<Vec<Acl>, String> {
    text.split(',')
        .map(|entry| {
            let (scheme, rest) = entry
                .split_once(':')
                .ok_or_else(|| format!("ACL entry {entry:?} is not scheme:id:perms"))?;
            let (id, letters) = rest
                .rsplit_once(':')
                .ok_or_else(|| format!("ACL entry {entry:?} is not scheme:id:perms"))?;
            if scheme.is_empty() {
                return Err(format!("ACL entry {entry:?} has no scheme"));
            }
            let mut bits = 0;
            for c in letters.chars() {
                bits |= match c {
                    'c' => perms::CREATE,
                    'd' => perms::DELETE,
                    'r' => perms::READ,
                    'w' => perms::WRITE,
                    'a' => perms::ADMIN,
                    other => {
                        return Err(format!(
                            "ACL entry {entry:?}: unknown permission {other:?} (use cdrwa)"
                        ))
                    }
                };
            }
            Ok(Acl {
                perms: bits,
                id: Id {
                    scheme: scheme.to_owned(),
                    id: id.to_owned(),
                },
            })
        })
        .collect()
}

/// `addauth SCHEME AUTH`
#[derive(Args, Debug)]
pub struct Addauth {
    /// e.g. `digest`.
    scheme: String,
    /// e.g. `user:password` for digest.
    auth: String,
}

pub async fn addauth(client: &Client, args: Addauth, out: &mut Out) -> Outcome {
    client.add_auth(&args.scheme, args.auth.as_bytes()).await?;
    let identities = client.who_am_i().await?;
    print_identities(&identities, out)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::parse_acl;
    use zookeeper_tokio::perms;

    #[test]
    fn acl_syntax_of_zkcli() {
        let acl = parse_acl("world:anyone:cdrwa,digest:bob:abc=:r,ip:::1:rw").unwrap();
        assert_eq!(acl[0].perms, perms::ALL);
        assert_eq!(
            (acl[1].id.scheme.as_str(), acl[1].id.id.as_str()),
            ("digest", "bob:abc=")
        );
        assert_eq!(acl[1].perms, perms::READ);
        assert_eq!(acl[2].id.id, "::1");
        assert!(parse_acl("world:anyone:x").is_err());
        assert!(parse_acl("nonsense").is_err());
    }
}
