//! One file per group of commands; `run` connects, dispatches and closes the session.

pub mod browse;
pub mod coordinate;
pub mod edit;
pub mod elect;
pub mod watch;

use std::time::Duration;

use clap::CommandFactory;
use zookeeper_tokio::Client;

use crate::cli::{Cli, Command};
use crate::exit::{self, Failure, Outcome};
use crate::output::Out;

/// How long closing the session may take before `zk` exits anyway (the server then expires it).
const CLOSE_BOUND: Duration = Duration::from_secs(3);

pub async fn run(cli: Cli) -> Outcome {
    let mut out = Out::new(cli.json);
    let connection = cli.connection;
    let client = match &cli.command {
        Command::Completions { shell } => {
            let mut command = Cli::command();
            let mut buffer = Vec::new();
            clap_complete::generate(*shell, &mut command, "zk", &mut buffer);
            out.data(&buffer)?;
            out.flush()?;
            return Ok(0);
        }
        _ => connection.connect().await?,
    };
    let timeout = connection.timeout;
    let outcome = match cli.command {
        // These bound only their acquisition by --timeout.
        Command::Lock(args) => coordinate::lock(&client, &connection, args, &mut out).await,
        Command::Rwlock(args) => coordinate::rwlock(&client, &connection, args, &mut out).await,
        Command::Semaphore(args) => {
            coordinate::semaphore(&client, &connection, args, &mut out).await
        }
        Command::Elect(args) => elect::elect(&client, &connection, args, &mut out).await,
        command => {
            let run = plain(&client, command, &mut out);
            match timeout {
                Some(limit) => match tokio::time::timeout(limit, run).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(Failure::new(
                        exit::TIMEOUT,
                        format!("timed out after {}", humantime::format_duration(limit)),
                    )),
                },
                None => run.await,
            }
        }
    };
    let flushed = out.flush();
    // Closing tells the server to delete our ephemerals now rather than after the timeout.
    let _ = tokio::time::timeout(CLOSE_BOUND, client.close()).await;
    let code = outcome?;
    flushed?;
    Ok(code)
}

async fn plain(client: &Client, command: Command, out: &mut Out) -> Outcome {
    match command {
        Command::Ls(args) => browse::ls(client, args, out).await,
        Command::Get(args) => browse::get(client, args, out).await,
        Command::Stat(args) => browse::stat(client, args, out).await,
        Command::Sync(args) => browse::sync(client, args, out).await,
        Command::Getacl(args) => browse::getacl(client, args, out).await,
        Command::Whoami => browse::whoami(client, out).await,
        Command::Ephemerals(args) => browse::ephemerals(client, args, out).await,
        Command::Count(args) => browse::count(client, args, out).await,
        Command::Config => browse::config(client, out).await,
        Command::Tree(args) => browse::tree(client, args, out).await,
        Command::Find(args) => browse::find(client, args, out).await,
        Command::Set(args) => edit::set(client, args, out).await,
        Command::Create(args) => edit::create(client, args, out).await,
        Command::Delete(args) => edit::delete(client, args, out).await,
        Command::Deleteall(args) => edit::deleteall(client, args, out).await,
        Command::Setacl(args) => edit::setacl(client, args, out).await,
        Command::Addauth(args) => edit::addauth(client, args, out).await,
        Command::Watch(args) => watch::watch(client, args, out).await,
        Command::Lock(_)
        | Command::Rwlock(_)
        | Command::Semaphore(_)
        | Command::Elect(_)
        | Command::Completions { .. } => Err(Failure::usage("not a plain command")),
    }
}
