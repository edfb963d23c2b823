//! Locating Java and ZooKeeper, and what a failed start tells the user. Each case runs the
//! `zookeeper-testkit-server` helper with its own environment, so this process's stays untouched.

use std::process::{Command, Output, Stdio};

fn helper(env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zookeeper-testkit-server"));
    command.stdin(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("helper runs")
}

#[test]
fn an_explicit_classpath_is_used() {
    let output = helper(&[(
        "ZK_TESTS_CLASSPATH",
        "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar",
    )]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.starts_with("addr=127.0.0.1:"), "{stdout}");
}

#[test]
fn a_start_failure_reports_the_servers_own_words() {
    let output = helper(&[("ZK_TESTS_CLASSPATH", "/nonexistent/zookeeper.jar")]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("exited during start-up"), "{stderr}");
    // The JVM's complaint is in the log tail of the error.
    assert!(stderr.contains("QuorumPeerMain"), "{stderr}");
}

#[test]
fn a_missing_java_is_reported_with_the_setup_command() {
    let output = helper(&[("ZK_TESTS_JAVA", "/nonexistent/bin/java")]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("scripts/setup"), "{stderr}");
    assert!(stderr.contains("/nonexistent/bin/java"), "{stderr}");
}
