//! Child processes that cannot outlive the test process.
//!
//! Three layers make sure no Java process is left behind:
//! 1. `Drop` sends SIGKILL and reaps the child (covers normal ends and panics that unwind);
//! 2. every child asks the kernel for SIGKILL when its parent dies (`PR_SET_PDEATHSIG`),
//!    which covers `abort`, `process::exit` and a SIGKILL of the test binary;
//! 3. every child leads its own process group, so a signal reaches anything it started.
//!
//! The kernel sends the death signal when the *thread* that forked the child ends, not the
//! process. Test harnesses run each test on its own short-lived thread, so all children are
//! forked by one dedicated thread that lives as long as the process.

use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::thread;

use std::os::unix::process::CommandExt;

type SpawnJob = (Command, mpsc::Sender<io::Result<Child>>);

fn spawner() -> &'static mpsc::Sender<SpawnJob> {
    static SPAWNER: OnceLock<mpsc::Sender<SpawnJob>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnJob>();
        thread::Builder::new()
            .name("zk-tests-spawner".into())
            .spawn(move || {
                // The sender lives in a static, so this loop ends only with the process.
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("cannot start the zookeeper-testkit spawner thread");
        tx
    })
}

/// A running child process; killed and reaped on drop.
#[derive(Debug)]
pub(crate) struct ChildProcess {
    child: Child,
    exit: Option<ExitStatus>,
}

impl ChildProcess {
    /// Spawns `command` as a child that dies with this process and leads its own group.
    pub(crate) fn spawn(mut command: Command) -> io::Result<ChildProcess> {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the closure only calls async-signal-safe functions and does not allocate.
        unsafe {
            command.pre_exec(move || {
                if libc::setpgid(0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died between fork and prctl; then nobody would kill us.
                if libc::getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let (tx, rx) = mpsc::channel();
        spawner()
            .send((command, tx))
            .map_err(|_| io::Error::other("zookeeper-testkit spawner thread is gone"))?;
        let child = rx
            .recv()
            .map_err(|_| io::Error::other("zookeeper-testkit spawner thread is gone"))??;
        Ok(ChildProcess { child, exit: None })
    }

    /// The process id (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to the child's whole process group, unless it has been reaped.
    pub(crate) fn signal(&mut self, signal: libc::c_int) -> io::Result<()> {
        if self.exit.is_some() {
            return Ok(());
        }
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: plain syscall; the group is ours and not yet reaped, so the id is not reused.
        if unsafe { libc::kill(-pgid, signal) } != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::ESRCH) {
                return Err(err);
            }
        }
        Ok(())
    }

    /// SIGSTOP, then waits until every thread of the child is stopped: the signal is
    /// delivered asynchronously, and a thread that is still running could answer one more
    /// request after `kill` returned.
    pub(crate) fn pause(&mut self) -> io::Result<()> {
        self.signal(libc::SIGSTOP)?;
        let tasks = format!("/proc/{}/task", self.child.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let all_stopped = std::fs::read_dir(&tasks)?.flatten().all(|task| {
                std::fs::read_to_string(task.path().join("stat"))
                    .ok()
                    .and_then(|stat| {
                        let (_, rest) = stat.rsplit_once(')')?;
                        rest.split_whitespace().next().map(|s| s == "T" || s == "t")
                    })
                    // A thread that vanished meanwhile is not running either.
                    .unwrap_or(true)
            });
            if all_stopped {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "process did not stop after SIGSTOP",
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// The exit status if the child has ended (reaps it), `None` while it runs.
    pub(crate) fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().ok().flatten();
        }
        self.exit
    }

    /// SIGKILL and reap. Idempotent.
    pub(crate) fn kill(&mut self) {
        if self.exit.is_some() {
            return;
        }
        let _ = self.signal(libc::SIGKILL);
        // SIGKILL also ends a stopped (SIGSTOP) process, so this wait returns promptly.
        self.exit = self.child.wait().ok();
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Processes and directories to clean up at normal process exit: statics are never dropped,
/// so the shared server registers here. (Abnormal exits rely on the death signal.)
static AT_EXIT: Mutex<Vec<(u32, PathBuf)>> = Mutex::new(Vec::new());

pub(crate) fn kill_at_exit(pid: u32, dir: PathBuf) {
    static REGISTERED: OnceLock<()> = OnceLock::new();
    REGISTERED.get_or_init(|| {
        // SAFETY: registers a plain extern "C" function with no captured state.
        unsafe {
            libc::atexit(run_at_exit);
        }
    });
    if let Ok(mut list) = AT_EXIT.lock() {
        list.push((pid, dir));
    }
}

extern "C" fn run_at_exit() {
    let Ok(mut list) = AT_EXIT.try_lock() else {
        return;
    };
    for (pid, dir) in list.drain(..) {
        // SAFETY: plain syscalls on our own child's group and pid.
        unsafe {
            libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
            libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
        }
        if !crate::tempdir::keep_dirs() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
