//! The watchdog: a small process between `zk` and the command it runs under a lock, so that
//! the command never outlives the lock, whatever happens to `zk`.
//!
//! `zk` itself stops the command when the lock can no longer be trusted, but a `zk` that is
//! killed cannot, and one that is stopped (`SIGSTOP`, a debugger, a starved or frozen process)
//! does so too late: by the time it runs again the server may have expired its session and
//! granted the lock elsewhere. So `zk` starts the command through a copy of itself, the
//! watchdog, which starts the command in a process group of its own and then only listens on
//! a socket to `zk`:
//!
//! - `zk` renews, a few times per session timeout, the time left before the session's lease
//!   runs out (`deadline MS`). If no renewal comes, the watchdog sends the group the stop
//!   signal `--grace` before that deadline and SIGKILL at it: the command is dead before any
//!   server can expire the session, even while `zk` stands still. It tells `zk` so
//!   (`stopped`, `killed`), which reads it before the command's status when it runs again.
//! - When `zk` dies, by any means, the kernel closes its end of the socket: the watchdog kills
//!   the whole group at once (not only its first process, as `PR_SET_PDEATHSIG` would).
//! - When the command exits, whatever is left of its group is killed (nothing may run on once
//!   the lock is released), and its wait status goes back to `zk` (`status RAW`).
//!
//! The watchdog is `zk` started with [`ENV`] set, which `main` checks before anything else.
//! It ignores the terminal's signals (SIGINT, SIGHUP, SIGQUIT, SIGTERM): `zk` passes them on
//! to the group itself; the command gets them as `zk` was started with them (ignored under
//! `nohup`, by default otherwise). What no process can cover: the
//! whole machine frozen (the monotonic clock stands still with it), or the watchdog stopped
//! together with `zk` (SIGSTOP sent to their process group).

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitCode;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::time::Instant;

use crate::interrupt::{self, TERMINAL_SIGNALS};

/// Set in the watchdog's environment: `FD SIGNAL GRACE_MS LEFT_MS`, the socket to `zk`, the
/// stop signal, the grace, and the time left on the session's lease when `zk` started it (so
/// that the watchdog keeps a deadline from the first instant, renewed or not).
pub const ENV: &str = "ZK_WATCHDOG";

/// Taken off every deadline `zk` sends: what a renewal may spend in the socket and in the
/// watchdog's wake-up before it counts.
pub const MARGIN: Duration = Duration::from_millis(100);

/// Runs as the watchdog when started as one (see [`ENV`]); `None` otherwise.
pub fn run_if_asked() -> Option<ExitCode> {
    let setting = std::env::var_os(ENV)?;
    let command: Vec<OsString> = std::env::args_os().skip(1).collect();
    Some(match parse(&setting.to_string_lossy()) {
        Some((fd, signal, grace, left)) => run(fd, signal, grace, left, command),
        None => {
            crate::output::note(format_args!("Error: internal error: bad {ENV} setting"));
            ExitCode::from(crate::exit::USAGE)
        }
    })
}

fn parse(setting: &str) -> Option<(RawFd, i32, Duration, Duration)> {
    let mut words = setting.split(' ');
    let fd = words.next()?.parse().ok()?;
    let signal = words.next()?.parse().ok()?;
    let grace = Duration::from_millis(words.next()?.parse().ok()?);
    let left = Duration::from_millis(words.next()?.parse().ok()?);
    Some((fd, signal, grace, left))
}

/// Ignores the terminal's signals in this process: `zk` passes them on itself.
fn ignore_interrupts() {
    for signal in TERMINAL_SIGNALS {
        // SAFETY: setting a signal's disposition to SIG_IGN touches no memory of ours.
        unsafe {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
}

fn run(
    fd: RawFd,
    signal: i32,
    grace: Duration,
    left: Duration,
    command: Vec<OsString>,
) -> ExitCode {
    // Those `zk` was started with ignored it left ignored, and so were they here.
    interrupt::remember_ignored();
    ignore_interrupts();
    // SAFETY: `zk` handed this descriptor over for us alone; nothing else in this process
    // owns it.
    let socket = unsafe { UnixStream::from_raw_fd(fd) };
    // The command must not inherit it: its end would keep `zk`'s death from showing.
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        libc::fcntl(socket.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return ExitCode::from(1),
    };
    let deadline = Instant::now() + left.saturating_sub(MARGIN);
    runtime.block_on(watch(socket, signal, grace, deadline, command))
}

async fn watch(
    socket: UnixStream,
    signal: i32,
    grace: Duration,
    deadline: Instant,
    command: Vec<OsString>,
) -> ExitCode {
    let Ok(socket) = socket
        .set_nonblocking(true)
        .and_then(|()| tokio::net::UnixStream::from_std(socket))
    else {
        return ExitCode::from(1);
    };
    let (read, mut write) = socket.into_split();
    let mut child = match spawn(&command) {
        Ok(child) => child,
        Err(e) => {
            let _ = write_line(
                &mut write,
                &format!("spawn-failed {}", e.raw_os_error().unwrap_or(0)),
            )
            .await;
            return ExitCode::from(0);
        }
    };
    let Some(group) = child.id().map(|pid| pid as i32) else {
        return ExitCode::from(1);
    };
    if write_line(&mut write, &format!("pid {group}"))
        .await
        .is_err()
    {
        kill_group(group, libc::SIGKILL);
    }
    let mut lines = BufReader::new(read).lines();
    let mut deadline = Some(deadline);
    let mut signalled = false;
    let mut killed = false;
    loop {
        let stop_at = deadline.map(|d| d.checked_sub(grace).unwrap_or(d));
        tokio::select! {
            biased;
            status = child.wait() => {
                // Nothing of the command may run on once it has exited.
                kill_group(group, libc::SIGKILL);
                let raw = status.map_or(0, |s| s.into_raw());
                let _ = write_line(&mut write, &format!("status {raw}")).await;
                return ExitCode::from(0);
            }
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    if let Some(ms) = line.strip_prefix("deadline ").and_then(|ms| ms.parse::<u64>().ok()) {
                        // A renewal after the stop signal changes nothing: the command is
                        // on its way out.
                        if !signalled {
                            let left = Duration::from_millis(ms).saturating_sub(MARGIN);
                            deadline = Some(Instant::now() + left);
                        }
                    }
                }
                // `zk` is gone: so is the lock, or it will be at the session's end.
                _ => {
                    kill_group(group, libc::SIGKILL);
                    let _ = child.wait().await;
                    return ExitCode::from(0);
                }
            },
            _ = sleep_until(stop_at), if !signalled => {
                kill_group(group, signal);
                signalled = true;
                // Read by `zk` before the command's status, whenever it runs again: the
                // command was stopped for a lease that ran out, not ended by itself.
                let _ = write_line(&mut write, "stopped").await;
            }
            _ = sleep_until(deadline), if signalled && !killed => {
                kill_group(group, libc::SIGKILL);
                killed = true;
                let _ = write_line(&mut write, "killed").await;
            }
        }
    }
}

async fn write_line(write: &mut tokio::net::unix::OwnedWriteHalf, line: &str) -> io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut bytes = Vec::with_capacity(line.len() + 1);
    writeln!(bytes, "{line}")?;
    write.write_all(&bytes).await
}

/// Sleeps until `deadline`, or forever when there is none (a `select!` branch that may be off).
pub async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Starts the command in a process group of its own, with the terminal's signals as `zk` was
/// started with them (by default, or ignored under `nohup`) and `ENV` removed.
fn spawn(command: &[OsString]) -> io::Result<tokio::process::Child> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
    let mut cmd = Command::new(program);
    cmd.args(args).env_remove(ENV).process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe calls (signal, prctl, getppid, kill) on integers.
    let dispositions = TERMINAL_SIGNALS.map(|signal| {
        let disposition = if interrupt::ignored_at_start(signal) {
            libc::SIG_IGN
        } else {
            libc::SIG_DFL
        };
        (signal, disposition)
    });
    unsafe {
        let parent = std::process::id() as i32;
        cmd.pre_exec(move || {
            for (signal, disposition) in dispositions {
                libc::signal(signal, disposition);
            }
            die_with_parent(parent);
            Ok(())
        });
    }
    cmd.spawn()
}

/// Has the kernel kill the command if the watchdog itself is killed (the group's other
/// processes are then killed by `zk`, which sees the watchdog gone).
#[cfg(target_os = "linux")]
fn die_with_parent(parent: i32) {
    // SAFETY: prctl, getppid and kill take integers only.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_parent: i32) {}

/// Sends `signal` to every process of the group; a group already gone is fine. Then SIGCONT,
/// as `kill` in a shell does for a stopped job: a process stopped (by SIGSTOP, or SIGTTIN for
/// reading the terminal from the background) acts on no other signal until it runs again,
/// and would otherwise sit out `--grace` until SIGKILL.
pub fn kill_group(group: i32, signal: i32) {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe {
        libc::kill(-group, signal);
        if signal != libc::SIGKILL && signal != libc::SIGCONT {
            libc::kill(-group, libc::SIGCONT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_descriptor_signal_and_grace() {
        assert_eq!(
            parse("5 15 2500 3000"),
            Some((
                5,
                15,
                Duration::from_millis(2500),
                Duration::from_millis(3000)
            ))
        );
        assert_eq!(parse("5 15 2500"), None);
        assert_eq!(parse("x 15 10"), None);
    }
}
