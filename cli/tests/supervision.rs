//! The command of `zk lock` never outlives the lock, whatever happens to `zk`: killed, its
//! command's whole process group goes with it; stopped past its session timeout, the command
//! is stopped by the session's lease before the next holder starts; a short outage does not
//! stop it; and a --grace that would let SIGKILL come after the session's end is refused.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{bounded, chroot, log_lines, run, scratch, wait_file, zk, Running};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};

fn sh(script: &str) -> [&str; 3] {
    ["sh", "-c", script]
}

/// `zk lock /l` on a 4 s session, holding, its command logging `start` and, on SIGTERM,
/// `signalled` (then exiting 0) to the returned log, in scratch directory `name`.
async fn holder(connect: &str, name: &str) -> (Running, PathBuf) {
    let log = scratch(name).join("log");
    let script = format!(
        "trap 'echo signalled >> {log}; exit 0' TERM; echo start >> {log}; \
         while :; do sleep 0.05; done",
        log = log.display()
    );
    let mut cmd = zk(connect);
    cmd.args(["--session-timeout", "4s", "lock", "/l", "--"])
        .args(sh(&script));
    let tool = Running::start(cmd);
    wait_line(&log, "start").await;
    (tool, log)
}

/// Whether any process of group `group` still exists.
fn group_alive(group: i32) -> bool {
    // SAFETY: signal 0 to a process group only checks it.
    unsafe { libc::kill(-group, 0) == 0 }
}

/// Waits until the log has a line starting with `prefix`.
async fn wait_line(log: &Path, prefix: &str) -> Vec<String> {
    bounded(&format!("{prefix:?} in {}", log.display()), async {
        loop {
            let lines = log_lines(log);
            if lines.iter().any(|l| l.starts_with(prefix)) {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_zk_takes_its_commands_whole_process_group_with_it() {
    let (connect, _client) = chroot("cli_killed_group").await;
    let dir = scratch("killed_group");
    let pid_file = dir.join("pid");
    // The command backgrounds a child of its own and waits for it: the child is not the
    // process zk started, but it is in its group.
    let script = format!(
        "echo $$ > {p}.tmp; mv {p}.tmp {p}; sleep 300 & wait",
        p = pid_file.display()
    );
    let mut cmd = zk(&connect);
    cmd.args(["lock", "/l", "--"]).args(sh(&script));
    let mut tool = Running::start(cmd);
    wait_file(&pid_file).await;
    let group: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(group_alive(group));
    tool.signal(libc::SIGKILL);
    tool.wait().await;
    bounded("every process of the command's group to die", async {
        while group_alive(group) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// One trial: `zk lock` stopped with SIGSTOP while it holds, a second `zk lock` waiting; the
/// first command must have been signalled (and have exited) before the second one starts.
async fn stopped_holder_trial(trial: usize) {
    let chroot = chroot_for(&format!("cli_stopped_{trial}"));
    let connect = shared_server().connect_string_with_chroot(&chroot);
    let dir = scratch(&format!("stopped_{trial}"));
    let log = dir.join("log");
    let first_script = format!(
        "trap 'echo first-signalled >> {log}; exit 0' TERM; echo first-start >> {log}; \
         while :; do sleep 0.05; done",
        log = log.display()
    );
    let mut first = zk(&connect);
    first
        .args(["--session-timeout", "4s", "lock", "/l", "--"])
        .args(sh(&first_script));
    let mut first = Running::start(first);
    wait_line(&log, "first-start").await;
    let mut second = zk(&connect);
    second
        .args(["--session-timeout", "4s", "lock", "/l", "--"])
        .args(sh(&format!("echo second-start >> {}", log.display())));
    let second = second.spawn().unwrap();

    // zk stands still; only the server's expiry of its session lets the second in.
    first.signal(libc::SIGSTOP);
    let out = bounded("the second holder", second.wait_with_output())
        .await
        .unwrap();
    first.signal(libc::SIGCONT);
    assert_eq!(out.status.code(), Some(0), "trial {trial}");
    let lines = log_lines(&log);
    assert_eq!(
        lines,
        ["first-start", "first-signalled", "second-start"],
        "trial {trial}: the first command was not stopped before the second started"
    );
    let status = first.wait().await;
    assert_eq!(
        status.code(),
        Some(75),
        "trial {trial}: zk reports the lock lost"
    );
    // The command exited on SIGTERM: nothing killed it.
    let stderr = first.stderr().await;
    assert!(
        stderr.contains("stopped with SIGTERM") && !stderr.contains("SIGKILL"),
        "trial {trial}: {stderr}"
    );
    // The operator learns that zk froze, not that the ensemble went silent.
    assert!(
        stderr.contains("zk stood still for"),
        "trial {trial}: the loss is not put down to zk standing still: {stderr}"
    );
}

/// `zk` stopped for less than its session timeout, with its server answering all along: if the
/// lease it let run down costs it the lock, the loss is put down to `zk` standing still, not
/// to the server, even when the lease runs out only after `zk` has run on for a while.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_stop_of_zk_that_costs_the_lock_is_put_down_to_zk() {
    for (trial, stop_ms) in [1500u64, 2500].into_iter().enumerate() {
        let chroot = chroot_for(&format!("cli_short_stop_{trial}"));
        let connect = shared_server().connect_string_with_chroot(&chroot);
        let (mut tool, _) = holder(&connect, &format!("short_stop_{trial}")).await;
        tool.signal(libc::SIGSTOP);
        // The length of the stop is the fault itself, not a wait for anything.
        tokio::time::sleep(Duration::from_millis(stop_ms)).await;
        tool.signal(libc::SIGCONT);
        // Past the session timeout from the stop's end, a loss it caused has been reported.
        let exited = tokio::time::timeout(Duration::from_secs(8), tool.wait()).await;
        if exited.is_err() {
            // It kept the lock: nothing to put down to anyone.
            tool.signal(libc::SIGTERM);
            assert_eq!(tool.wait().await.code(), Some(0), "stop of {stop_ms} ms");
            continue;
        }
        let stderr = tool.stderr().await;
        assert!(
            stderr.contains("zk stood still for"),
            "stop of {stop_ms} ms: the loss is not put down to zk standing still: {stderr}"
        );
    }
}

/// The converse: `zk` runs on while its server goes silent (a black hole, nothing refused or
/// closed), so the lease runs out with `zk` watching; the loss is the ensemble's silence,
/// whether `zk` or its watchdog, keeping the same deadline, gets there first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_is_reported_as_silent_not_as_zk_standing_still() {
    let chroot = chroot_for("cli_silent_server");
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let connect = format!("{}{chroot}", proxy.connect_string());
    let (mut tool, log) = holder(&connect, "silent_server").await;
    proxy.black_hole(true);
    let status = tool.wait().await;
    let stderr = tool.stderr().await;
    assert_eq!(
        status.code(),
        Some(75),
        "the lock is reported lost: {stderr}"
    );
    assert_eq!(log_lines(&log), ["start", "signalled"], "{stderr}");
    assert!(
        stderr.contains("no server answered") && !stderr.contains("stood still"),
        "the loss is not put down to the silent server: {stderr}"
    );
}

/// `ZK_TEST_TRIALS` runs more trials than the suite's five.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_zk_has_its_command_stopped_before_the_next_holder_starts() {
    let trials = std::env::var("ZK_TEST_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    for trial in 0..trials {
        stopped_holder_trial(trial).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_outages_do_not_stop_the_command() {
    // With a 4 s session the suspend limit is 1 s, and a client whose server refuses
    // connections tries again at most 200 ms (a twentieth of the timeout) apart: an outage of
    // 0.5 s leaves 300 ms for the handshake that takes the session back.
    // ZK_TEST_OUTAGES_MS (e.g. "300,500,700,700,700") tries others, closer to the limit.
    let outages: Vec<u64> = std::env::var("ZK_TEST_OUTAGES_MS")
        .ok()
        .map(|list| {
            list.split(',')
                .filter_map(|ms| ms.trim().parse().ok())
                .collect()
        })
        .unwrap_or_else(|| vec![300, 500]);
    for (trial, outage_ms) in outages.into_iter().enumerate() {
        let chroot = chroot_for(&format!("cli_outage_{trial}"));
        let proxy = Proxy::start(shared_server().addr()).await.unwrap();
        let connect = format!("{}{chroot}", proxy.connect_string());
        let (mut tool, _) = holder(&connect, &format!("outage_{trial}")).await;
        let accepted = proxy.accepted();
        proxy.refuse(true);
        proxy.drop_all();
        // The outage's length is the fault itself, not a wait for anything.
        tokio::time::sleep(Duration::from_millis(outage_ms)).await;
        proxy.refuse(false);
        bounded("the session taken back", async {
            while proxy.accepted() == accepted {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        // Past the suspend limit from the cut (1 s), with room: a command stopped for the
        // outage would have been signalled by now.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        tool.signal(libc::SIGTERM);
        let status = tool.wait().await;
        let stderr = tool.stderr().await;
        // Interrupted (the command's trap exits 0), not stopped for a lost lock (75).
        assert_eq!(
            status.code(),
            Some(0),
            "outage of {outage_ms} ms: the command was stopped for it: {stderr}"
        );
    }
}

#[tokio::test]
async fn a_grace_that_outlasts_the_session_is_refused() {
    let (connect, _client) = chroot("cli_grace_bound").await;
    // zk --session-timeout 4s lock FLAGS /l -- true
    let lock = |flags: &[&'static str]| {
        let mut args = vec!["--session-timeout", "4s", "lock"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["/l", "--", "true"]);
        args
    };
    for (flags, refusal) in [
        (
            &["--grace", "3s"][..],
            "--grace 3s must be shorter than half the session timeout",
        ),
        (
            &["--grace", "1s", "--suspend-limit", "3s"][..],
            "must stay inside the session timeout",
        ),
    ] {
        let refused = run(&connect, &lock(flags)).await;
        let message = refused.failed(64);
        assert!(message.contains(refusal), "{flags:?}: {message}");
    }
    // Within the bounds it runs.
    run(&connect, &lock(&["--grace", "1s"])).await.ok();
}

/// Started with SIGHUP ignored (as `nohup` starts it), `zk` leaves it ignored, and so does its
/// command: both used to set it back to its default, which ended them both on a hang-up.
#[tokio::test]
async fn a_signal_zk_was_started_with_ignored_stays_ignored_for_its_command() {
    let (connect, _client) = chroot("cli_nohup").await;
    let mut cmd = zk(&connect);
    cmd.args(["lock", "/l", "--"])
        .args(sh("kill -HUP $$; echo alive"));
    // SAFETY: between fork and exec, only signal(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let r = common::finish(cmd).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, b"alive\n");
}

/// A `--grace` the session cannot hold is refused before the wait for the lock, not after a
/// wait that may be long.
#[tokio::test]
async fn a_grace_that_outlasts_the_session_is_refused_before_the_wait() {
    let (connect, _client) = chroot("cli_grace_first").await;
    let (mut first, _log) = holder(&connect, "grace_first").await;
    for command in [&["lock"][..], &["semaphore", "--permits", "1"], &["elect"]] {
        let mut args = vec!["--session-timeout", "4s"];
        args.extend_from_slice(command);
        args.extend_from_slice(&["--grace", "3s", "/l", "--", "true"]);
        let refused = first.meanwhile(run(&connect, &args)).await;
        let message = refused.failed(64);
        assert!(message.contains("--grace 3s"), "{command:?}: {message}");
    }
    first.signal(libc::SIGTERM);
    first.wait().await;
}

/// A `zk` whose file is removed while it waits for the lock (a package upgrade) still starts
/// its command once granted: it starts its watchdog from the program it runs, not its path.
#[tokio::test]
async fn a_zk_whose_file_was_removed_while_waiting_still_runs_its_command() {
    let (connect, client) = chroot("cli_removed_binary").await;
    let copy = scratch("removed_binary").join("zk");
    std::fs::copy(env!("CARGO_BIN_EXE_zk"), &copy).unwrap();
    let (mut first, _log) = holder(&connect, "removed_binary_holder").await;
    let mut cmd = tokio::process::Command::new(&copy);
    cmd.env("ZK_SERVER", &connect)
        .args(["lock", "/l", "--", "echo", "ran"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let waiter = cmd.spawn().unwrap();
    bounded("the second zk to queue", async {
        while client.get_children("/l").await.map_or(0, |(c, _)| c.len()) < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    std::fs::remove_file(&copy).unwrap();
    first.signal(libc::SIGTERM);
    first.wait().await;
    let out = bounded("the second zk", waiter.wait_with_output())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(out.stdout, b"ran\n");
}

/// A command that stopped itself (SIGSTOP, or SIGTTIN reading the terminal from the
/// background) is continued after the signal zk passes on, so that it acts on it: it used to
/// sit out --grace and be killed.
#[tokio::test]
async fn a_stopped_command_is_continued_to_act_on_the_signal() {
    let (connect, _client) = chroot("cli_stopped_command").await;
    let dir = scratch("stopped_command");
    let pid_file = dir.join("pid");
    let script = format!(
        "trap 'exit 42' TERM; echo $$ > {p}.tmp; mv {p}.tmp {p}; kill -STOP $$; sleep 300",
        p = pid_file.display()
    );
    let mut cmd = zk(&connect);
    cmd.args([
        "--session-timeout",
        "20s",
        "lock",
        "--grace",
        "8s",
        "/l",
        "--",
    ])
    .args(sh(&script));
    let mut tool = Running::start(cmd);
    wait_file(&pid_file).await;
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    bounded("the command to stop", async {
        // The state is the field after the command's name in parentheses.
        while !std::fs::read_to_string(&stat)
            .unwrap_or_default()
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('T'))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    tool.signal(libc::SIGTERM);
    let status = tool.wait().await;
    assert_eq!(status.code(), Some(42), "{status:?}");
}
