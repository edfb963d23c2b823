//! Runs the command of `lock`, `rwlock`, `semaphore` and `elect`, and stops it when the lock
//! can no longer be trusted.
//!
//! The command runs in a process group of its own, so that a signal reaches everything it
//! started (a shell script's children too), not just the first process, and it is started
//! through the watchdog (see `watchdog`), which kills the group if `zk` dies and stops it by
//! the session's lease if `zk` stands still. When the lock is lost the group gets `--signal`,
//! and SIGKILL once `--grace` has passed or the session's lease runs out, whichever comes
//! first; whatever is left of the group when the command itself has exited is killed too,
//! since nothing may run on without the lock. SIGINT, SIGTERM and SIGHUP sent to `zk` are
//! passed on to the group, with the same grace.

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::time::Instant;
use zookeeper_recipes::Client;

use crate::connection::duration;
use crate::exit::{self, Failure};
use crate::exported::Var;
use crate::interrupt::{parse_signal, signal_name, Interrupts};
use crate::watchdog::{self, kill_group, sleep_until, MARGIN};

/// How the command is stopped.
#[derive(Args, Debug, Clone)]
pub struct Supervision {
    /// Signal sent to the command when the lock or leadership is lost.
    #[arg(long, default_value = "TERM", value_parser = parse_signal, value_name = "SIGNAL")]
    pub signal: i32,

    /// How long the command may take to exit after that signal before it gets SIGKILL (default:
    /// a quarter of the session timeout; less than half of it, and with --suspend-limit less
    /// than all of it, so that SIGKILL lands before the server can expire the session).
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub grace: Option<Duration>,

    /// Treat the lock as lost once the connection has been down this long (default: a quarter
    /// of the session timeout, well before the server can expire the session and hand the lock
    /// to someone else; 0 stops the command on the first disconnect).
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    pub suspend_limit: Option<Duration>,
}

/// [`Supervision`] for one session: every duration known and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub signal: i32,
    pub grace: Duration,
    pub suspend_limit: Duration,
    pub session_timeout: Duration,
}

impl Supervision {
    /// The timing for a session of timeout `session_timeout`; a usage error that says why when
    /// the command could outlive the session.
    pub fn timing(&self, session_timeout: Duration) -> Result<Timing, Failure> {
        let t = session_timeout;
        let suspend_limit = self.suspend_limit.unwrap_or(t / 4);
        let grace = self.grace.unwrap_or(t / 4);
        let show = |d: Duration| humantime::format_duration(d).to_string();
        if grace >= t / 2 {
            return Err(Failure::usage(format!(
                "--grace {} must be shorter than half the session timeout ({}): the command is \
                 signalled --grace before the session's lease runs out, and a longer grace \
                 would stop it while the session is healthy",
                show(grace),
                show(t)
            )));
        }
        if suspend_limit + grace >= t {
            return Err(Failure::usage(format!(
                "--suspend-limit {} plus --grace {} must stay inside the session timeout ({}), \
                 so that SIGKILL lands before the server can expire the session and grant the \
                 lock to someone else",
                show(suspend_limit),
                show(grace),
                show(t)
            )));
        }
        Ok(Timing {
            signal: self.signal,
            grace,
            suspend_limit,
            session_timeout: t,
        })
    }
}

/// How the command ended.
pub enum End {
    /// It exited by itself.
    Exited(ExitStatus),
    /// It was stopped because the lock could no longer be trusted, for `reason`: with
    /// `signal`, and with SIGKILL too when `killed` says why.
    Stopped {
        reason: String,
        signal: i32,
        killed: Option<String>,
    },
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
/// lock can no longer be trusted), the session's lease comes within `--grace` of its end, or
/// `zk` is asked to stop.
pub async fn run(
    client: &Client,
    command: &[OsString],
    env: &[Var],
    untrusted: impl Future<Output = String>,
    timing: &Timing,
    interrupts: &mut Interrupts,
) -> Result<End, Failure> {
    // From before the command starts: a `zk` that stands still from then on, before its
    // first renewal, stood still all the same.
    let mut pace = Pace::new(timing.session_timeout);
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    let left = lease_left(client);
    let mut watchdog = spawn_watchdog(command, env, timing, left, theirs.as_raw_fd())?;
    drop(theirs);
    ours.set_nonblocking(true)?;
    let (read, mut write) = tokio::net::UnixStream::from_std(ours)?.into_split();
    let mut lines = BufReader::new(read).lines();
    let group = match lines.next_line().await? {
        Some(line) => match line.split_once(' ') {
            Some(("pid", pid)) => pid.parse::<i32>().map_err(|_| watchdog_failed())?,
            Some(("spawn-failed", errno)) => {
                let _ = watchdog.wait().await;
                let errno = errno.parse().unwrap_or(0);
                return Err(cannot_run(&command[0], io::Error::from_raw_os_error(errno)));
            }
            _ => return Err(watchdog_failed()),
        },
        None => return Err(watchdog_failed()),
    };
    tokio::pin!(untrusted);
    // Renewals of the lease's end for the watchdog: several per session timeout, so that a
    // `zk` standing still leaves it at most this much behind.
    let mut renew = tokio::time::interval(timing.session_timeout / 8);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopping: Option<(Instant, Stop)> = None;
    let mut killed = false;
    let raw_status = loop {
        let deadline = stopping.as_ref().map(|(d, _)| *d);
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    if let Some(raw) = line.strip_prefix("status ").and_then(|r| r.parse().ok()) {
                        break raw;
                    }
                    // The watchdog stopped the command as the lease ran out, before `zk`
                    // did (the group has had its signal already): either because `zk` stood
                    // still, or by a hair, the two keeping the same deadline.
                    if line == "stopped" && stopping.is_none() {
                        let stall = pace.stall();
                        let reason = match stall {
                            Some(_) => WATCHDOG_STOPPED,
                            None => LEASE_RUNNING_OUT,
                        };
                        stopping = Some((Instant::now() + timing.grace, Stop::Lost {
                            reason: told(reason.to_owned(), stall),
                            kill_cause: "the session's lease ran out before it exited".to_owned(),
                        }));
                    }
                    if line == "killed" {
                        killed = true;
                    }
                }
                _ => {
                    // The watchdog is gone without a word: the command must not run on.
                    kill_group(group, libc::SIGKILL);
                    let _ = watchdog.wait().await;
                    return Err(watchdog_failed());
                }
            },
            reason = &mut untrusted, if stopping.is_none() => {
                let reason = told(reason, pace.stall());
                stopping = Some(stop(client, group, timing, reason));
            }
            signal = interrupts.next() => {
                kill_group(group, signal);
                if stopping.is_none() {
                    stopping = Some((Instant::now() + timing.grace, Stop::Interrupted));
                }
            }
            _ = renew.tick() => {
                let left = lease_left(client);
                if let Some(left) = left {
                    let line = format!("deadline {}\n", left.as_millis());
                    let _ = write.write_all(line.as_bytes()).await;
                }
                let running_out = left.map_or(true, |left| left <= timing.grace + MARGIN);
                let stall = pace.stall();
                if stopping.is_none() && running_out {
                    let reason = told(LEASE_RUNNING_OUT.to_owned(), stall);
                    stopping = Some(stop(client, group, timing, reason));
                }
                pace.renewed();
            }
            _ = sleep_until(deadline), if !killed => {
                kill_group(group, libc::SIGKILL);
                killed = true;
            }
        }
    };
    let _ = watchdog.wait().await;
    let status = ExitStatus::from_raw(raw_status);
    // A SIGKILL sent is not one that ended the command: back from a stop, `zk` can find the
    // kill due and the command's status in at once, the command having exited on the first
    // signal meanwhile.
    let killed = killed && status.signal() == Some(libc::SIGKILL);
    Ok(match stopping {
        None => End::Exited(status),
        Some((_, Stop::Lost { reason, kill_cause })) => End::Stopped {
            reason,
            signal: timing.signal,
            killed: killed.then_some(kill_cause),
        },
        Some((_, Stop::Interrupted)) => End::Interrupted(status),
    })
}

/// Why the lock was lost when no server answered for so long that the lease is near its end.
const LEASE_RUNNING_OUT: &str =
    "the session's lease is running out: no server answered within the session timeout";

/// Why the lock was lost when the watchdog stopped the command while `zk` stood still.
const WATCHDOG_STOPPED: &str = "its watchdog stopped the command as the session's lease ran out";

/// Whether `zk` keeps the pace of its renewals, due every eighth of the session timeout. One
/// overdue by a whole period more means `zk` stood still (stopped or starved): that, more than
/// whatever it finds on waking, is why a lock goes then, and for a session timeout after, as
/// the lease it let run down may end only later.
struct Pace {
    session_timeout: Duration,
    renewed_at: Instant,
    /// The last time `zk` stood still: when it was seen, and for how long.
    last_stall: Option<(Instant, Duration)>,
}

impl Pace {
    fn new(session_timeout: Duration) -> Pace {
        Pace {
            session_timeout,
            renewed_at: Instant::now(),
            last_stall: None,
        }
    }

    fn renewed(&mut self) {
        self.renewed_at = Instant::now();
    }

    /// How long `zk` stood still, if it stands still now or did within a session timeout:
    /// `None` while it keeps its pace, as it does whenever the servers alone are silent.
    fn stall(&mut self) -> Option<Duration> {
        let now = Instant::now();
        let behind = now - self.renewed_at;
        if behind > self.session_timeout / 4 {
            self.last_stall = Some((now, behind));
        }
        self.last_stall
            .filter(|(seen, _)| now - *seen < self.session_timeout)
            .map(|(_, stood)| stood)
    }
}

/// A loss's reason as reported: `reason`, after how long `zk` stood still if it did, since
/// an operator must look at what froze `zk` rather than at the ensemble.
fn told(reason: String, stall: Option<Duration>) -> String {
    match stall {
        None => reason,
        Some(behind) => format!(
            "zk stood still for {} (stopped or starved), and meanwhile {reason}",
            humantime::format_duration(Duration::from_millis(behind.as_millis() as u64))
        ),
    }
}

/// The time left on the session's lease; `None` once the session ended.
fn lease_left(client: &Client) -> Option<Duration> {
    client
        .lease_deadline()
        .map(|end| end.saturating_duration_since(std::time::Instant::now()))
}

/// Signals the group to stop, the lock lost for `reason`; SIGKILL is due `--grace` later, or
/// when the lease runs out if that is sooner.
fn stop(client: &Client, group: i32, timing: &Timing, reason: String) -> (Instant, Stop) {
    kill_group(group, timing.signal);
    let mut kill_at = Instant::now() + timing.grace;
    let mut kill_cause = format!(
        "it outlived --grace ({})",
        humantime::format_duration(timing.grace)
    );
    if let Some(end) = client.lease_deadline() {
        let end = Instant::from_std(end)
            .checked_sub(MARGIN)
            .unwrap_or(kill_at);
        if end < kill_at {
            kill_at = end;
            kill_cause = format!(
                "the session's lease was running out before --grace ({}) had passed",
                humantime::format_duration(timing.grace)
            );
        }
    }
    (kill_at, Stop::Lost { reason, kill_cause })
}

enum Stop {
    /// The lock was lost for `reason`; SIGKILL, if it comes, for `kill_cause`.
    Lost {
        reason: String,
        kill_cause: String,
    },
    Interrupted,
}

/// The program running now, to start as the watchdog. On Linux the kernel's link to it, which
/// still starts this very program after its file was removed or replaced (a package upgraded
/// during a long wait for a lock); its path would then name nothing, or another version.
fn own_executable() -> std::io::Result<std::path::PathBuf> {
    if cfg!(target_os = "linux") {
        Ok("/proc/self/exe".into())
    } else {
        std::env::current_exe()
    }
}

/// Starts this program again as the watchdog of `command` (see `watchdog`), handing it the
/// socket `fd`.
fn spawn_watchdog(
    command: &[OsString],
    env: &[Var],
    timing: &Timing,
    left: Option<Duration>,
    fd: i32,
) -> Result<tokio::process::Child, Failure> {
    if command.is_empty() {
        return Err(Failure::usage("no command given after --"));
    }
    let mut cmd = Command::new(own_executable()?);
    cmd.args(command).envs(env.iter().map(|(k, v)| (k, v))).env(
        watchdog::ENV,
        format!(
            "{fd} {} {} {}",
            timing.signal,
            timing.grace.as_millis(),
            left.unwrap_or_default().as_millis()
        ),
    );
    // SAFETY: the closure runs in the child between fork and exec and only calls fcntl on an
    // integer, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            // The watchdog's end of the socket survives the exec.
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().map_err(|e| {
        Failure::new(
            exit::CANNOT_EXECUTE,
            format!("cannot start the watchdog: {e}"),
        )
    })
}

fn watchdog_failed() -> Failure {
    Failure::new(
        exit::CANNOT_EXECUTE,
        "the command's watchdog ended unexpectedly; the command was killed",
    )
}

fn cannot_run(program: &OsString, e: io::Error) -> Failure {
    let code = match e.kind() {
        io::ErrorKind::NotFound => exit::NOT_FOUND,
        _ => exit::CANNOT_EXECUTE,
    };
    Failure::new(
        code,
        format!("cannot run {}: {e}", program.to_string_lossy()),
    )
}

/// The one wording of every loss: what was lost and why, then what became of the command
/// (`stopped`, or that it was not started).
pub fn lost_message(what: &str, reason: &str, command: &str) -> String {
    format!("{what} lost: {reason}; {command}")
}

/// What became of a command stopped by `signal`, and by SIGKILL when `killed` says why.
pub fn stopped(signal: i32, killed: Option<&str>) -> String {
    let mut text = format!("the command was stopped with {}", signal_name(signal));
    if let Some(cause) = killed {
        if signal != libc::SIGKILL {
            text.push_str(&format!(", then killed with SIGKILL: {cause}"));
        }
    }
    text
}

/// For a lock lost before its command was started.
pub const NOT_STARTED: &str = "the command was not started";

#[cfg(test)]
mod tests {
    use super::{lost_message, stopped, NOT_STARTED};

    #[test]
    fn every_loss_reads_alike() {
        assert_eq!(
            lost_message(
                "lock /l",
                "the session expired",
                &stopped(libc::SIGTERM, None)
            ),
            "lock /l lost: the session expired; the command was stopped with SIGTERM"
        );
        assert_eq!(
            lost_message(
                "lock /l",
                "the session expired",
                &stopped(libc::SIGTERM, Some("it outlived --grace (1s)"))
            ),
            "lock /l lost: the session expired; the command was stopped with SIGTERM, then \
             killed with SIGKILL: it outlived --grace (1s)"
        );
        assert_eq!(
            stopped(libc::SIGKILL, Some("it outlived --grace (1s)")),
            "the command was stopped with SIGKILL"
        );
        assert_eq!(
            lost_message(
                "lock /l",
                "our node was deleted by someone else",
                NOT_STARTED
            ),
            "lock /l lost: our node was deleted by someone else; the command was not started"
        );
    }
}
