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
use crate::connection::Connection;
use crate::exit::{self, Failure, Outcome};
use crate::output::Out;

/// How long closing the session may take before `zk` exits anyway (the server then expires it).
const CLOSE_BOUND: Duration = Duration::from_secs(3);

/// Opens the session, within `--timeout` if given.
async fn connect(connection: &Connection) -> Result<Client, Failure> {
    match connection.timeout {
        Some(limit) => tokio::time::timeout(limit, connection.connect())
            .await
            .unwrap_or_else(|_| {
                Err(Failure::new(
                    exit::TIMEOUT,
                    format!(
                        "no server accepted a session within --timeout ({})",
                        humantime::format_duration(limit)
                    ),
                ))
            }),
        None => connection.connect().await,
    }
}

fn timed_out(limit: Duration) -> Failure {
    Failure::new(
        exit::TIMEOUT,
        format!("timed out after {}", humantime::format_duration(limit)),
    )
}

pub async fn run(mut cli: Cli) -> Outcome {
    let started = tokio::time::Instant::now();
    let mut out = Out::new(cli.json);
    let connection = cli.connection;
    edit::read_input(
        &mut cli.command,
        connection.timeout.map(|limit| started + limit),
    )
    .await?;
    let client = match &cli.command {
        Command::Completions { shell } => {
            let mut command = Cli::command();
            let mut buffer = Vec::new();
            clap_complete::generate(*shell, &mut command, "zk", &mut buffer);
            out.data(&buffer)?;
            out.flush()?;
            return Ok(0);
        }
        _ => connect(&connection).await?,
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
                // The whole command: the time taken to connect counts.
                Some(limit) => match tokio::time::timeout_at(started + limit, run).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(timed_out(limit)),
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
