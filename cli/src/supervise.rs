//! Runs the command of `lock`, `rwlock`, `semaphore` and `elect`, and stops it when the lock
//! can no longer be trusted.
//!
//! The command runs in a process group of its own, so that a signal reaches everything it
//! started (a shell script's children too), not just the first process. When the lock is lost
//! the group gets `--signal`, and SIGKILL once `--grace` has passed; whatever is left of the
//! group when the command itself has exited is killed too, since nothing may run on without
//! the lock. SIGINT, SIGTERM and SIGHUP sent to `zk` are passed on to the group, with the same
//! grace. On Linux the command is also killed if `zk` itself dies (even by SIGKILL), so that
//! it never outlives the session that holds its lock by more than the session timeout.

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;
use tokio::process::Command;
use tokio::time::Instant;

use crate::connection::duration;
use crate::exit::{self, Failure};
use crate::interrupt::{parse_signal, signal_name, Interrupts};

/// How the command is stopped.
#[derive(Args, Debug, Clone)]
pub struct Supervision {
    /// Signal sent to the command when the lock or leadership is lost.
    #[arg(long, default_value = "TERM", value_parser = parse_signal, value_name = "SIGNAL")]
    pub signal: i32,

    /// How long the command may take to exit after that signal before it gets SIGKILL.
    #[arg(long, default_value = "10s", value_parser = duration, value_name = "DURATION")]
    pub grace: Duration,

    /// Treat the lock as lost once the connection has been down this long (default: a quarter
    /// of the session timeout, well before the server can expire the session and hand the lock
    /// to someone else; 0 stops the command on the first disconnect).
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub suspend_limit: Option<Duration>,
}

/// How the command ended.
pub enum End {
    /// It exited by itself.
    Exited(ExitStatus),
    /// It was stopped because the lock could no longer be trusted, for `reason`.
    Stopped { reason: String, signal: i32 },
    /// `zk` got `signal` and passed it on; the command then ended with `status`.
    Interrupted(ExitStatus),
}

/// The status a shell would report for `status`.
pub fn status_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code.clamp(0, 255) as u8,
        (None, Some(signal)) => exit::signalled(signal),
        (None, None) => 1,
    }
}

/// Runs `command` with `env` added until it exits, `untrusted` resolves (with the reason the
/// lock can no longer be trusted), or `zk` is asked to stop.
pub async fn run(
    command: &[OsString],
    env: &[(&str, String)],
    untrusted: impl Future<Output = String>,
    supervision: &Supervision,
    interrupts: &mut Interrupts,
) -> Result<End, Failure> {
    let mut child = spawn(command, env)?;
    let Some(pid) = child.id() else {
        return Err(Failure::new(
            exit::CANNOT_EXECUTE,
            "the command did not start",
        ));
    };
    let group = pid as i32;
    tokio::pin!(untrusted);
    let mut stopping: Option<(Instant, Stop)> = None;
    let mut killed = false;
    let status = loop {
        let deadline = stopping.as_ref().map(|(d, _)| *d);
        tokio::select! {
            status = child.wait() => break status?,
            reason = &mut untrusted, if stopping.is_none() => {
                signal_group(group, supervision.signal);
                stopping = Some((Instant::now() + supervision.grace, Stop::Lost(reason)));
            }
            signal = interrupts.next() => {
                signal_group(group, signal);
                if stopping.is_none() {
                    stopping = Some((Instant::now() + supervision.grace, Stop::Interrupted));
                }
            }
            _ = sleep_until(deadline), if !killed => {
                signal_group(group, libc::SIGKILL);
                killed = true;
            }
        }
    };
    Ok(match stopping {
        None => End::Exited(status),
        Some((_, Stop::Lost(reason))) => {
            // Nothing of the command may run on without the lock.
            signal_group(group, libc::SIGKILL);
            End::Stopped {
                reason,
                signal: supervision.signal,
            }
        }
        Some((_, Stop::Interrupted)) => End::Interrupted(status),
    })
}

enum Stop {
    Lost(String),
    Interrupted,
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn spawn(command: &[OsString], env: &[(&str, String)]) -> Result<tokio::process::Child, Failure> {
    let Some((program, args)) = command.split_first() else {
        return Err(Failure::usage("no command given after --"));
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .process_group(0);
    die_with_parent(&mut cmd);
    cmd.spawn().map_err(|e| {
        let code = match e.kind() {
            io::ErrorKind::NotFound => exit::NOT_FOUND,
            _ => exit::CANNOT_EXECUTE,
        };
        Failure::new(
            code,
            format!("cannot run {}: {e}", program.to_string_lossy()),
        )
    })
}

/// Sends `signal` to every process of the group; a group already gone is fine.
fn signal_group(group: i32, signal: i32) {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe {
        libc::kill(-group, signal);
    }
}

/// Has the kernel kill the command when `zk` dies, however it dies.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id() as i32;
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe calls (prctl, getppid, kill) on integers.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // zk died before the request above took effect.
            if libc::getppid() != parent {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

/// The message for a command stopped by `signal` because of `reason`.
pub fn stopped_message(what: &str, reason: &str, signal: i32) -> String {
    format!(
        "{what} lost ({reason}): the command was stopped with {}",
        signal_name(signal)
    )
}
