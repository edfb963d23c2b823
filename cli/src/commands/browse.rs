//! Reading: ls, get, stat, sync, getacl, whoami, ephemerals, count, config, tree, find.

use clap::Args;
use serde_json::{json, Value};
use zookeeper_tokio::{Acl, Client, EventType, MemberRole};

use crate::exit::{Failure, Outcome};
use crate::output::{data_json, stat_json, stat_lines, Out};
use crate::walk::{name, Walk};

/// `ls [-R] [-s] PATH`
#[derive(Args, Debug)]
pub struct Ls {
    /// Every node under PATH, one full path per line, depth first in name order.
    #[arg(short = 'R', long)]
    recursive: bool,
    /// Also print PATH's stat.
    #[arg(short = 's', long)]
    stat: bool,
    #[arg(default_value = "/")]
    path: String,
}

pub async fn ls(client: &Client, args: Ls, out: &mut Out) -> Outcome {
    if args.recursive {
        let mut walk = Walk::new(client, &args.path, None);
        let mut nodes = Vec::new();
        while let Some(visit) = walk.next().await? {
            if out.json {
                nodes.push(Value::String(visit.path));
            } else {
                out.line(&visit.path)?;
            }
        }
        if out.json {
            out.json(&json!({ "path": args.path, "nodes": nodes }))?;
        }
        return Ok(0);
    }
    let (mut children, stat) = client.get_children(&args.path).await?;
    children.sort_unstable();
    if out.json {
        let mut doc = json!({ "path": args.path, "children": children });
        if args.stat {
            doc["stat"] = stat_json(&stat);
        }
        out.json(&doc)?;
    } else {
        for child in &children {
            out.line(child)?;
        }
        if args.stat {
            for line in stat_lines(&stat) {
                out.line(line)?;
            }
        }
    }
    Ok(0)
}

/// `get [-s] [-w] PATH`
#[derive(Args, Debug)]
pub struct Get {
    /// Also print the stat, on the lines after the data.
    #[arg(short = 's', long)]
    stat: bool,
    /// Then wait for the node's next change (or deletion) and print it.
    #[arg(short = 'w', long)]
    watch: bool,
    path: String,
}

pub async fn get(client: &Client, args: Get, out: &mut Out) -> Outcome {
    let (data, stat, watcher) = if args.watch {
        let (data, stat, watcher) = client.get_data_and_watch(&args.path).await?;
        (data, stat, Some(watcher))
    } else {
        let (data, stat) = client.get_data(&args.path).await?;
        (data, stat, None)
    };
    if out.json {
        let (text, encoding) = data_json(&data);
        let mut doc = json!({ "path": args.path, "data": text, "encoding": encoding });
        if args.stat {
            doc["stat"] = stat_json(&stat);
        }
        out.json(&doc)?;
    } else {
        out.data(&data)?;
        if args.stat {
            out.end_line(&data)?;
            for line in stat_lines(&stat) {
                out.line(line)?;
            }
        }
    }
    if let Some(watcher) = watcher {
        out.flush()?;
        let event = watcher.await;
        if event.event_type == EventType::None {
            return Err(Failure::new(
                crate::exit::CONNECTION,
                format!(
                    "{} before {} changed",
                    crate::exit::session_end(event.state),
                    args.path
                ),
            ));
        }
        if out.json {
            out.json(&json!({ "type": event.event_type.name(), "path": event.path }))?;
        } else {
            if !args.stat {
                out.end_line(&data)?;
            }
            out.line(format!("{} {}", event.event_type.name(), event.path))?;
        }
    }
    Ok(0)
}

/// `stat PATH`
#[derive(Args, Debug)]
pub struct StatCmd {
    path: String,
}

pub async fn stat(client: &Client, args: StatCmd, out: &mut Out) -> Outcome {
    let Some(stat) = client.exists(&args.path).await? else {
        return Err(Failure::new(
            crate::exit::ZOOKEEPER,
            format!("{}: node does not exist", args.path),
        ));
    };
    if out.json {
        out.json(&json!({ "path": args.path, "stat": stat_json(&stat) }))?;
    } else {
        for line in stat_lines(&stat) {
            out.line(line)?;
        }
    }
    Ok(0)
}

/// `sync PATH`
#[derive(Args, Debug)]
pub struct Sync {
    #[arg(default_value = "/")]
    path: String,
}

pub async fn sync(client: &Client, args: Sync, _out: &mut Out) -> Outcome {
    client.sync(&args.path).await?;
    Ok(0)
}

/// `getacl [-s] PATH`
#[derive(Args, Debug)]
pub struct Getacl {
    /// Also print the stat.
    #[arg(short = 's', long)]
    stat: bool,
    path: String,
}

pub async fn getacl(client: &Client, args: Getacl, out: &mut Out) -> Outcome {
    let (acl, stat) = client.get_acl(&args.path).await?;
    if out.json {
        let entries: Vec<Value> = acl
            .iter()
            .map(|a| json!({ "scheme": a.id.scheme, "id": a.id.id, "perms": perms_text(a.perms) }))
            .collect();
        let mut doc = json!({ "path": args.path, "acl": entries });
        if args.stat {
            doc["stat"] = stat_json(&stat);
        }
        out.json(&doc)?;
    } else {
        for line in acl_lines(&acl) {
            out.line(line)?;
        }
        if args.stat {
            for line in stat_lines(&stat) {
                out.line(line)?;
            }
        }
    }
    Ok(0)
}

/// zkCli's form: `'scheme,'id` then `: perms`.
fn acl_lines(acl: &[Acl]) -> Vec<String> {
    acl.iter()
        .flat_map(|a| {
            [
                format!("'{},'{}", a.id.scheme, a.id.id),
                format!(": {}", perms_text(a.perms)),
            ]
        })
        .collect()
}

/// Permission bits as zkCli letters, in its order: `cdrwa`.
pub fn perms_text(perms: i32) -> String {
    use zookeeper_tokio::perms::{ADMIN, CREATE, DELETE, READ, WRITE};
    [
        (CREATE, 'c'),
        (DELETE, 'd'),
        (READ, 'r'),
        (WRITE, 'w'),
        (ADMIN, 'a'),
    ]
    .iter()
    .filter(|(bit, _)| perms & bit != 0)
    .map(|(_, c)| *c)
    .collect()
}

pub async fn whoami(client: &Client, out: &mut Out) -> Outcome {
    let identities = client.who_am_i().await?;
    print_identities(&identities, out)?;
    Ok(0)
}

pub fn print_identities(
    identities: &[zookeeper_tokio::ClientInfo],
    out: &mut Out,
) -> Result<(), Failure> {
    if out.json {
        let list: Vec<Value> = identities
            .iter()
            .map(|i| json!({ "scheme": i.auth_scheme, "user": i.user }))
            .collect();
        out.json(&json!({ "identities": list }))
    } else {
        for i in identities {
            out.line(format!("{}: {}", i.auth_scheme, i.user))?;
        }
        Ok(())
    }
}

/// `ephemerals [PATH]`
#[derive(Args, Debug)]
pub struct Ephemerals {
    #[arg(default_value = "/")]
    path: String,
}

pub async fn ephemerals(client: &Client, args: Ephemerals, out: &mut Out) -> Outcome {
    let mut walk = Walk::new(client, &args.path, None);
    let mut found = Vec::new();
    while let Some(visit) = walk.next().await? {
        if visit.stat.ephemeral_owner == 0 {
            continue;
        }
        let owner = format!("{:#x}", visit.stat.ephemeral_owner as u64);
        if out.json {
            found.push(json!({ "path": visit.path, "owner": owner }));
        } else {
            out.line(format!("{}\t{owner}", visit.path))?;
        }
    }
    if out.json {
        out.json(&json!({ "path": args.path, "ephemerals": found }))?;
    }
    Ok(0)
}

/// `count PATH`
#[derive(Args, Debug)]
pub struct Count {
    #[arg(default_value = "/")]
    path: String,
}

pub async fn count(client: &Client, args: Count, out: &mut Out) -> Outcome {
    let n = client.get_all_children_number(&args.path).await?;
    if out.json {
        out.json(&json!({ "path": args.path, "count": n }))?;
    } else {
        out.line(n)?;
    }
    Ok(0)
}

/// `config`: the ensemble's members and version, from `/zookeeper/config` (outside any
/// chroot).
pub async fn config(client: &Client, out: &mut Out) -> Outcome {
    let (config, stat) = client.get_config().await?;
    if out.json {
        let members: Vec<Value> = config
            .members
            .iter()
            .map(|m| {
                json!({
                    "id": m.id,
                    "quorum": m.quorum.to_addr_string(),
                    "election": m.election.to_addr_string(),
                    "role": match m.role {
                        MemberRole::Participant => "participant",
                        MemberRole::Observer => "observer",
                    },
                    "client": m.client.as_ref().map(|c| c.to_addr_string()),
                })
            })
            .collect();
        out.json(&json!({
            "members": members,
            "version": format!("{:x}", config.version),
            "stat": stat_json(&stat),
        }))?;
    } else {
        for member in &config.members {
            out.line(member)?;
        }
        out.line(format!("version={:x}", config.version))?;
    }
    Ok(0)
}

/// `tree [--depth N] [PATH]`
#[derive(Args, Debug)]
pub struct Tree {
    /// Levels below PATH to show (all by default).
    #[arg(long, short = 'L')]
    depth: Option<usize>,
    #[arg(default_value = "/")]
    path: String,
}

pub async fn tree(client: &Client, args: Tree, out: &mut Out) -> Outcome {
    let mut walk = Walk::new(client, &args.path, args.depth);
    if out.json {
        // Nodes come depth first: a stack of the open ancestors builds the nesting.
        let mut open: Vec<Value> = Vec::new();
        while let Some(visit) = walk.next().await? {
            while open.len() > visit.depth {
                close_level(&mut open);
            }
            open.push(json!({ "name": name(&visit.path), "path": visit.path, "children": [] }));
        }
        while open.len() > 1 {
            close_level(&mut open);
        }
        out.json(&open.pop().unwrap_or(Value::Null))?;
        return Ok(0);
    }
    // For each open ancestor: whether it was the last of its siblings (no rule below it).
    let mut lasts: Vec<bool> = Vec::new();
    while let Some(visit) = walk.next().await? {
        lasts.truncate(visit.depth);
        if visit.depth == 0 {
            out.line(&visit.path)?;
        } else {
            let mut line = String::new();
            for &last in &lasts[1..] {
                line.push_str(if last { "    " } else { "│   " });
            }
            line.push_str(if visit.last {
                "└── "
            } else {
                "├── "
            });
            line.push_str(name(&visit.path));
            out.line(line)?;
        }
        lasts.push(visit.last);
    }
    Ok(0)
}

fn close_level(open: &mut Vec<Value>) {
    if let Some(done) = open.pop() {
        if let Some(Value::Array(children)) = open.last_mut().map(|p| &mut p["children"]) {
            children.push(done);
        }
    }
}

/// `find PATH -name GLOB`
#[derive(Args, Debug)]
pub struct Find {
    #[arg(default_value = "/")]
    path: String,
    /// Shell glob on the node's name (`*`, `?`, `[abc]`); also spelled `-name`.
    #[arg(long, value_name = "GLOB")]
    name: Option<String>,
}

pub async fn find(client: &Client, args: Find, out: &mut Out) -> Outcome {
    let pattern = match &args.name {
        Some(glob) => Some(
            glob::Pattern::new(glob)
                .map_err(|e| Failure::usage(format!("--name {glob:?}: {e}")))?,
        ),
        None => None,
    };
    let mut walk = Walk::new(client, &args.path, None);
    let mut found = Vec::new();
    while let Some(visit) = walk.next().await? {
        if pattern
            .as_ref()
            .is_some_and(|p| !p.matches(name(&visit.path)))
        {
            continue;
        }
        if out.json {
            found.push(Value::String(visit.path));
        } else {
            out.line(&visit.path)?;
        }
    }
    if out.json {
        out.json(&json!({ "path": args.path, "matches": found }))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perms_in_zkcli_order() {
        assert_eq!(perms_text(zookeeper_tokio::perms::ALL), "cdrwa");
        assert_eq!(perms_text(zookeeper_tokio::perms::READ), "r");
    }
}
