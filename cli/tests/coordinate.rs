//! lock, rwlock, semaphore and elect running real commands in several `zk` processes at once,
//! with sessions cut through the fault proxy and tools killed.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{bounded, chroot, log_lines, run, scratch, wait_file, zk, Running};
use zookeeper_recipes::{LeaderLatch, Mutex};
use zookeeper_testkit::{chroot_for, shared_server, Proxy};
use zookeeper_tokio::{Client, ErrorKind};

/// Waits until `path` has `n` children (contenders queued on a lock).
async fn wait_children(client: &Client, path: &str, n: usize) {
    bounded(&format!("{n} children under {path}"), async {
        loop {
            match client.get_children_and_watch(path).await {
                Ok((children, _, _)) if children.len() >= n => return,
                Ok((_, _, watcher)) => {
                    watcher.await;
                }
                Err(e) if e == ErrorKind::NoNode => {
                    let (_, watcher) = client.exists_and_watch(path).await.unwrap();
                    let _ = tokio::time::timeout(Duration::from_millis(200), watcher).await;
                }
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await
}

/// Waits until the log has at least `n` lines.
async fn wait_lines(log: &Path, n: usize) -> Vec<String> {
    bounded(&format!("{n} lines in {}", log.display()), async {
        loop {
            let lines = log_lines(log);
            if lines.len() >= n {
                return lines;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

fn sh(script: &str) -> [&str; 3] {
    ["sh", "-c", script]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_commands_never_overlap_and_see_growing_tokens() {
    let (connect, _client) = chroot("cli_lock_exclusion").await;
    let dir = scratch("exclusion");
    let script = format!(
        "mkdir {d}/inside || {{ echo overlap >> {d}/log; exit 99; }}; \
         echo \"$ZK_FENCING_TOKEN $ZK_LOCK_PATH\" >> {d}/log; sleep 0.1; rmdir {d}/inside",
        d = dir.display()
    );
    let contenders: Vec<_> = (0..6)
        .map(|_| {
            let mut cmd = zk(&connect);
            cmd.args(["lock", "/locks/deploy", "--"]).args(sh(&script));
            cmd.spawn().unwrap()
        })
        .collect();
    for c in contenders {
        let out = bounded("a contender", c.wait_with_output()).await.unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let lines = log_lines(&dir.join("log"));
    assert_eq!(lines.len(), 6, "{lines:?}");
    let tokens: Vec<i64> = lines
        .iter()
        .map(|l| {
            let (token, path) = l.split_once(' ').unwrap();
            assert_eq!(path, "/locks/deploy");
            token.parse().unwrap()
        })
        .collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_holder_signals_its_command_before_the_next_one_starts() {
    let chroot = chroot_for("cli_lock_lost");
    let direct = shared_server().connect_string_with_chroot(&chroot);
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let cut = format!("{}{chroot}", proxy.connect_string());
    let dir = scratch("lost");
    let log = dir.join("log");
    let holder_script = format!(
        "trap 'echo A-signalled >> {log}; exit 0' USR1; echo A-start >> {log}; \
         while :; do sleep 0.05; done",
        log = log.display()
    );
    let mut holder = zk(&cut);
    // The command is stopped a quarter of the session timeout after the cut; the server
    // expires the session (and grants the lock) a whole timeout after it: 4.5 s to spare.
    holder
        .args([
            "--session-timeout",
            "6s",
            "lock",
            "--signal",
            "USR1",
            "/l",
            "--",
        ])
        .args(sh(&holder_script));
    let mut holder = Running::start(holder);
    wait_lines(&log, 1).await;
    let mut next = zk(&direct);
    next.args(["lock", "/l", "--"])
        .args(sh(&format!("echo B-start >> {}", log.display())));
    let next = next.spawn().unwrap();
    let client = Client::connect(&direct).await.unwrap();
    wait_children(&client, "/l", 2).await;

    // The holder's session is cut off for good: no connection gets through any more.
    proxy.refuse(true);
    proxy.drop_all();
    let status = holder.wait().await;
    let stderr = holder.stderr().await;
    assert_eq!(status.code(), Some(75), "{stderr}");
    // The command's own stderr comes first (its shell reports the signal); zk's line is last.
    let ours = stderr.lines().last().unwrap_or_default();
    assert!(ours.starts_with("Error: lock /l lost: "), "{stderr}");
    assert!(
        ours.ends_with("; the command was stopped with SIGUSR1"),
        "{stderr}"
    );
    let out = bounded("the next holder", next.wait_with_output())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(log_lines(&log), ["A-start", "A-signalled", "B-start"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_ignores_the_signal_is_killed_and_the_loss_says_so() {
    let chroot = chroot_for("cli_lock_sigkill");
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let cut = format!("{}{chroot}", proxy.connect_string());
    let dir = scratch("sigkill");
    let log = dir.join("log");
    // Ignored signals are inherited: neither the shell nor its sleeps end on SIGTERM.
    let script = format!(
        "trap '' TERM; echo start >> {}; while :; do sleep 0.05; done",
        log.display()
    );
    let mut holder = zk(&cut);
    holder
        .args([
            "--session-timeout",
            "6s",
            "lock",
            "--grace",
            "1s",
            "/l",
            "--",
        ])
        .args(sh(&script));
    let mut holder = Running::start(holder);
    wait_lines(&log, 1).await;
    proxy.refuse(true);
    proxy.drop_all();
    let status = holder.wait().await;
    let stderr = holder.stderr().await;
    assert_eq!(status.code(), Some(75), "{stderr}");
    let ours = stderr.lines().last().unwrap_or_default();
    // One wording: what was lost, why in words, and what became of the command.
    let (why, command) = ours
        .strip_prefix("Error: lock /l lost: ")
        .and_then(|rest| rest.split_once("; "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        why.starts_with("the connection was down for longer than --suspend-limit")
            || why.starts_with("the session's lease"),
        "{stderr}"
    );
    assert!(
        command.starts_with("the command was stopped with SIGTERM, then killed with SIGKILL: "),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_runs_zk_as_its_caller_did() {
    let chroot = chroot_for("cli_lock_env");
    let server = shared_server().connect_string();
    let zk_bin = env!("CARGO_BIN_EXE_zk");
    // Everything by flag, nothing from the environment: the command must still reach the same
    // chroot with the same identity.
    let script = format!(
        "echo \"$ZK_SERVER\"; echo \"$ZK_LOCK_PATH\"; echo \"$ZK_LOCK_NODE\"; \
         {zk_bin} ls \"$ZK_LOCK_PATH\"; {zk_bin} whoami; \
         {zk_bin} --chroot / stat \"$ZK_LOCK_NODE\" >/dev/null && echo found"
    );
    let mut cmd = zk("unused");
    cmd.env_remove("ZK_SERVER").args([
        "--server",
        &server,
        "--chroot",
        &chroot,
        "--auth",
        "alice:s3cret",
        "lock",
        "/l",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let run = common::finish(cmd).await;
    let text = run.ok();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("{server}{chroot}"), "{text}");
    assert_eq!(lines[1], "/l", "{text}");
    let node = lines[2];
    assert!(node.starts_with(&format!("{chroot}/l/")), "{text}");
    assert_eq!(lines[3], node.rsplit('/').next().unwrap(), "{text}");
    assert!(
        lines[4..].iter().any(|l| l.contains("alice")),
        "the command's zk has the caller's identity: {text}"
    );
    assert_eq!(lines.last(), Some(&"found"), "{text}");
    assert!(!run.stderr.contains("s3cret"), "{}", run.stderr);
}

/// The names of `path`'s children once `pred` holds for them.
async fn children_when(
    client: &Client,
    path: &str,
    pred: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    bounded(&format!("the children of {path}"), async {
        loop {
            let (children, _, watcher) = client.get_children_and_watch(path).await.unwrap();
            if pred(&children) {
                return children;
            }
            watcher.await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_rides_out_an_expiry_by_queueing_again_on_a_new_session() {
    let chroot = chroot_for("cli_lock_expiry");
    let holder = Client::connect(&shared_server().connect_string_with_chroot(&chroot))
        .await
        .unwrap();
    let guard = Mutex::new(&holder, "/l").unwrap().acquire().await.unwrap();
    let ours = guard.path().rsplit('/').next().unwrap().to_owned();
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let mut waiter = zk(&format!("{}{chroot}", proxy.connect_string()));
    waiter
        .args(["--session-timeout", "2s", "lock", "/l", "--"])
        .args(sh("echo \"$ZK_LOCK_NODE\""));
    let mut waiter = Running::start(waiter);
    let queued = waiter
        .meanwhile(children_when(&holder, "/l", |c| c.len() == 2))
        .await;
    let first: String = queued.into_iter().find(|c| *c != ours).unwrap();

    // Cut off until the server has expired the waiter's session (its node goes), then back.
    proxy.refuse(true);
    proxy.drop_all();
    waiter
        .meanwhile(children_when(&holder, "/l", |c| !c.contains(&first)))
        .await;
    proxy.refuse(false);
    let again = waiter
        .meanwhile(children_when(&holder, "/l", |c| c.len() == 2))
        .await;
    let second = again.into_iter().find(|c| *c != ours).unwrap();
    assert_ne!(second, first);

    guard.release().await.unwrap();
    assert_eq!(waiter.line().await, format!("{chroot}/l/{second}"));
    assert_eq!(waiter.wait().await.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_rides_out_an_expiry_by_joining_again_on_a_new_session() {
    let chroot = chroot_for("cli_elect_expiry");
    let holder = Client::connect(&shared_server().connect_string_with_chroot(&chroot))
        .await
        .unwrap();
    let leader = LeaderLatch::start(&holder, "/e", "a").await.unwrap();
    bounded("leadership", leader.await_leadership())
        .await
        .unwrap();
    let ours = leader.node().rsplit('/').next().unwrap().to_owned();
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let mut candidate = zk(&format!("{}{chroot}", proxy.connect_string()));
    candidate
        .args(["--session-timeout", "2s", "elect", "/e", "--id", "b", "--"])
        .args(sh("echo \"$ZK_LEADER_ID\""));
    let mut candidate = Running::start(candidate);
    let joined = candidate
        .meanwhile(children_when(&holder, "/e", |c| c.len() == 2))
        .await;
    let first = joined.into_iter().find(|c| *c != ours).unwrap();

    proxy.refuse(true);
    proxy.drop_all();
    candidate
        .meanwhile(children_when(&holder, "/e", |c| !c.contains(&first)))
        .await;
    proxy.refuse(false);
    candidate
        .meanwhile(children_when(&holder, "/e", |c| c.len() == 2))
        .await;

    leader.resign().await.unwrap();
    assert_eq!(candidate.line().await, "b");
    assert_eq!(candidate.wait().await.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_cut_off_past_expiry_names_the_lock_at_its_timeout() {
    let chroot = chroot_for("cli_lock_expiry_timeout");
    let holder = Client::connect(&shared_server().connect_string_with_chroot(&chroot))
        .await
        .unwrap();
    let guard = Mutex::new(&holder, "/l").unwrap().acquire().await.unwrap();
    let proxy = Proxy::start(shared_server().addr()).await.unwrap();
    let mut waiter = zk(&format!("{}{chroot}", proxy.connect_string()));
    // The session expires 2 s into the cut; the wait goes on (trying new sessions) until
    // --timeout, long past it.
    waiter.args([
        "--session-timeout",
        "2s",
        "--timeout",
        "12s",
        "lock",
        "/l",
        "--",
        "true",
    ]);
    let mut waiter = Running::start(waiter);
    children_when(&holder, "/l", |c| c.len() == 2).await;
    proxy.refuse(true);
    proxy.drop_all();
    let status = waiter.wait().await;
    let stderr = waiter.stderr().await;
    assert_eq!(status.code(), Some(124), "{stderr}");
    assert_eq!(stderr, "Error: lock /l not acquired within 12s\n");
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_the_tool_releases_the_lock_at_once() {
    let (connect, client) = chroot("cli_lock_sigterm").await;
    let dir = scratch("sigterm");
    let log = dir.join("log");
    let mut holder = zk(&connect);
    // A session timeout far longer than the wait allowed below: only a release can explain
    // the next holder starting in time.
    holder
        .args(["--session-timeout", "60s", "lock", "/l", "--"])
        .args(sh(&format!("echo A >> {}; exec sleep 600", log.display())));
    let mut holder = Running::start(holder);
    wait_lines(&log, 1).await;
    let mut next = zk(&connect);
    next.args(["lock", "/l", "--"])
        .args(sh(&format!("echo B >> {}", log.display())));
    let next = next.spawn().unwrap();
    wait_children(&client, "/l", 2).await;

    let sent = Instant::now();
    holder.signal(libc::SIGTERM);
    // The command got the signal passed on and died of it: zk reports that status.
    assert_eq!(holder.wait().await.code(), Some(128 + libc::SIGTERM));
    let out = bounded("the next holder", next.wait_with_output())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        sent.elapsed() < Duration::from_secs(30),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(log_lines(&log), ["A", "B"]);
}

/// Whether a process still exists.
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks the pid.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leaders_tool_starts_the_command_on_another() {
    let (connect, _client) = chroot("cli_elect").await;
    let dir = scratch("elect");
    let log = dir.join("log");
    let mut tools = Vec::new();
    for id in ["a", "b"] {
        let mut cmd = zk(&connect);
        cmd.args(["--session-timeout", "5s", "elect", "/e", "--id", id, "--"])
            .args(sh(&format!(
                "echo \"$ZK_LEADER_ID $$ $ZK_FENCING_TOKEN\" >> {}; exec sleep 600",
                log.display()
            )));
        tools.push((id, Running::start(cmd)));
    }
    let first = wait_lines(&log, 1).await[0].clone();
    let fields: Vec<&str> = first.split(' ').collect();
    let (leader, child) = (fields[0], fields[1].parse::<i32>().unwrap());
    let index = tools.iter().position(|(id, _)| *id == leader).unwrap();
    let (_, mut killed) = tools.remove(index);
    killed.signal(libc::SIGKILL);
    killed.wait().await;
    // Its command dies with it rather than run on unlocked.
    bounded("the old leader's command to die", async {
        while alive(child) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // Once the killed tool's session expires, the other leads and runs its command.
    let lines = wait_lines(&log, 2).await;
    let second: Vec<&str> = lines[1].split(' ').collect();
    assert_ne!(second[0], leader);
    assert!(second[2].parse::<i64>().unwrap() > fields[2].parse::<i64>().unwrap());
    let (_, mut survivor) = tools.pop().unwrap();
    survivor.signal(libc::SIGTERM);
    assert_eq!(survivor.wait().await.code(), Some(128 + libc::SIGTERM));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_prints_each_leader() {
    let (connect, _client) = chroot("cli_observe").await;
    let mut observer = zk(&connect);
    observer.args(["elect", "--observe", "/e"]);
    let mut observer = Running::start(observer);
    assert_eq!(observer.line().await, "(no leader)");
    let mut leader = zk(&connect);
    leader.args(["elect", "/e", "--id", "alpha", "--", "sleep", "600"]);
    let mut leader = Running::start(leader);
    assert_eq!(observer.line().await, "alpha");
    leader.signal(libc::SIGTERM);
    leader.wait().await;
    assert_eq!(observer.line().await, "(no leader)");
    observer.signal(libc::SIGINT);
    assert_eq!(observer.wait().await.code(), Some(0));

    let mut json = zk(&connect);
    json.args([
        "--json",
        "--timeout",
        "1s",
        "elect",
        "--observe",
        "--layout",
        "kazoo",
        "/k",
    ]);
    let mut json = Running::start(json);
    let doc: serde_json::Value = serde_json::from_str(&json.line().await).unwrap();
    assert_eq!(doc["leader"], serde_json::Value::Null);
    assert_eq!(json.wait().await.code(), Some(124));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_prints_what_the_leader_proclaims_and_follows_selectors() {
    let (connect, client) = chroot("cli_observe_proclaim").await;
    let mut observer = zk(&connect);
    observer.args(["--json", "elect", "--observe", "/p"]);
    let mut observer = Running::start(observer);
    let doc = |line: String| serde_json::from_str::<serde_json::Value>(&line).unwrap();
    assert_eq!(
        doc(observer.line().await)["leader"],
        serde_json::Value::Null
    );
    let latch = zookeeper_recipes::LeaderLatch::start(&client, "/p", "a")
        .await
        .unwrap();
    bounded("a leads", latch.await_leadership()).await.unwrap();
    let first = doc(observer.line().await);
    assert_eq!(
        (&first["leader"], &first["version"]),
        (&"a".into(), &0.into())
    );
    assert_eq!(first["fencing_token"], latch.fencing_token().0);
    latch.proclaim(b"a, shard 3").await.unwrap();
    let next = doc(observer.line().await);
    assert_eq!(
        (&next["leader"], &next["version"]),
        (&"a, shard 3".into(), &1.into())
    );
    latch.resign().await.unwrap();
    observer.signal(libc::SIGINT);
    assert_eq!(observer.wait().await.code(), Some(0));

    // A selector's election is a mutex: its holder leads.
    let mut observer = zk(&connect);
    observer.args(["elect", "--observe", "--selector", "/s"]);
    let mut observer = Running::start(observer);
    assert_eq!(observer.line().await, "(no leader)");
    let mutex = zookeeper_recipes::Mutex::new(&client, "/s")
        .unwrap()
        .with_data(b"holder");
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(observer.line().await, "holder");
    guard.release().await.unwrap();
    assert_eq!(observer.line().await, "(no leader)");
    observer.signal(libc::SIGINT);
    assert_eq!(observer.wait().await.code(), Some(0));
}

/// Two holders that each wait for the other's marker: both finish only if they held at once.
async fn two_at_once(connect: &str, test: &str, args: &[&str]) {
    let dir = scratch(test);
    let tools: Vec<_> = [("x", "y"), ("y", "x")]
        .iter()
        .map(|(me, other)| {
            let script = format!(
                "touch {d}/{me}; i=0; while [ ! -e {d}/{other} ]; do \
                 i=$((i+1)); [ $i -gt 1200 ] && exit 99; sleep 0.05; done",
                d = dir.display()
            );
            let mut cmd = zk(connect);
            cmd.args(args).arg("--").args(sh(&script));
            cmd.spawn().unwrap()
        })
        .collect();
    for tool in tools {
        let out = bounded("a holder", tool.wait_with_output()).await.unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_and_semaphore_holders_share() {
    let (connect, _client) = chroot("cli_share").await;
    two_at_once(&connect, "readers", &["rwlock", "--read", "/rw"]).await;
    two_at_once(
        &connect,
        "permits",
        &["semaphore", "--permits", "2", "/sem"],
    )
    .await;
    // A writer is alone: with a reader holding, a writer times out.
    let dir = scratch("writer");
    let mut reader = zk(&connect);
    reader
        .args(["rwlock", "--read", "/rw", "--"])
        .args(sh(&format!("touch {}/in; exec sleep 600", dir.display())));
    let mut reader = Running::start(reader);
    wait_file(&dir.join("in")).await;
    let writer = run(
        &connect,
        &[
            "--timeout",
            "500ms",
            "rwlock",
            "--write",
            "/rw",
            "--",
            "true",
        ],
    )
    .await;
    assert_eq!(writer.code, Some(124), "{}", writer.stderr);
    reader.signal(libc::SIGTERM);
    reader.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_usage_and_missing_commands_have_their_codes() {
    let (connect, client) = chroot("cli_lock_codes").await;
    let dir = scratch("codes");
    let mut holder = zk(&connect);
    holder
        .args(["lock", "/l", "--"])
        .args(sh(&format!("touch {}/in; exec sleep 600", dir.display())));
    let mut holder = Running::start(holder);
    wait_file(&dir.join("in")).await;
    let late = run(
        &connect,
        &["--timeout", "500ms", "lock", "/l", "--", "true"],
    )
    .await;
    assert_eq!(late.code, Some(124));
    assert_eq!(late.stderr, "Error: lock /l not acquired within 500ms\n");
    // A waiter interrupted leaves nothing in the queue behind it.
    let mut waiter = zk(&connect);
    waiter.args(["lock", "/l", "--", "true"]);
    let mut waiter = Running::start(waiter);
    wait_children(&client, "/l", 2).await;
    waiter.signal(libc::SIGINT);
    assert_eq!(waiter.wait().await.code(), Some(128 + libc::SIGINT));
    assert_eq!(client.get_children("/l").await.unwrap().0.len(), 1);
    holder.signal(libc::SIGTERM);
    holder.wait().await;

    for args in [
        &["lock", "/l"][..],
        &["lock", "--layout", "bogus", "/l", "--", "true"],
        &["rwlock", "/l", "--", "true"],
        &["semaphore", "--permits", "0", "/s", "--", "true"],
        &["lock", "--signal", "NOPE", "/l", "--", "true"],
        &["elect", "/e"],
        &["lock", "relative", "--", "true"],
    ] {
        let r = run(&connect, args).await;
        assert_eq!(r.code, Some(64), "{args:?}: {}", r.stderr);
    }
    let missing = run(&connect, &["lock", "/l", "--", "/nonexistent/command"]).await;
    assert_eq!(missing.code, Some(127), "{}", missing.stderr);
    let status = run(&connect, &["lock", "/l", "--", "sh", "-c", "exit 7"]).await;
    assert_eq!(status.code, Some(7));

    let kazoo = run(
        &connect,
        &[
            "lock",
            "--layout",
            "kazoo",
            "/k",
            "--",
            "sh",
            "-c",
            "echo $ZK_LOCK_NODE",
        ],
    )
    .await;
    assert!(kazoo.ok().contains("__lock__"), "{}", kazoo.text());
}
