//! No Java process outlives the process that started it, however that process ends.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the kernel and the harness get to take a JVM down.
const GONE_WITHIN: Duration = Duration::from_secs(10);

/// True once `pid` no longer runs (gone, or a zombie waiting for whoever adopted it).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

fn wait_dead(pid: u32) -> Duration {
    let start = Instant::now();
    while !is_dead(pid) {
        assert!(
            start.elapsed() < GONE_WITHIN,
            "java process {pid} still alive after {GONE_WITHIN:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

struct Helper {
    child: std::process::Child,
    java_pid: u32,
    dir: PathBuf,
}

fn start_helper(then: &str) -> Helper {
    start_helper_with(&["--then", then])
}

fn start_helper_with(args: &[&str]) -> Helper {
    start_helper_in(None, args)
}

/// Starts a helper whose server directories (and whose sweep of dead processes' directories)
/// are under `base` instead of the system temp dir.
fn start_helper_in(base: Option<&Path>, args: &[&str]) -> Helper {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zookeeper-testkit-server"));
    if let Some(base) = base {
        command.env(zookeeper_testkit::TMPDIR_ENV, base);
    }
    let mut child = command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("helper starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let field = |name: &str| -> String {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in helper output {line:?}"))
            .to_string()
    };
    // Helpers told to end at once may already be gone; the pid is of a server that served.
    let java_pid: u32 = field("pid").parse().unwrap();
    Helper {
        child,
        java_pid,
        dir: PathBuf::from(field("dir")),
    }
}

#[test]
fn java_dies_when_the_test_process_is_sigkilled() {
    let mut helper = start_helper("wait");
    assert!(
        !is_dead(helper.java_pid),
        "java {} is not running",
        helper.java_pid
    );
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(helper.child.id() as i32, libc::SIGKILL) };
    helper.child.wait().unwrap();
    let took = wait_dead(helper.java_pid);
    eprintln!("java gone {took:?} after SIGKILL of its parent");
}

#[test]
fn java_dies_when_the_test_process_aborts() {
    let mut helper = start_helper("abort");
    helper.child.wait().unwrap();
    wait_dead(helper.java_pid);
}

#[test]
fn java_dies_when_the_test_process_exits_without_destructors() {
    let mut helper = start_helper("exit");
    helper.child.wait().unwrap();
    wait_dead(helper.java_pid);
}

#[test]
fn a_panicking_test_kills_its_server_and_removes_its_directory() {
    let mut helper = start_helper("panic");
    let status = helper.child.wait().unwrap();
    assert!(!status.success());
    wait_dead(helper.java_pid);
    assert!(!helper.dir.exists(), "{} left behind", helper.dir.display());
}

#[test]
fn a_clean_stop_kills_the_server_and_removes_its_directory() {
    let mut helper = start_helper("wait");
    drop(helper.child.stdin.take());
    assert!(helper.child.wait().unwrap().success());
    assert!(is_dead(helper.java_pid));
    assert!(!helper.dir.exists(), "{} left behind", helper.dir.display());
}

#[test]
fn a_panic_inside_this_process_kills_the_server() {
    let mut pid = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let server = zookeeper_testkit::ZkServer::start_blocking().unwrap();
        pid = server.pid();
        panic!("test failure while holding a server");
    }));
    assert!(result.is_err());
    let pid = pid.unwrap();
    assert!(is_dead(pid), "java {pid} survived the panic");
}

#[test]
fn the_shared_server_is_killed_and_removed_when_the_process_exits() {
    let mut helper = start_helper_with(&["--shared", "--then", "exit"]);
    assert!(helper.child.wait().unwrap().success());
    wait_dead(helper.java_pid);
    assert!(!helper.dir.exists(), "{} left behind", helper.dir.display());
}

/// The sweep runs in every process that starts a server, over every directory under its
/// base: with the shared temp dir, any other test starting a helper meanwhile (in this binary
/// or another, on this machine) could sweep the killed helper's directory before this test
/// looks. So this test's helpers get a base of their own, which nothing else sweeps.
#[test]
fn directories_of_killed_processes_are_swept_by_the_next_one() {
    let base = std::env::temp_dir().join(format!("zk-sweep-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let mut helper = start_helper_in(Some(&base), &["--then", "wait"]);
    assert!(helper.dir.starts_with(&base), "{}", helper.dir.display());
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(helper.child.id() as i32, libc::SIGKILL) };
    helper.child.wait().unwrap();
    wait_dead(helper.java_pid);
    assert!(
        helper.dir.exists(),
        "nothing could have removed {}",
        helper.dir.display()
    );
    // A new process starting a server sweeps directories of processes that no longer exist.
    let mut next = start_helper_in(Some(&base), &["--then", "wait"]);
    assert!(
        !helper.dir.exists(),
        "{} survived the sweep",
        helper.dir.display()
    );
    drop(next.child.stdin.take());
    assert!(next.child.wait().unwrap().success());
    assert!(!next.dir.exists(), "{} left behind", next.dir.display());
    let _ = std::fs::remove_dir_all(&base);
}
